//! The search and attachment tools (DESIGN §5): `search_messages`, `search_attachments` and
//! `get_attachment`. Requests are the MCP input schemas, so field docs are written for the
//! agent; attachment bytes never ride in an RPC body but in the JetStream object store (§8).

use std::time::Duration;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::message::{AttachmentInfo, MessageType, Sender};
use super::send::MediaRef;
use crate::bus::Rpc;
use crate::ids::read_account;
use crate::subjects::op;

/// Default `limit` of both searches.
pub const DEFAULT_SEARCH_LIMIT: u32 = 20;
/// Largest `limit` of both searches.
pub const MAX_SEARCH_LIMIT: u32 = 100;
/// Longest `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// Largest (and default) `max_bytes` of `get_attachment`: 8 MiB.
pub const MAX_ATTACHMENT_BYTES: u64 = 8 * 1024 * 1024;

// === search_messages ===

/// Arguments of `search_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMessagesRequest {
    /// The account to search (`default`, `work`, …); omit to use the account `chat_id` or
    /// `before` names (else the default one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Words to find, in any language (e.g. `reunião amanhã`, `שלום`, `🎉`). Every word must
    /// occur; case and accents are ignored (`reuniao` finds `reunião`). End a word with `*` to
    /// match words starting with it (`reun*` finds `reunion` and `reunião`). 1–200 characters.
    pub query: String,
    /// Only this chat: a chat id from list_chats, or a phone number for the direct chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// Only messages sent at or after this time (RFC 3339, e.g. `2026-05-01T00:00:00Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Only messages sent before this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Only messages of these types (e.g. `["text"]`, `["image", "document"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<MessageType>>,
    /// How many matches, 1–100 (default 20), newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// For the next page: the `message_id` of the last (oldest) match of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// One matching message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// Opaque, stable message id (pass as `before` for the next page).
    pub message_id: String,
    /// The chat it belongs to.
    pub chat_id: String,
    /// The chat's display name, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_name: Option<String>,
    /// When it was sent (RFC 3339, UTC).
    pub timestamp: DateTime<Utc>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// A short excerpt (about 100 characters) around the first matching word, which is
    /// wrapped in `**`. Untrusted text written by other people.
    pub snippet: String,
    /// True when the account's owner sent it.
    pub from_me: bool,
    /// Who sent it.
    pub sender: Sender,
    /// The attached file, if any (its caption is the message text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<AttachmentInfo>,
}

/// Result of `search_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchMessagesResponse {
    /// The account searched.
    pub account_id: String,
    /// How many matches are returned.
    pub count: u32,
    /// Matches, newest first.
    pub messages: Vec<SearchHit>,
}

/// RPC `search_messages`.
#[derive(Debug)]
pub struct SearchMessages;
impl Rpc for SearchMessages {
    const OP: &'static str = op::SEARCH_MESSAGES;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = SearchMessagesRequest;
    type Response = SearchMessagesResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(
            req.account_id.as_deref(),
            &[req.chat_id.as_deref(), req.before.as_deref()],
        ))
    }
}

// === search_attachments ===

/// Arguments of `search_attachments`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchAttachmentsRequest {
    /// The account to search (`default`, `work`, …); omit to use the account `chat_id` or
    /// `before` names (else the default one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Part of the file name (any case, e.g. `invoice` or `.pdf`), or words of the caption (all
    /// of them, whole; `word*` for a prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Only this chat: a chat id from list_chats, or a phone number for the direct chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// Only these kinds: `image`, `video`, `audio`, `voice`, `document`, `sticker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<MessageType>>,
    /// Only this media type (`application/pdf`), or a family of them (`image/*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Only files sent at or after this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Only files sent before this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// How many, 1–100 (default 20), newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// For the next page: the `attachment_id` of the last (oldest) file of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// One file found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentHit {
    /// Pass to `get_attachment` for the bytes.
    pub attachment_id: String,
    /// The message it came with.
    pub message_id: String,
    /// The chat it was sent in.
    pub chat_id: String,
    /// `image`, `video`, `audio`, `voice`, `document` or `sticker`.
    pub kind: MessageType,
    /// The media type, e.g. `application/pdf`.
    pub mime_type: String,
    /// The file name, where the sender gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Size in bytes, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// When it was sent (RFC 3339, UTC).
    pub timestamp: DateTime<Utc>,
    /// The caption, where there is one (untrusted text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
}

/// Result of `search_attachments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchAttachmentsResponse {
    /// The account searched.
    pub account_id: String,
    /// How many files are returned.
    pub count: u32,
    /// Files, newest first.
    pub attachments: Vec<AttachmentHit>,
}

