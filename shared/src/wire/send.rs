//! The send tools (DESIGN §5 "Send tools", §8): tool inputs, the RPC bodies the worker receives
//! (media bytes travel through the JetStream object store, never in an RPC body), and the one
//! result every send answers with.

use std::time::Duration;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bus::Rpc;
use crate::ids::read_account;
use crate::subjects::op;

/// Longest `text` of `send_message`, in characters.
pub const MAX_TEXT_CHARS: usize = 65_536;
/// Largest media, decoded.
pub const MAX_MEDIA_BYTES: usize = 8 * 1024 * 1024;
/// Deadline of every send op.
pub const SEND_DEADLINE: Duration = Duration::from_secs(60);

/// Arguments of `send_message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageRequest {
    /// The opaque chat id from list_chats (never a phone number).
    pub chat_id: String,
    /// Your unique id for this intended send (1–128 of `A-Za-z0-9._:-`). Retrying with the same
    /// id and text never sends twice: it returns the saved outcome.
    pub request_id: String,
    /// The text to send, 1–65,536 characters.
    pub text: String,
}

/// What kind of media `send_media` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// JPEG or PNG.
    Image,
    /// MP4.
    Video,
    /// Ogg/Opus, MP3 or MP4 audio (no caption).
    Audio,
    /// `application/*` or `text/*` with a plain file name.
    Document,
}

/// Arguments of `send_media` (as the agent sends them to the gateway).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMediaRequest {
    /// The opaque chat id from list_chats (never a phone number).
    pub chat_id: String,
    /// Your unique id for this intended send; a retry with the same id never sends twice.
    pub request_id: String,
    /// `image`, `video`, `audio` or `document`.
    pub kind: MediaKind,
    /// The file, standard padded base64 (no `data:` prefix, no whitespace), at most 8 MiB decoded.
    pub data_base64: String,
    /// Its media type; must match the bytes (e.g. `image/jpeg`, `video/mp4`, `audio/ogg`).
    pub mime_type: String,
    /// A plain file name (documents), no path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// A caption (not for audio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Duration in seconds (audio, video).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
}

/// Arguments of `send_voice_note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendVoiceNoteRequest {
    /// The opaque chat id from list_chats (never a phone number).
    pub chat_id: String,
    /// Your unique id for this intended send; a retry with the same id never sends twice.
    pub request_id: String,
    /// Ogg/Opus audio, standard padded base64, at most 8 MiB decoded.
    pub data_base64: String,
    /// Its duration, 1–3600 seconds.
    pub seconds: u32,
}

/// Arguments of `get_send_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSendStatusRequest {
    /// The `request_id` of an earlier send by this connection.
    pub request_id: String,
}

/// Where media bytes wait between gateway and worker: an object in the JetStream object store
/// bucket [`crate::subjects::Subjects::media_bucket`] (a send's bytes, named by their SHA-256)
/// or [`crate::subjects::Subjects::attachment_bucket`] (`get_attachment`'s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaRef {
    /// The object's name (lowercase hex SHA-256 of the bytes).
    pub object: String,
    /// The size in bytes.
    pub size: u64,
}

/// RPC body of `send_media`: the request with its bytes replaced by a [`MediaRef`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendMediaRpc {
    /// The chat.
    pub chat_id: String,
    /// The caller's request id.
    pub request_id: String,
    /// The media kind.
    pub kind: MediaKind,
    /// Where the bytes are.
    pub media: MediaRef,
    /// The validated media type.
    pub mime_type: String,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Caption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
}

/// RPC body of `send_voice_note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendVoiceRpc {
    /// The chat.
    pub chat_id: String,
    /// The caller's request id.
    pub request_id: String,
    /// Where the Ogg/Opus bytes are.
    pub media: MediaRef,
    /// Duration, 1–3600 s.
    pub seconds: u32,
}

/// The outcome of a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    /// WhatsApp acknowledged it, recorded durably before this answer.
    Accepted,
    /// It may or may not have been delivered (crash, timeout or error after hand-over). The same
    /// `request_id` never transmits again: check the chat before sending anything new.
    OutcomeUnknown,
    /// It failed before transmission; nothing was sent.
    Failed,
}

