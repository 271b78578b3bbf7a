//! `search_groups`: groups by name, only among chats the caller may read.

use wazap_shared::wire::read::{
    DEFAULT_SEARCH_LIMIT, GroupSummary, MAX_LIMIT, SearchGroupsRequest, SearchGroupsResponse,
};

use super::args;
use crate::archive::read;
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "search_groups";

/// Search groups by part of their name; `limit` 1–200, default 20.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SearchGroupsRequest,
) -> Result<SearchGroupsResponse, Error> {
    let limit = args::limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_LIMIT)?;
    let text = args::query(&req.query, "part of a group's name")?;
    let db = read::connection(&state.db, CONTEXT).await?;
    let account = args::account(req.account_id.as_deref(), &[])?;
    let inside = args::viewer_in(viewer, &account)?;
    let viewer: &Viewer = &inside;
    let search = async {
        read::chats::search_groups(&db, viewer, &account, text, limit)
            .await
            .context(CONTEXT)
    };
    let rows = read::in_account(&db, &account, CONTEXT, search).await?;
    Ok(SearchGroupsResponse {
        account_id: account,
        groups: rows
            .into_iter()
            .map(|g| GroupSummary {
                chat_id: g.chat_id,
                name: g.name,
                participant_count: g.participant_count,
            })
            .collect(),
    })
}
