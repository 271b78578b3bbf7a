//! `list_chats`: the chats with messages the caller may read, most recently active first.

use wazap_shared::ids::is_chat_id;
use wazap_shared::wire::read::{
    ChatSummary, DEFAULT_LIMIT, ListChatsRequest, ListChatsResponse, MAX_LIMIT,
};

use super::args;
use crate::archive::read::{self, chats::ChatQuery};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "list_chats";

/// List chats: `query` (name substring), `kind`, `limit` (1–200, 50), `before` (the last
/// chat id of the previous page).
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: ListChatsRequest,
) -> Result<ListChatsResponse, Error> {
    let limit = args::limit(req.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    if let Some(b) = &req.before
        && !is_chat_id(b)
    {
        return Err(Error::invalid(
            "before",
            "expected a chat_id from list_chats",
        ));
    }
    if req.query.as_ref().is_some_and(|q| q.chars().count() > 256) {
        return Err(Error::invalid("query", "at most 256 characters"));
    }
    let db = read::connection(&state.db, CONTEXT).await?;
    let account = args::account(
        req.account_id.as_deref(),
        &[("before", args::of(req.before.as_deref()))],
    )?;
    let inside = args::viewer_in(viewer, &account)?;
    let viewer: &Viewer = &inside;
    let q = ChatQuery {
        query: req.query,
        kind: req.kind,
        limit,
        before: req.before,
    };
    let list = async {
        read::chats::list(&db, viewer, &account, &q)
            .await
            .context(CONTEXT)?
            .ok_or_else(|| Error::invalid("before", "not a chat of this listing"))
    };
    let rows = read::in_account(&db, &account, CONTEXT, list).await?;
    // Only the worker serving the account sends for it; an account served nowhere (removed,
    // or between two workers) cannot send now.
    let can_send = (state.served.get(&account)).is_some_and(|a| a.connector.can_send());
    Ok(ListChatsResponse {
        account_id: account,
        chats: rows
            .into_iter()
            .map(|c| ChatSummary {
                can_send: can_send && viewer.may_send_to(&c.chat_id),
                chat_id: c.chat_id,
                name: c.name,
                kind: c.kind,
                last_message_at: Some(c.last_message_at),
                unread_count: c.unread_count,
            })
            .collect(),
    })
}
