//! The `sim` connector's control ops on `<prefix>.sim.<op>` (DESIGN §9): tests drive the
//! simulated WhatsApp peer with these. Peers are named by WhatsApp-style JIDs
//! (`972501234567@s.whatsapp.net`, `123456789@lid`, `120363…@g.us`), exactly as the real
//! connector would see them; the worker maps them to opaque ids.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::message::{MessageType, SyncState};

/// Media attached to a simulated message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimAttachment {
    /// The media type, e.g. `image/jpeg`.
    pub mime_type: String,
    /// The file name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Duration in seconds for audio/video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    /// The file's bytes, standard base64 (kept by the sim so downloads work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_base64: Option<String>,
    /// A JPEG thumbnail, standard base64 (images and videos).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbnail_base64: Option<String>,
}

/// One simulated message, as WhatsApp would deliver it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimMessage {
    /// The chat's JID: a person (`…@s.whatsapp.net` or `…@lid`) or a group (`…@g.us`).
    pub chat: String,
    /// WhatsApp's message id (unique per chat and sender).
    pub id: String,
    /// The sender's JID in groups; omitted in direct chats (the chat's person, or the account
    /// when `from_me`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// The sender's push name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_name: Option<String>,
    /// True for a message the account itself sent (from another device).
    #[serde(default)]
    pub from_me: bool,
    /// When it was sent.
    pub timestamp: DateTime<Utc>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Text or caption (for `reaction`: the emoji).
    #[serde(default)]
    pub text: String,
    /// The WhatsApp id of the message this replies to, reacts to, edits or deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// JIDs @-mentioned in the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
    /// Attached media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<SimAttachment>,
    /// True when this is an edit of `reply_to` (its text replaces the original's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edit: bool,
}

/// Op `inject_message`: deliver one message through the live path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectMessage {
    /// The message.
    pub message: SimMessage,
}

/// Op `inject_story`: a status story posted by a contact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectStory {
    /// The poster's JID.
    pub sender: String,
    /// The poster's push name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_name: Option<String>,
    /// WhatsApp's id for the story.
    pub id: String,
    /// When it was posted.
    pub timestamp: DateTime<Utc>,
    /// `text`, `image` or `video`.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Text or caption.
    #[serde(default)]
    pub text: String,
    /// Attached media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<SimAttachment>,
}

/// Op `upsert_contact`: a phonebook contact, optionally linking its LID to its phone JID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpsertContact {
    /// The phone-number JID (`972501234567@s.whatsapp.net`).
    pub jid: String,
    /// The contact's LID (`…@lid`), if known: both forms become one chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lid: Option<String>,
    /// The name saved in the phonebook.
    pub name: String,
}

/// Op `upsert_group`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpsertGroup {
    /// The group JID (`…@g.us`).
    pub jid: String,
    /// The group's subject.
    pub name: String,
    /// The participants' JIDs.
    #[serde(default)]
    pub participants: Vec<String>,
}

/// Op `history_page`: older messages of one chat, served (all at once, through the batch path)
/// the next time the worker asks the phone for history of that chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// The chat's JID.
    pub chat: String,
    /// The older messages.
    pub messages: Vec<SimMessage>,
}

/// Op `history_sync`: a history-sync batch ingested at once through the batch path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistorySync {
    /// The messages, any chats, any order.
    pub messages: Vec<SimMessage>,
    /// The phone's estimate of how far history sync is, in percent (0–100), as WhatsApp's
    /// history pages carry it; absent: none given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<u8>,
}

/// Op `set_state`: the session state the sim reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetState {
    /// The new state.
    pub state: SyncState,
}

/// Op `set_account`: who the linked account is, as WhatsApp names it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SetAccount {
    /// The account's phone-number JID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_jid: Option<String>,
    /// The account's LID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lid: Option<String>,
}

