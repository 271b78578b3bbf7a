//! The read tools' requests and responses (DESIGN §5, §5.1). Requests are also the MCP input
//! schemas, so every field's doc is written for the agent that fills it in.

use std::time::Duration;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::message::{ChatKind, Message, MessageType, SyncState};
use crate::bus::Rpc;
use crate::ids::read_account;
use crate::subjects::op;

/// Default and maximum `limit` for list_chats and read_messages.
pub const DEFAULT_LIMIT: u32 = 50;
/// Largest `limit` for list_chats and read_messages.
pub const MAX_LIMIT: u32 = 200;
/// Default `limit` for contact and group searches.
pub const DEFAULT_SEARCH_LIMIT: u32 = 20;
/// Largest number of image previews one read attaches.
pub const MAX_PREVIEWS: usize = 12;

// === list_chats ===

/// Arguments of `list_chats`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChatsRequest {
    /// The account to list (`default`, `work`, …); omit for the default account (or the
    /// account of `before`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Only chats whose name contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Only `direct` (one person) or only `group` chats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ChatKind>,
    /// How many chats, 1–200 (default 50), most recently active first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// For the next page: the `chat_id` of the last chat of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// One chat in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChatSummary {
    /// Opaque chat id; pass it to read_messages and the send tools.
    pub chat_id: String,
    /// The chat's display name.
    pub name: String,
    /// `direct` or `group`.
    pub kind: ChatKind,
    /// When the latest message was sent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_at: Option<DateTime<Utc>>,
    /// Messages from others not yet read on the phone.
    pub unread_count: u32,
    /// True when this connection may send to this chat.
    pub can_send: bool,
}

/// Result of `list_chats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListChatsResponse {
    /// The account listed.
    pub account_id: String,
    /// The chats, most recently active first.
    pub chats: Vec<ChatSummary>,
}

/// RPC `list_chats`.
#[derive(Debug)]
pub struct ListChats;
impl Rpc for ListChats {
    const OP: &'static str = op::LIST_CHATS;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = ListChatsRequest;
    type Response = ListChatsResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(
            req.account_id.as_deref(),
            &[req.before.as_deref()],
        ))
    }
}

// === search_contacts ===

/// Arguments of `search_contacts`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchContactsRequest {
    /// The account to search (`default`, `work`, …); omit for the default account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Part of a name, or phone digits (e.g. `97250`).
    pub query: String,
    /// How many contacts, 1–200 (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A contact the connection may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContactSummary {
    /// The chat id of the direct chat with this person.
    pub chat_id: String,
    /// The contact's name.
    pub name: String,
    /// The phone number in international form (`+972…`), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
}

/// Result of `search_contacts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchContactsResponse {
    /// The account searched.
    pub account_id: String,
    /// Matching contacts inside the read scope.
    pub contacts: Vec<ContactSummary>,
}

/// RPC `search_contacts`.
#[derive(Debug)]
pub struct SearchContacts;
impl Rpc for SearchContacts {
    const OP: &'static str = op::SEARCH_CONTACTS;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = SearchContactsRequest;
    type Response = SearchContactsResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(req.account_id.as_deref(), &[]))
    }
}

// === search_groups ===

/// Arguments of `search_groups`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchGroupsRequest {
    /// The account to search (`default`, `work`, …); omit for the default account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Part of the group's name.
    pub query: String,
    /// How many groups, 1–200 (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A group the connection may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GroupSummary {
    /// The group's chat id.
    pub chat_id: String,
    /// The group's name.
    pub name: String,
    /// How many participants it has, where known.
    pub participant_count: u32,
}

/// Result of `search_groups`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchGroupsResponse {
    /// The account searched.
    pub account_id: String,
    /// Matching groups inside the read scope.
    pub groups: Vec<GroupSummary>,
}

/// RPC `search_groups`.
#[derive(Debug)]
pub struct SearchGroups;
impl Rpc for SearchGroups {
    const OP: &'static str = op::SEARCH_GROUPS;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = SearchGroupsRequest;
    type Response = SearchGroupsResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(req.account_id.as_deref(), &[]))
    }
}

// === read_messages ===

/// Arguments of `read_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMessagesRequest {
    /// The account (`default`, `work`, …); omit to use the account `chat_id` names (a phone
    /// number: the default account's chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// A chat id from list_chats, a phone number (`+972501234567`) for the direct chat with that
    /// person, or `"status"` for status stories.
    pub chat_id: String,
    /// How many messages, 1–200 (default 50). With `types`, counts only matching messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// For older messages: the `message_id` of the oldest message you already have. When this
    /// runs past the archive, wazap asks the phone for older history (see `older`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Only messages of these types (e.g. `["image", "video"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<MessageType>>,
    /// Attach a small JPEG preview for each photo (newest first, at most 12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_previews: Option<bool>,
    /// For `"status"` only: stories from the last this many hours, 1–24 (default 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<u32>,
}

