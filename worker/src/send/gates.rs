//! The checks every send passes before the journal is touched (DESIGN §5): opaque ids only,
//! a chat inside the read scope and the archive policy and covered by the send permission, and
//! a session that can send — in that order, also for a repeat of an identical request.

use std::sync::{Arc, LazyLock};

use deadpool_postgres::GenericClient;
use wazap_shared::ErrorCode;
use wazap_shared::wire::SyncState;

use crate::archive::ids::IdKey;
use crate::connector::Connector;
use crate::error::Error;
use crate::memo::Memo;
use crate::viewer::Viewer;

/// Where a send goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The account that owns the chat (the chat decides; callers never pick accounts).
    pub account_id: String,
    /// The chat's current id (a merged id resolves to the chat that absorbed it).
    pub chat_id: String,
    /// The chat's JID, as the connector addresses it.
    pub recipient: String,
    /// The archive's id key, to name the message before it exists.
    pub(crate) key: IdKey,
}

/// A chat as [`lookup`] found it, before the viewer's rights are checked ([`allow`]).
#[derive(Debug, Clone)]
pub struct LookedUpChat {
    account_id: String,
    chat_id: String,
    recipient: String,
    key: IdKey,
}

impl LookedUpChat {
    /// The chat's account and current id, to record a refused attempt on it.
    pub fn chat(&self) -> (&str, &str) {
        (&self.account_id, &self.chat_id)
    }
}

/// The chat behind chat id `chat` of account `account` (the one the id names,
/// [`account_of`]; each a `$n` parameter): its account, current chat id and JID — the chat
/// itself, or the chat a merged id now lives in.
fn chat_behind(chat: &str, account: &str) -> String {
    format!(
        "select account_id, chat_id, jid from chats
          where account_id = {account} and chat_id = {chat}
         union all
         select c.account_id, c.chat_id, c.jid from chat_merges g
           join chats c on c.account_id = g.account_id and c.chat_id = g.into_chat_id
          where g.account_id = {account} and g.from_chat_id = {chat}
         limit 1"
    )
}

/// The account chat id `chat_id` names (the default one for any id without a suffix; a
/// malformed id finds nothing anyway).
pub(crate) fn account_of(chat_id: &str) -> &str {
    wazap_shared::ids::account_of(chat_id).unwrap_or(wazap_shared::ids::DEFAULT_ACCOUNT)
}

/// [`lookup`]'s query.
static LOOKUP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select f.account_id, f.chat_id, f.jid, m.id_key from ({}) f cross join archive_meta m",
        chat_behind("$1", "$2")
    )
});

/// A query whose `ok` column fails (division by zero) unless the chat behind `chat` (of
/// account `account`) is still account `want_account`'s chat `want_chat` at JID
/// `want_jid` (each a `$n` parameter), as [`lookup`] found it before: for a statement that
/// must not commit a send to a chat that has moved (merged, readdressed) since.
pub(crate) fn chat_guard(
    chat: &str,
    account: &str,
    want_account: &str,
    want_chat: &str,
    want_jid: &str,
) -> String {
    format!(
        "select 1 / count(*) as ok from ({}) f
          where f.account_id = {want_account} and f.chat_id = {want_chat}
            and f.jid = {want_jid}",
        chat_behind(chat, account)
    )
}

/// The send target each chat id last led to ([`LookedUpChat`]), so a send can reserve in the same
/// round trip as [`chat_guard`] checks it again (`send::fast`).
#[derive(Debug, Clone)]
pub struct Targets(Memo<LookedUpChat>);

impl Default for Targets {
    fn default() -> Self {
        Self(Memo::new(MAX_TARGETS))
    }
}

/// Most chat ids remembered (only bounds memory).
const MAX_TARGETS: usize = 4_096;

impl Targets {
    /// What `chat_id` last led to.
    pub fn get(&self, chat_id: &str) -> Option<Arc<LookedUpChat>> {
        self.0.get(chat_id)
    }

    /// Remember what `chat_id` leads to.
    pub fn put(&self, chat_id: &str, found: &LookedUpChat) {
        self.0.put(chat_id, found);
    }

    /// Forget `chat_id` (it leads elsewhere now).
    pub fn forget(&self, chat_id: &str) {
        self.0.forget(chat_id);
    }
}