/// Op `arm_send_fault`: a fault for the next send only (replacing one armed earlier). With
/// nothing set, the next send is acknowledged at once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSendFault {
    /// Wait this long before transmitting (as a slow media upload): the send is reserved and
    /// handed over, nothing has left yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transmit_delay_ms: Option<u64>,
    /// Fail before transmission (as a failed media upload): nothing is transmitted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_upload: bool,
    /// Transmit, but never acknowledge: the send gives up after `no_ack_wait_ms`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_ack: bool,
    /// With `no_ack`: how long the send waits for the ack (default 10,000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ack_wait_ms: Option<u64>,
    /// Transmit, then acknowledge after this delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_delay_ms: Option<u64>,
    /// Transmit, then fail with a provider error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error_after_transmit: bool,
    /// Transmit (recording it durably), then abort the worker process at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crash_after_transmit: bool,
}

/// One entry of the sim's transmission log (no text, no bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimTransmission {
    /// The recipient chat's JID.
    pub recipient: String,
    /// The WhatsApp message id transmitted.
    pub wa_id: String,
    /// `text`, `image`, `video`, `audio`, `document` or `voice`.
    pub kind: String,
    /// The media type, for media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The media size in bytes, for media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// True for a voice note sent with WhatsApp's PTT flag.
    #[serde(default)]
    pub ptt: bool,
    /// True when a caption went with the media.
    #[serde(default)]
    pub caption: bool,
    /// When it was transmitted.
    pub at: DateTime<Utc>,
}

/// Reply of op `transmissions` (body `{}`): every transmission, oldest first; the log is kept
/// in Postgres, so it survives a crash of the worker.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Transmissions {
    /// The log.
    pub transmissions: Vec<SimTransmission>,
}

/// Every sim op answers with this (or a [`crate::bus::Reply`] error).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SimAck {
    /// How many messages (or items) were stored.
    pub stored: u32,
    /// The opaque ids assigned, in input order, where the op creates messages or chats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_message_round_trips() {
        let m = SimMessage {
            chat: "120363@g.us".into(),
            id: "ABC".into(),
            sender: Some("972501234567@s.whatsapp.net".into()),
            push_name: Some("Dana".into()),
            from_me: false,
            timestamp: "2026-01-02T03:04:05Z".parse().unwrap(),
            kind: MessageType::Image,
            text: "look".into(),
            reply_to: None,
            mentions: vec!["1@s.whatsapp.net".into()],
            attachment: Some(SimAttachment {
                mime_type: "image/jpeg".into(),
                filename: None,
                seconds: None,
                data_base64: Some("AAAA".into()),
                thumbnail_base64: None,
            }),
            edit: false,
        };
        let json = serde_json::to_string(&InjectMessage { message: m.clone() }).unwrap();
        assert!(json.contains("\"type\":\"image\""));
        assert_eq!(
            serde_json::from_str::<InjectMessage>(&json)
                .unwrap()
                .message,
            m
        );
        let f = ArmSendFault {
            no_ack: true,
            no_ack_wait_ms: Some(200),
            ..Default::default()
        };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, r#"{"no_ack":true,"no_ack_wait_ms":200}"#);
        assert_eq!(serde_json::from_str::<ArmSendFault>(&json).unwrap(), f);
        assert!(serde_json::from_str::<ArmSendFault>(r#"{"no_akc":true}"#).is_err());
        let t = Transmissions {
            transmissions: vec![SimTransmission {
                recipient: "1@s.whatsapp.net".into(),
                wa_id: "3EB0".into(),
                kind: "voice".into(),
                mime_type: Some("audio/ogg".into()),
                size: Some(9),
                ptt: true,
                caption: false,
                at: "2026-01-02T03:04:05Z".parse().unwrap(),
            }],
        };
        assert_eq!(
            serde_json::from_str::<Transmissions>(&serde_json::to_string(&t).unwrap()).unwrap(),
            t
        );
        let s = SetState {
            state: SyncState::Offline,
        };
        assert_eq!(
            serde_json::from_str::<SetState>(&serde_json::to_string(&s).unwrap()).unwrap(),
            s
        );
    }
}
