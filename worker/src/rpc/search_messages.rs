//! `search_messages` (DESIGN §5): full-text search over the messages the caller may read,
//! newest first, with `before` paging; `#private` messages never match.

use wazap_shared::ids::is_message_id;
use wazap_shared::wire::search::{
    DEFAULT_SEARCH_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, SearchMessagesRequest,
    SearchMessagesResponse,
};

use super::args;
use super::scope::RequestedScope;
use super::search_attachments::check_window;
use crate::archive::read::search::{self, Before, Filters};
use crate::archive::read::{self};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "search_messages";

/// Search messages by words.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SearchMessagesRequest,
) -> Result<SearchMessagesResponse, Error> {
    let limit = args::limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)?;
    if req.query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::invalid("query", "at most 200 characters"));
    }
    let query = search::parse_query(&req.query)
        .ok_or_else(|| Error::invalid("query", "give at least one word or emoji"))?;
    if req.types.as_ref().is_some_and(Vec::is_empty) {
        return Err(Error::invalid(
            "types",
            "give at least one type, or omit it",
        ));
    }
    check_window(req.since, req.until)?;
    if let Some(b) = &req.before
        && !is_message_id(b)
    {
        return Err(Error::invalid("before", "expected a message_id"));
    }
    let asked = RequestedScope::new(
        req.account_id.as_deref(),
        req.chat_id.as_deref(),
        &[("before", super::args::of(req.before.as_deref()))],
    )?;
    let inside = super::args::viewer_in(viewer, asked.account())?;
    let viewer: &Viewer = &inside;
    let db = read::connection(&state.db, CONTEXT).await?;
    let stats = state.search_stats.get(&state.db);
    let scope = asked.scope(&db, viewer, CONTEXT).await?;
    let (account, chat) = (&scope.account, &scope.chat);
    let search = async {
        let before = match &req.before {
            Some(b) => {
                let (ts, pos) = search::message_anchor(&db, viewer, account, b)
                    .await
                    .context(CONTEXT)?
                    .ok_or_else(|| Error::invalid("before", "not a message you can read"))?;
                Some((ts, Before::Position(pos)))
            }
            None => None,
        };
        let filters = Filters {
            chat_id: chat.as_deref(),
            since: req.since,
            until: req.until,
            kinds: req.types.as_deref(),
            before,
        };
        search::messages(
            &db,
            stats.as_deref(),
            viewer,
            account,
            &query,
            &filters,
            limit,
        )
        .await
        .context(CONTEXT)
    };
    let messages = scope.run(&db, CONTEXT, search).await?;
    Ok(SearchMessagesResponse {
        account_id: scope.account,
        count: messages.len() as u32,
        messages,
    })
}
