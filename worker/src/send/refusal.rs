//! The chat gate with a memory: a send refused about a chat that exists is recorded for the
//! owner's sends page ([`crate::owner::sends`]), so the owner sees what an agent tried — which
//! connection, which chat, which tool, why — and nothing of what was to be sent.

use super::gates::{self, LookedUpChat, Target};
use crate::error::Error;
use crate::owner::sends::{Refusal, record_refusal};
use crate::viewer::Viewer;

/// [`gates::allow`]; its refusal of a chat [`gates::lookup`] found is recorded first, on `db`
/// (the connection the send already holds). `tool` is `None` for `send_check`, which does not
/// know it.
pub(super) async fn allow_or_record(
    db: &deadpool_postgres::Client,
    viewer: &Viewer,
    tool: Option<&str>,
    found: Option<LookedUpChat>,
) -> Result<Target, Error> {
    let Some(chat) = found.clone() else {
        return gates::allow(viewer, None);
    };
    let answer = gates::allow(viewer, found);
    if let Err(e) = &answer {
        let (account_id, chat_id) = chat.chat();
        let refusal = Refusal {
            connection_id: &viewer.connection_id,
            account_id,
            chat_id,
            tool,
            code: e.code(),
        };
        record_refusal(db, refusal).await;
    }
    answer
}
