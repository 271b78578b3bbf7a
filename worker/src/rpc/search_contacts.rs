//! `search_contacts`: people by name or phone digits, only among chats the caller may read
//! (never the whole phonebook).

use wazap_shared::wire::read::{
    ContactSummary, DEFAULT_SEARCH_LIMIT, MAX_LIMIT, SearchContactsRequest, SearchContactsResponse,
};

use super::args;
use crate::archive::read;
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "search_contacts";

/// Search contacts: `query` is part of a name, or phone digits (`+`, spaces, dashes and
/// parentheses are ignored); `limit` 1–200, default 20.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SearchContactsRequest,
) -> Result<SearchContactsResponse, Error> {
    let limit = args::limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_LIMIT)?;
    let text = args::query(&req.query, "part of a name or phone digits")?;
    let digits = phone_fragment(text);
    let db = read::connection(&state.db, CONTEXT).await?;
    let account = args::account(req.account_id.as_deref(), &[])?;
    let inside = args::viewer_in(viewer, &account)?;
    let viewer: &Viewer = &inside;
    let search = async {
        read::chats::search_contacts(&db, viewer, &account, text, digits.as_deref(), limit)
            .await
            .context(CONTEXT)
    };
    let rows = read::in_account(&db, &account, CONTEXT, search).await?;
    Ok(SearchContactsResponse {
        account_id: account,
        contacts: rows
            .into_iter()
            .map(|c| ContactSummary {
                chat_id: c.chat_id,
                name: c.name,
                phone: c.phone.map(|d| format!("+{d}")),
            })
            .collect(),
    })
}

/// The digits of a query that is (part of) a phone number: at least 3 digits, nothing but
/// digits and `+ -().` separators.
fn phone_fragment(q: &str) -> Option<String> {
    let body = q.strip_prefix('+').unwrap_or(q);
    let digits: String = body.chars().filter(char::is_ascii_digit).collect();
    let only_phone = body
        .chars()
        .all(|c| c.is_ascii_digit() || " -().".contains(c));
    (only_phone && digits.len() >= 3).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_phone_fragments() {
        assert_eq!(phone_fragment("+972 50-123").as_deref(), Some("97250123"));
        assert_eq!(phone_fragment("97250").as_deref(), Some("97250"));
        assert_eq!(phone_fragment("12"), None);
        assert_eq!(phone_fragment("Ana 123"), None);
    }
}
