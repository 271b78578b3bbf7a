//! `search_attachments` (DESIGN §5): files the caller may read, by file name or caption, kind,
//! media type and dates, newest first; never story files or those of `#private` messages.

use chrono::{DateTime, Utc};
use wazap_shared::ids::is_attachment_id;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::search::{
    DEFAULT_SEARCH_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, SearchAttachmentsRequest,
    SearchAttachmentsResponse,
};

use super::args;
use super::scope::RequestedScope;
use crate::archive::read;
use crate::archive::read::attachments::{self, AttachmentFilters};
use crate::archive::read::search::{Before, Filters};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "search_attachments";
/// The kinds a file can have.
const FILE_KINDS: [MessageType; 6] = [
    MessageType::Image,
    MessageType::Video,
    MessageType::Audio,
    MessageType::Voice,
    MessageType::Document,
    MessageType::Sticker,
];

/// Search files.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SearchAttachmentsRequest,
) -> Result<SearchAttachmentsResponse, Error> {
    let limit = args::limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)?;
    let text = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    if text.is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS) {
        return Err(Error::invalid("query", "at most 200 characters"));
    }
    if let Some(kinds) = &req.kinds
        && (kinds.is_empty() || kinds.iter().any(|k| !FILE_KINDS.contains(k)))
    {
        return Err(Error::invalid(
            "kinds",
            "expected image, video, audio, voice, document or sticker",
        ));
    }
    if let Some(m) = &req.mime_type
        && !valid_mime(m)
    {
        return Err(Error::invalid(
            "mime_type",
            "expected a media type like application/pdf or image/*",
        ));
    }
    check_window(req.since, req.until)?;
    if let Some(b) = &req.before
        && !is_attachment_id(b)
    {
        return Err(Error::invalid("before", "expected an attachment_id"));
    }
    let asked = RequestedScope::new(
        req.account_id.as_deref(),
        req.chat_id.as_deref(),
        &[("before", super::args::of(req.before.as_deref()))],
    )?;
    let inside = super::args::viewer_in(viewer, asked.account())?;
    let viewer: &Viewer = &inside;
    let db = read::connection(&state.db, CONTEXT).await?;
    let scope = asked.scope(&db, viewer, CONTEXT).await?;
    let account = &scope.account;
    let search = async {
        let before = match &req.before {
            Some(b) => {
                let ts = attachments::attachment_anchor(&db, account, b)
                    .await
                    .context(CONTEXT)?
                    .ok_or_else(|| Error::invalid("before", "not an attachment of this account"))?;
                Some((ts, Before::Attachment(b.clone())))
            }
            None => None,
        };
        let filters = Filters {
            chat_id: scope.chat.as_deref(),
            since: req.since,
            until: req.until,
            kinds: req.kinds.as_deref(),
            before,
        };
        let af = AttachmentFilters {
            text,
            mime_type: req.mime_type.as_deref(),
        };
        attachments::attachments(&db, viewer, account, &filters, &af, limit)
            .await
            .context(CONTEXT)
    };
    let attachments = scope.run(&db, CONTEXT, search).await?;
    Ok(SearchAttachmentsResponse {
        count: attachments.len() as u32,
        account_id: scope.account,
        attachments,
    })
}

/// `type/subtype` or `type/*`, of token characters only.
fn valid_mime(m: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    match m.split_once('/') {
        Some((t, "*")) => token(t),
        Some((t, s)) => token(t) && token(s),
        None => false,
    }
}

/// `since` must come before `until` when both are given.
pub(super) fn check_window(
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> Result<(), Error> {
    match (since, until) {
        (Some(s), Some(u)) if s >= u => Err(Error::invalid("until", "must be after since")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_checked() {
        assert!(valid_mime("application/pdf"));
        assert!(valid_mime("image/*"));
        assert!(valid_mime("application/vnd.ms-excel"));
        assert!(!valid_mime("image"));
        assert!(!valid_mime("*/*"));
        assert!(!valid_mime("image/%"));
        assert!(!valid_mime("a/b/c"));
    }
}