/// The result of every send tool and `get_send_status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SendResult {
    /// The caller's request id.
    pub request_id: String,
    /// The chat.
    pub chat_id: String,
    /// `accepted`, `outcome_unknown` or `failed`.
    pub state: SendState,
    /// The message id, when one was allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// True when this is a saved outcome of an earlier call with the same `request_id`.
    pub duplicate: bool,
    /// When WhatsApp acknowledged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_at: Option<DateTime<Utc>>,
}

/// RPC `send_message`.
#[derive(Debug)]
pub struct SendMessage;
impl Rpc for SendMessage {
    const OP: &'static str = op::SEND_MESSAGE;
    const DEADLINE: Duration = SEND_DEADLINE;
    const MAY_TRANSMIT: bool = true;
    type Request = SendMessageRequest;
    type Response = SendResult;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(None, &[Some(&req.chat_id)]))
    }
}

/// RPC `send_media`.
#[derive(Debug)]
pub struct SendMedia;
impl Rpc for SendMedia {
    const OP: &'static str = op::SEND_MEDIA;
    const DEADLINE: Duration = SEND_DEADLINE;
    const MAY_TRANSMIT: bool = true;
    type Request = SendMediaRpc;
    type Response = SendResult;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(None, &[Some(&req.chat_id)]))
    }
}

/// RPC `send_voice_note`.
#[derive(Debug)]
pub struct SendVoiceNote;
impl Rpc for SendVoiceNote {
    const OP: &'static str = op::SEND_VOICE_NOTE;
    const DEADLINE: Duration = SEND_DEADLINE;
    const MAY_TRANSMIT: bool = true;
    type Request = SendVoiceRpc;
    type Response = SendResult;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(None, &[Some(&req.chat_id)]))
    }
}

/// Body of `send_check`: may the caller send media to `chat_id` now? A gateway asks before it
/// stores a media send's bytes, so a credential that may not send there stores nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendCheckRequest {
    /// The chat.
    pub chat_id: String,
}

/// The answer of `send_check` when the send may go ahead (a refusal is its error code).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendCheckResponse {}

/// RPC `send_check`.
#[derive(Debug)]
pub struct SendCheck;
impl Rpc for SendCheck {
    const OP: &'static str = op::SEND_CHECK;
    const DEADLINE: Duration = Duration::from_secs(10);
    type Request = SendCheckRequest;
    type Response = SendCheckResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        Some(read_account(None, &[Some(&req.chat_id)]))
    }
}

/// RPC `get_send_status`.
#[derive(Debug)]
pub struct GetSendStatus;
impl Rpc for GetSendStatus {
    const OP: &'static str = op::GET_SEND_STATUS;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = GetSendStatusRequest;
    type Response = SendResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_types_round_trip() {
        let r = SendResult {
            request_id: "r-1".into(),
            chat_id: "c_1".into(),
            state: SendState::OutcomeUnknown,
            message_id: Some("m_1".into()),
            duplicate: true,
            accepted_at: None,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"state\":\"outcome_unknown\""));
        assert_eq!(serde_json::from_str::<SendResult>(&json).unwrap(), r);
        let m = SendMediaRpc {
            chat_id: "c_1".into(),
            request_id: "r".into(),
            kind: MediaKind::Document,
            media: MediaRef {
                object: "ab".into(),
                size: 2,
            },
            mime_type: "application/pdf".into(),
            filename: Some("a.pdf".into()),
            caption: None,
            seconds: None,
        };
        assert_eq!(
            serde_json::from_str::<SendMediaRpc>(&serde_json::to_string(&m).unwrap()).unwrap(),
            m
        );
        let v = SendVoiceRpc {
            chat_id: "c".into(),
            request_id: "r".into(),
            media: m.media.clone(),
            seconds: 3,
        };
        assert_eq!(
            serde_json::from_str::<SendVoiceRpc>(&serde_json::to_string(&v).unwrap()).unwrap(),
            v
        );
        assert!(
            serde_json::from_str::<SendMessageRequest>(
                r#"{"chat_id":"c","request_id":"r","text":"t","x":1}"#
            )
            .is_err()
        );
    }
}
