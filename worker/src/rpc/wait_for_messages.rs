//! `wait_for_messages` (DESIGN §3, §5.2), one poll: the messages from other people archived
//! after the cursor, or none and a cursor at the highest committed position. The worker never
//! holds a poll: the gateway waits for `<prefix>.events.archive` between polls.
//!
//! The cursor carries the archive's identity and the account it follows; one from another
//! archive restarts from now with `cursor_reset`. The scan is bounded above by the committed position read before the query,
//! so every position up to it is visible (commit order) and a cursor never skips one.

use wazap_shared::wire::wait::{
    Cursor, MAX_WAIT_MESSAGES, WaitForMessagesRequest, WaitPollResponse,
};

use super::scope::RequestedScope;
use crate::archive::read;
use crate::archive::read::wait::{self, After};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "wait_for_messages";

/// Answer one poll.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: WaitForMessagesRequest,
) -> Result<WaitPollResponse, Error> {
    req.timeout()?;
    let archive_id = state.meta.archive_id.simple().to_string();
    let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
    let (start, cursor_reset) = match &cursor {
        None => (None, false),
        Some(c) if c.archive_id == archive_id => (Some(c.position), false),
        Some(_) => (None, true),
    };
    // The cursor follows one account: the call's, whatever else names it.
    let asked = RequestedScope::new(
        req.account_id.as_deref(),
        req.chat_id.as_deref(),
        &[("cursor", cursor.as_ref().map(|c| c.account.as_str()))],
    )?;
    let inside = super::args::viewer_in(viewer, asked.account())?;
    let viewer: &Viewer = &inside;
    let db = read::connection(&state.db, CONTEXT).await?;
    // Read the committed position before the messages: everything at or below it is visible.
    let committed = match state.served.get(asked.account()) {
        Some(a) => *a.archive.committed().borrow(),
        // Nobody writes the account here; its writer (if any) commits in position order, so
        // the highest stored position is committed with every one below it.
        None => read::wait::highest(&db, asked.account())
            .await
            .context(CONTEXT)?,
    };
    let scope = asked.scope(&db, viewer, CONTEXT).await?;
    let account = &scope.account;
    let respond = |messages: Vec<wazap_shared::wire::Message>, position: i64| WaitPollResponse {
        account_id: account.clone(),
        messages,
        cursor: Cursor {
            archive_id: archive_id.clone(),
            position,
            account: account.clone(),
        }
        .encode(),
        position,
        cursor_reset,
    };
    let Some(after) = start else {
        // No cursor (or another archive's): the wait starts now.
        scope.run(&db, CONTEXT, async { Ok(()) }).await?;
        return Ok(respond(Vec::new(), committed));
    };
    if after >= committed {
        scope.run(&db, CONTEXT, async { Ok(()) }).await?;
        return Ok(respond(Vec::new(), after));
    }
    let scan = async {
        wait::after(
            &db,
            viewer,
            After {
                account,
                chat_id: scope.chat.as_deref(),
                addressed_to_me: req.addressed_to_me.unwrap_or(false),
                after,
                upto: committed,
                limit: MAX_WAIT_MESSAGES,
            },
        )
        .await
        .context(CONTEXT)
    };
    let found = scope.run(&db, CONTEXT, scan).await?;
    // A full page ends at its last message; otherwise everything up to `committed` was scanned
    // (so a flood of messages the caller may not see never makes a waiter spin).
    let position = match found.last() {
        Some(last) if found.len() >= MAX_WAIT_MESSAGES => last.position,
        _ => committed,
    };
    Ok(respond(
        found.into_iter().map(|m| m.message).collect(),
        position,
    ))
}
