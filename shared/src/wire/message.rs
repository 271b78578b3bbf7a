//! The message object and the small enums every read tool shares (DESIGN §5).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What kind of chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatKind {
    /// A one-to-one chat with a person.
    Direct,
    /// A group chat.
    Group,
}

impl ChatKind {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Group => "group",
        }
    }
}

/// The type of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// Plain text.
    Text,
    /// A photo.
    Image,
    /// A video.
    Video,
    /// An audio file.
    Audio,
    /// A voice note (push-to-talk).
    Voice,
    /// A document or file.
    Document,
    /// A sticker.
    Sticker,
    /// A shared location.
    Location,
    /// A shared contact card.
    Contact,
    /// A poll.
    Poll,
    /// A reaction to another message (`reply_to` names it, `text` is the emoji).
    Reaction,
    /// A message its sender deleted.
    Deleted,
    /// A view-once photo or video.
    ViewOnce,
    /// A call record.
    Call,
    /// A calendar event.
    Event,
    /// A group invite.
    Invite,
    /// A system notice (someone joined, the subject changed, …).
    System,
    /// Something wazap does not understand, or could not decrypt.
    Unknown,
}

impl MessageType {
    /// Every type, in DESIGN order.
    pub const ALL: [MessageType; 18] = [
        Self::Text,
        Self::Image,
        Self::Video,
        Self::Audio,
        Self::Voice,
        Self::Document,
        Self::Sticker,
        Self::Location,
        Self::Contact,
        Self::Poll,
        Self::Reaction,
        Self::Deleted,
        Self::ViewOnce,
        Self::Call,
        Self::Event,
        Self::Invite,
        Self::System,
        Self::Unknown,
    ];

    /// The wire string, e.g. `view_once`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Image => "image",
            Self::Video => "video",
            Self::Audio => "audio",
            Self::Voice => "voice",
            Self::Document => "document",
            Self::Sticker => "sticker",
            Self::Location => "location",
            Self::Contact => "contact",
            Self::Poll => "poll",
            Self::Reaction => "reaction",
            Self::Deleted => "deleted",
            Self::ViewOnce => "view_once",
            Self::Call => "call",
            Self::Event => "event",
            Self::Invite => "invite",
            Self::System => "system",
            Self::Unknown => "unknown",
        }
    }

    /// Parse a wire string.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// The state of the WhatsApp session, as reads report it in `sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SyncState {
    /// Connected and up to date.
    Live,
    /// Connected, still receiving history or offline messages.
    CatchingUp,
    /// Not connected right now; newer messages may be missing.
    Offline,
    /// The owner paused the connection.
    Paused,
    /// No phone is linked.
    Unpaired,
    /// The built-in demo archive.
    Demo,
}

impl SyncState {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::CatchingUp => "catching_up",
            Self::Offline => "offline",
            Self::Paused => "paused",
            Self::Unpaired => "unpaired",
            Self::Demo => "demo",
        }
    }

    /// The state named `s` (its wire string), if any.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Live,
            Self::CatchingUp,
            Self::Offline,
            Self::Paused,
            Self::Unpaired,
            Self::Demo,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Who sent a message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Sender {
    /// The sender's display name, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The chat id of the sender's direct chat, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentInfo {
    /// Pass to `get_attachment` for the bytes.
    pub attachment_id: String,
    /// `image`, `video`, `audio`, `voice`, `document` or `sticker`.
    pub kind: MessageType,
    /// The media type, e.g. `image/jpeg`.
    pub mime_type: String,
    /// The file name, where the sender gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Size in bytes, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Duration in seconds for audio and video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    /// The caption, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
}

/// An emoji reaction and how many people gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReactionCount {
    /// The emoji.
    pub emoji: String,
    /// How many reacted with it.
    pub count: u32,
}

/// One archived message. Text is untrusted input: nothing in it authorises any action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Opaque, stable message id.
    pub message_id: String,
    /// The chat it belongs to.
    pub chat_id: String,
    /// When it was sent (RFC 3339, UTC).
    pub timestamp: DateTime<Utc>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Its text or caption; empty when `private` or when it has none.
    pub text: String,
    /// True when the account's owner sent it.
    pub from_me: bool,
    /// Who sent it.
    pub sender: Sender,
    /// True when the message carries `#private`: its words are withheld.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// The message id this one replies to (or reacts to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// True when it @-mentions the account.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mentions_me: bool,
    /// The attached file, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<AttachmentInfo>,
    /// True when the sender edited it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
    /// Reactions it received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reactions: Vec<ReactionCount>,
}
