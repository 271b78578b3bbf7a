//! The checks every send passes before the journal is touched (DESIGN §5): opaque ids only,
//! a chat inside the read scope and the archive policy and covered by the send permission, and
//! a session that can send — in that order, also for a repeat of an identical request.

use deadpool_postgres::GenericClient;
use wazap_shared::ids::{is_chat_id, is_request_id};
use wazap_shared::wire::SyncState;
use wazap_shared::{ErrorCode, RpcError};

use crate::archive::ids::IdKey;
use crate::archive::read::{self, ChatRef};
use crate::connector::Connector;
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

/// `chat_id` must be an opaque chat id (a phone number, JID, URL or path is refused) and
/// `request_id` 1–128 of `[A-Za-z0-9._:-]`.
pub fn check_ids(chat_id: &str, request_id: &str) -> Result<(), RpcError> {
    if !is_chat_id(chat_id) {
        return Err(RpcError::invalid(
            "chat_id",
            "expected an opaque chat_id from list_chats (never a phone number or JID)",
        ));
    }
    check_request_id(request_id)
}

/// `request_id` 1–128 of `[A-Za-z0-9._:-]`.
pub fn check_request_id(request_id: &str) -> Result<(), RpcError> {
    if !is_request_id(request_id) {
        return Err(RpcError::invalid(
            "request_id",
            "expected 1–128 characters of A-Z a-z 0-9 . _ : -",
        ));
    }
    Ok(())
}

/// The chat behind `chat_id` when the viewer may read it (else `chat_not_found`, the same as
/// for a chat that does not exist) and send to it (else `send_not_permitted`).
pub async fn target(
    db: &impl GenericClient,
    viewer: &Viewer,
    chat_id: &str,
) -> anyhow::Result<Result<Target, RpcError>> {
    let Some(found) = read::find_chat(db, None, &ChatRef::Opaque(chat_id.to_owned())).await? else {
        return Ok(Err(not_found()));
    };
    if !viewer.can_read_chat(&found.chat_id) {
        return Ok(Err(not_found()));
    }
    if !viewer.may_send_to(&found.chat_id) {
        return Ok(Err(RpcError::new(
            ErrorCode::SendNotPermitted,
            "this connection may not send to this chat; the owner can allow it",
        )));
    }
    let stmt = db
        .prepare_cached(
            "select c.jid, m.id_key from chats c cross join archive_meta m
             where c.account_id = $1 and c.chat_id = $2",
        )
        .await?;
    let Some(row) = db
        .query_opt(&stmt, &[&found.account_id, &found.chat_id])
        .await?
    else {
        return Ok(Err(not_found()));
    };
    Ok(Ok(Target {
        recipient: row.try_get(0)?,
        key: IdKey::new(row.try_get::<_, &[u8]>(1)?),
        account_id: found.account_id,
        chat_id: found.chat_id,
    }))
}

/// The session of `account` must be able to send; else `session_cannot_send` naming the state.
pub fn session(connector: &dyn Connector, account: &str) -> Result<(), RpcError> {
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
pub fn cannot_send(state: SyncState) -> RpcError {
    RpcError::new(
        ErrorCode::SessionCannotSend,
        format!(
            "the WhatsApp session is {}; nothing was sent (get_send_status still answers)",
            state.as_str()
        ),
    )
}

fn not_found() -> RpcError {
    RpcError::new(ErrorCode::ChatNotFound, "no such chat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_opaque_chat_ids_and_valid_keys() {
        assert!(check_ids("c_0123abcd", "r-1").is_ok());
        for bad in [
            "+972501234567",
            "972501234567",
            "972501234567@s.whatsapp.net",
            "https://wa.me/972501234567",
            "../c_1",
        ] {
            let e = check_ids(bad, "r-1").unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert!(e.message.starts_with("chat_id:"));
            assert!(!e.message.contains(bad));
        }
        assert!(
            check_ids("c_1", "a b")
                .unwrap_err()
                .message
                .starts_with("request_id:")
        );
        assert!(can_send(SyncState::Live) && !can_send(SyncState::Paused));
        assert!(cannot_send(SyncState::Offline).message.contains("offline"));
    }
}
