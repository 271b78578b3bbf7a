//! `search_attachments` (DESIGN §5): files the caller may read, by file name or caption, kind,
//! media type and dates, newest first; never story files or those of `#private` messages.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::RpcError;
use wazap_shared::ids::{ATTACHMENT_ID_PREFIX, is_chat_id, is_opaque, phone_digits};
use wazap_shared::wire::MessageType;
use wazap_shared::wire::search::{
    DEFAULT_SEARCH_LIMIT, MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, SearchAttachmentsRequest,
    SearchAttachmentsResponse,
};

use super::search_messages::no_chat;
use crate::archive::read::search::{self, AttachmentFilters, Before, Filters};
use crate::archive::read::{self, ChatRef};
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
) -> Result<SearchAttachmentsResponse, RpcError> {
    let limit = read::limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)?;
    let text = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    if text.is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS) {
        return Err(RpcError::invalid("query", "at most 200 characters"));
    }
    if let Some(kinds) = &req.kinds
        && (kinds.is_empty() || kinds.iter().any(|k| !FILE_KINDS.contains(k)))
    {
        return Err(RpcError::invalid(
            "kinds",
            "expected image, video, audio, voice, document or sticker",
        ));
    }
    if let Some(m) = &req.mime_type
        && !valid_mime(m)
    {
        return Err(RpcError::invalid(
            "mime_type",
            "expected a media type like application/pdf or image/*",
        ));
    }
    check_window(req.since, req.until)?;
    if let Some(b) = &req.before
        && !is_opaque(b, ATTACHMENT_ID_PREFIX)
    {
        return Err(RpcError::invalid("before", "expected an attachment_id"));
    }
    let db = read::connection(&state.db, CONTEXT).await?;
    let scope = scope_chat(
        &db,
        viewer,
        req.account_id.as_deref(),
        req.chat_id.as_deref(),
        CONTEXT,
    )
    .await?;
    let account = &scope.account;
    let search = async {
        let before = match &req.before {
            Some(b) => {
                let ts = search::attachment_anchor(&db, account, b)
                    .await
                    .map_err(|e| read::internal(CONTEXT, &e))?
                    .ok_or_else(|| {
                        RpcError::invalid("before", "not an attachment of this account")
                    })?;
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
        search::attachments(&db, viewer, account, &filters, &af, limit)
            .await
            .map_err(|e| read::internal(CONTEXT, &e))
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
) -> Result<(), RpcError> {
    match (since, until) {
        (Some(s), Some(u)) if s >= u => Err(RpcError::invalid("until", "must be after since")),
        _ => Ok(()),
    }
}

/// What a search covers: its account and, when `chat_id` was given, that chat.
pub(super) struct Scope {
    /// The account.
    pub(super) account: String,
    /// The chat, when the search is confined to one.
    pub(super) chat: Option<String>,
    /// The account is not looked up yet: [`Scope::run`] checks it with the search.
    unchecked: bool,
}

impl Scope {
    /// Run `search` in this scope: when the account was not looked up yet (no chat named), in
    /// the same flight as that lookup ([`read::in_account`]).
    pub(super) async fn run<T>(
        &self,
        db: &impl GenericClient,
        context: &'static str,
        search: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, RpcError> {
        if self.unchecked {
            read::in_account(db, &self.account, context, search).await
        } else {
            search.await
        }
    }
}

/// The scope of a search: the account named (or the default one), looked up with the search
/// itself; or, when `chat_id` is given, that chat (opaque id or phone number) if the viewer may
/// read it, looked up now: `chat_not_found` otherwise.
pub(super) async fn scope_chat(
    db: &impl GenericClient,
    viewer: &Viewer,
    account_id: Option<&str>,
    chat_id: Option<&str>,
    context: &'static str,
) -> Result<Scope, RpcError> {
    let Some(chat_id) = chat_id else {
        return Ok(Scope {
            account: read::account_name(account_id)?,
            chat: None,
            unchecked: true,
        });
    };
    let requested = match account_id {
        Some(a) => Some(read::account(db, Some(a), context).await?),
        None => None,
    };
    let chat_ref = if is_chat_id(chat_id) {
        ChatRef::Opaque(chat_id.to_owned())
    } else if let Some(d) = phone_digits(chat_id) {
        ChatRef::Phone(d)
    } else {
        return Err(RpcError::invalid(
            "chat_id",
            "expected a chat_id or a phone number",
        ));
    };
    let chat = read::find_chat(db, requested.as_deref(), &chat_ref)
        .await
        .map_err(|e| read::internal(context, &e))?
        .filter(|c| viewer.can_read_chat(&c.chat_id))
        .ok_or_else(no_chat)?;
    Ok(Scope {
        account: chat.account_id,
        chat: Some(chat.chat_id),
        unchecked: false,
    })
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