/// What asking the phone for older history gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OlderHistory {
    /// True when the phone was asked.
    pub asked_phone: bool,
    /// How many older messages arrived in time.
    pub received: u32,
}

/// A send of this connection to this chat whose outcome is not known yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnconfirmedSend {
    /// The `request_id` the send was made with.
    pub draft_id: String,
    /// The text handed to WhatsApp.
    pub text: String,
    /// When it was handed over.
    pub handed_at: DateTime<Utc>,
    /// Always `unknown`.
    pub state: String,
}

/// A small JPEG preview of a photo, carried to the gateway as base64 and shown to the agent as
/// image content (not part of the structured output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The message the photo belongs to.
    pub message_id: String,
    /// Always `image/jpeg`.
    pub mime_type: String,
    /// The preview bytes, standard base64.
    pub data_base64: String,
}

/// Result of `read_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadMessagesResponse {
    /// The account read.
    pub account_id: String,
    /// The chat read (`"status"` for stories).
    pub chat_id: String,
    /// How many messages are returned.
    pub count: u32,
    /// Oldest to newest (stories: newest first).
    pub messages: Vec<Message>,
    /// The session's state; anything but `live` or `demo` means newer messages may be missing.
    pub sync: SyncState,
    /// How many image previews are attached as image content.
    pub preview_count: u32,
    /// Caveats to act on or tell the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// This connection's sends to this chat whose outcome is unknown and that WhatsApp has not
    /// echoed: check them before sending again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unconfirmed_sends: Vec<UnconfirmedSend>,
    /// Present when `before` ran past the archive and the phone was asked for older history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older: Option<OlderHistory>,
    /// For `"status"`: older stories left out by `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u32>,
    /// The `types` filter, echoed when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<MessageType>>,
    /// The `hours` window, echoed when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<u32>,
    /// Image previews; the gateway turns these into image content blocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub previews: Vec<Preview>,
}

/// RPC `read_messages`.
#[derive(Debug)]
pub struct ReadMessages;
impl Rpc for ReadMessages {
    const OP: &'static str = op::READ_MESSAGES;
    /// Up to 30 s asking the phone for older history, plus margin.
    const DEADLINE: Duration = Duration::from_secs(33);
    type Request = ReadMessagesRequest;
    type Response = ReadMessagesResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(
            req.account_id.as_deref(),
            &[Some(&req.chat_id), req.before.as_deref()],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::Sender;

    #[test]
    fn read_messages_round_trips() {
        let resp = ReadMessagesResponse {
            account_id: "default".into(),
            chat_id: "c_1".into(),
            count: 1,
            messages: vec![Message {
                message_id: "m_1".into(),
                chat_id: "c_1".into(),
                timestamp: "2026-01-02T03:04:05Z".parse().unwrap(),
                kind: MessageType::ViewOnce,
                text: String::new(),
                from_me: false,
                sender: Sender {
                    name: Some("Ana".into()),
                    chat_id: Some("c_2".into()),
                },
                private: true,
                reply_to: None,
                mentions_me: false,
                attachment: None,
                edited: false,
                reactions: vec![],
            }],
            sync: SyncState::CatchingUp,
            preview_count: 0,
            notes: vec![],
            unconfirmed_sends: vec![],
            older: Some(OlderHistory {
                asked_phone: true,
                received: 3,
            }),
            omitted: None,
            types: Some(vec![MessageType::Image]),
            hours: None,
            previews: vec![],
        };
        let json = serde_json::to_value(&resp).unwrap();
        assert_eq!(json["messages"][0]["type"], "view_once");
        assert_eq!(json["messages"][0]["private"], true);
        assert_eq!(json["sync"], "catching_up");
        assert!(json.get("previews").is_none());
        assert_eq!(
            serde_json::from_value::<ReadMessagesResponse>(json).unwrap(),
            resp
        );
    }

    #[test]
    fn requests_round_trip_and_refuse_unknown_fields() {
        let req = ListChatsRequest {
            kind: Some(ChatKind::Group),
            limit: Some(5),
            ..Default::default()
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<ListChatsRequest>(&json).unwrap(),
            req
        );
        assert!(serde_json::from_str::<ListChatsRequest>(r#"{"limt":5}"#).is_err());
        let s = SearchContactsRequest {
            query: "ana".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::from_str::<SearchContactsRequest>(&serde_json::to_string(&s).unwrap())
                .unwrap(),
            s
        );
        let g = SearchGroupsRequest {
            query: "fam".into(),
            limit: Some(3),
            ..Default::default()
        };
        assert_eq!(
            serde_json::from_str::<SearchGroupsRequest>(&serde_json::to_string(&g).unwrap())
                .unwrap(),
            g
        );
    }
}
