//! What connectors hand the archive: messages, stories, contacts and groups as WhatsApp shows
//! them (JIDs, WhatsApp ids), independent of any one connector. The archive turns them into
//! opaque ids and rows.

use chrono::{DateTime, Utc};
use wazap_shared::wire::MessageType;

/// One message as a connector observed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// The chat's JID: a person, a group, or `status@broadcast` for a status story.
    pub chat_jid: String,
    /// WhatsApp's message id.
    pub wa_id: String,
    /// The sender's JID (groups and stories); `None` in direct chats.
    pub sender_jid: Option<String>,
    /// The sender's push name.
    pub push_name: Option<String>,
    /// True when the account itself sent it.
    pub from_me: bool,
    /// When it was sent.
    pub timestamp: DateTime<Utc>,
    /// Its type.
    pub kind: MessageType,
    /// Text or caption; for a reaction, the emoji (empty removes the sender's reaction).
    pub text: String,
    /// The WhatsApp id of the message this one replies to, reacts to, edits or deletes.
    pub target_wa_id: Option<String>,
    /// True when this edits `target_wa_id` (its text replaces the target's).
    pub edit: bool,
    /// JIDs @-mentioned in the text.
    pub mentions: Vec<String>,
    /// Attached media.
    pub attachment: Option<InboundAttachment>,
}

/// Media attached to an [`Inbound`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InboundAttachment {
    /// The media type, e.g. `image/jpeg`.
    pub mime_type: String,
    /// The file name the sender gave.
    pub filename: Option<String>,
    /// Size in bytes, where known.
    pub size: Option<u64>,
    /// Duration in seconds (audio, video).
    pub seconds: Option<u32>,
    /// A small JPEG thumbnail.
    pub thumbnail: Option<Vec<u8>>,
    /// The bytes, when the connector already has them.
    pub data: Option<Vec<u8>>,
    /// The connector's download information (direct path, keys, hashes).
    pub media: Option<serde_json::Value>,
}

/// What became of one ingested message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestOutcome {
    /// Stored at `position`.
    Stored {
        /// Its opaque id.
        message_id: String,
        /// Its archive position.
        position: i64,
    },
    /// Already archived (same natural key): dropped.
    Duplicate {
        /// The archived message's id.
        message_id: String,
    },
    /// An edit or delete applied to the archived message it targets.
    Applied {
        /// The target's id.
        message_id: String,
    },
    /// A status story.
    Story {
        /// The story's id (it reads as a message id).
        story_id: String,
        /// False when it was already archived.
        new: bool,
    },
    /// Not stored: the archive policy excludes its chat.
    Excluded,
    /// Not stored: its chat or sender is not a JID the archive understands.
    Invalid,
}

impl IngestOutcome {
    /// The opaque id this outcome names, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::Stored { message_id, .. }
            | Self::Duplicate { message_id }
            | Self::Applied { message_id } => Some(message_id),
            Self::Story { story_id, .. } => Some(story_id),
            Self::Excluded | Self::Invalid => None,
        }
    }
}

/// A phonebook contact, optionally linking its LID to its phone-number JID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactUpdate {
    /// The phone-number JID (or a LID when that is all that is known).
    pub jid: String,
    /// The contact's LID: both forms become one chat.
    pub lid: Option<String>,
    /// The phonebook name.
    pub name: String,
}

/// A group's subject and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupUpdate {
    /// The group JID.
    pub jid: String,
    /// Its subject.
    pub name: String,
    /// The participants' JIDs.
    pub participants: Vec<String>,
}