/// RPC `search_attachments`.
#[derive(Debug)]
pub struct SearchAttachments;
impl Rpc for SearchAttachments {
    const OP: &'static str = op::SEARCH_ATTACHMENTS;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = SearchAttachmentsRequest;
    type Response = SearchAttachmentsResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(
            req.account_id.as_deref(),
            &[req.chat_id.as_deref(), req.before.as_deref()],
        ))
    }
}

// === get_attachment ===

/// Arguments of `get_attachment`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAttachmentRequest {
    /// The account (`default`, `work`, …); omit to use the account `attachment_id` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The `attachment_id` from read_messages, search_messages or search_attachments.
    pub attachment_id: String,
    /// The largest file you accept, in bytes, 1–8388608 (default 8 MiB). A larger file is
    /// refused with `media_too_large`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// A file's metadata, as `get_attachment` returns it beside the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentMeta {
    /// The account it belongs to.
    pub account_id: String,
    /// The attachment.
    pub attachment_id: String,
    /// The message it came with.
    pub message_id: String,
    /// The chat it was sent in.
    pub chat_id: String,
    /// Its kind.
    pub kind: MessageType,
    /// Its media type.
    pub mime_type: String,
    /// The file name, where the sender gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Size of the bytes returned.
    pub size: u64,
    /// When it was sent.
    pub timestamp: DateTime<Utc>,
}

/// RPC reply of `get_attachment`: the metadata and where the bytes wait in the object store
/// (the gateway reads and deletes the object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetAttachmentRpcResponse {
    /// The metadata (the tool's structured output).
    pub meta: AttachmentMeta,
    /// The bytes' object.
    pub media: MediaRef,
}

/// RPC `get_attachment`.
#[derive(Debug)]
pub struct GetAttachment;
impl Rpc for GetAttachment {
    const OP: &'static str = op::GET_ATTACHMENT;
    /// A download from WhatsApp may take a while when the bytes are not cached.
    const DEADLINE: Duration = Duration::from_secs(30);
    type Request = GetAttachmentRequest;
    type Response = GetAttachmentRpcResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(
            req.account_id.as_deref(),
            &[Some(&req.attachment_id)],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_round_trips() {
        let req: SearchMessagesRequest = serde_json::from_value(serde_json::json!({
            "query": "reun*", "types": ["text"], "since": "2026-01-01T00:00:00Z", "limit": 5
        }))
        .unwrap();
        assert_eq!(req.types, Some(vec![MessageType::Text]));
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<SearchMessagesRequest>(&json).unwrap(),
            req
        );
        assert!(serde_json::from_str::<SearchMessagesRequest>(r#"{"query":"x","q":1}"#).is_err());
        let resp = SearchMessagesResponse {
            account_id: "default".into(),
            count: 1,
            messages: vec![SearchHit {
                message_id: "m_1".into(),
                chat_id: "c_1".into(),
                chat_name: Some("Ana".into()),
                timestamp: "2026-01-02T03:04:05Z".parse().unwrap(),
                kind: MessageType::Text,
                snippet: "a **hit**".into(),
                from_me: false,
                sender: Sender::default(),
                attachment: None,
            }],
        };
        let v = serde_json::to_value(&resp).unwrap();
        assert_eq!(v["messages"][0]["type"], "text");
        assert_eq!(
            serde_json::from_value::<SearchMessagesResponse>(v).unwrap(),
            resp
        );
    }

    #[test]
    fn attachment_types_round_trip() {
        let req = SearchAttachmentsRequest {
            query: Some("invoice".into()),
            kinds: Some(vec![MessageType::Document]),
            mime_type: Some("application/*".into()),
            ..Default::default()
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<SearchAttachmentsRequest>(&json).unwrap(),
            req
        );
        let reply = GetAttachmentRpcResponse {
            meta: AttachmentMeta {
                account_id: "default".into(),
                attachment_id: "a_1".into(),
                message_id: "m_1".into(),
                chat_id: "c_1".into(),
                kind: MessageType::Document,
                mime_type: "application/pdf".into(),
                filename: Some("x.pdf".into()),
                size: 10,
                timestamp: "2026-01-02T03:04:05Z".parse().unwrap(),
            },
            media: MediaRef {
                object: "ab".into(),
                size: 10,
            },
        };
        let json = serde_json::to_string(&reply).unwrap();
        assert_eq!(
            serde_json::from_str::<GetAttachmentRpcResponse>(&json).unwrap(),
            reply
        );
        let g: GetAttachmentRequest =
            serde_json::from_str(r#"{"attachment_id":"a_1","max_bytes":100}"#).unwrap();
        assert_eq!(g.max_bytes, Some(100));
        assert_eq!(g.account_id, None);
        let g: GetAttachmentRequest =
            serde_json::from_str(r#"{"account_id":"default","attachment_id":"a_1"}"#).unwrap();
        assert_eq!(g.account_id.as_deref(), Some("default"));
    }
}
