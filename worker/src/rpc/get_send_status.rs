//! `get_send_status`: the saved outcome of one of this connection's sends. Works in any
//! session state (it is how outcomes are read while WhatsApp is disconnected), but needs
//! current send permission for the request's chat.

use wazap_shared::ErrorCode;
use wazap_shared::wire::send::{GetSendStatusRequest, SendResult};

use crate::error::{Context as _, Error};
use crate::send::journal;
use crate::state::AppState;
use crate::viewer::Viewer;

/// Look the request up in this connection's journal.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: GetSendStatusRequest,
) -> Result<SendResult, Error> {
    wazap_shared::checks::request_id(&req.request_id)?;
    let db = state.db.get().await.context("get_send_status")?;
    let entry = journal::get(&db, &viewer.connection_id, &req.request_id)
        .await
        .context("get_send_status")?
        .ok_or_else(|| Error::new(ErrorCode::NotFound, "no send with this request_id"))?;
    if !viewer.may_send_to(&entry.chat_id) {
        return Err(Error::new(
            ErrorCode::SendNotPermitted,
            "this connection may no longer send to this request's chat",
        ));
    }
    Ok(entry.result(true))
}