/// The chat behind `chat_id`, in one query: the chat (of the account the id names, or the chat
/// a merged id now lives in), its JID and the id key. It needs no viewer, so the send path runs it on the
/// same connection and at the same time as the grant check; [`allow`] then decides.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "send.target"))]
pub async fn lookup(
    db: &impl GenericClient,
    chat_id: &str,
) -> anyhow::Result<Option<LookedUpChat>> {
    let stmt = db.prepare_cached(&LOOKUP).await?;
    let Some(row) = db
        .query_opt(&stmt, &[&chat_id, &account_of(chat_id)])
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(LookedUpChat {
        account_id: row.try_get(0)?,
        chat_id: row.try_get(1)?,
        recipient: row.try_get(2)?,
        key: IdKey::new(row.try_get::<_, &[u8]>(3)?),
    }))
}

/// Where the send goes when the viewer may read the chat [`lookup`] found (else
/// `chat_not_found`, the same as for a chat that does not exist) and send to it (else
/// `send_not_permitted`).
pub fn allow(viewer: &Viewer, found: Option<LookedUpChat>) -> Result<Target, Error> {
    let Some(found) = found.filter(|f| viewer.can_read_chat(&f.chat_id)) else {
        return Err(not_found());
    };
    if !viewer.may_send_to(&found.chat_id) {
        return Err(Error::new(
            ErrorCode::SendNotPermitted,
            "this connection may not send to this chat; the owner can allow it",
        ));
    }
    Ok(Target {
        account_id: found.account_id,
        chat_id: found.chat_id,
        recipient: found.recipient,
        key: found.key,
    })
}

/// The session of `account` must be able to send; else `session_cannot_send` naming the state.
pub fn session(connector: &dyn Connector, account: &str) -> Result<(), Error> {
    let state = connector.state(account);
    if connector.can_send() && can_send(state) {
        Ok(())
    } else {
        Err(cannot_send(state))
    }
}

/// True for the states in which WhatsApp is connected.
pub fn can_send(state: SyncState) -> bool {
    matches!(state, SyncState::Live | SyncState::CatchingUp)
}

/// `session_cannot_send` naming `state`.
pub fn cannot_send(state: SyncState) -> Error {
    Error::new(
        ErrorCode::SessionCannotSend,
        format!(
            "the WhatsApp session is {}; nothing was sent (get_send_status still answers)",
            state.as_str()
        ),
    )
}

fn not_found() -> Error {
    Error::new(ErrorCode::ChatNotFound, "no such chat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_that_cannot_send_is_named() {
        assert!(can_send(SyncState::Live) && !can_send(SyncState::Paused));
        assert!(
            cannot_send(SyncState::Offline)
                .message()
                .contains("offline")
        );
    }

    #[test]
    fn the_lookup_counts_only_for_a_chat_the_viewer_reads_and_may_send_to() {
        use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendMode, SendPermission};
        let found = |chat: &str| {
            Some(LookedUpChat {
                account_id: "default".into(),
                chat_id: chat.into(),
                recipient: "972505550001@s.whatsapp.net".into(),
                key: IdKey::new(&[7; 32]),
            })
        };
        let viewer = Viewer {
            connection_id: "conn_1".into(),
            scope: ReadScope {
                chats: ChatSelection::Selected {
                    chats: vec!["c_1".into(), "c_2".into(), "c_x".into()],
                },
                since: None,
                until: None,
                ..ReadScope::all()
            },
            send: SendPermission {
                mode: SendMode::Selected,
                chats: vec!["c_1".into(), "c_x".into(), "c_3".into()],
                revision: 1,
            },
            excluded_chats: vec!["c_x".into()],
        };
        let code = |f| allow(&viewer, f).map(|t| t.chat_id).map_err(|e| e.code());
        assert_eq!(code(found("c_1")), Ok("c_1".to_owned()));
        // Readable but not permitted; permitted but outside the scope or excluded; missing.
        assert_eq!(code(found("c_2")), Err(ErrorCode::SendNotPermitted));
        assert_eq!(code(found("c_3")), Err(ErrorCode::ChatNotFound));
        assert_eq!(code(found("c_x")), Err(ErrorCode::ChatNotFound));
        assert_eq!(code(None), Err(ErrorCode::ChatNotFound));
    }
}
