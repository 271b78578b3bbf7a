//! What the owner's sends page shows (`owner_recent_sends`): the send journal's rows and the
//! send attempts the worker refused, each by connection and chat, never with a body.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `owner_recent_sends`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendsRequest {
    /// At most this many rows of each list (1–200, default 50), newest first.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only this connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    /// Only this chat's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// One send journal row (never a body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRow {
    /// The connection that sent.
    pub connection_id: String,
    /// Its name.
    pub connection_name: String,
    /// The caller's idempotency key.
    pub request_id: String,
    /// `send_message`, `send_media` or `send_voice_note`.
    pub tool: String,
    /// The chat.
    pub chat_id: String,
    /// Its name as the owner knows it.
    pub chat_name: String,
    /// `reserved`, `transmitting`, `accepted`, `outcome_unknown` or `failed`.
    pub state: String,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When its state last changed.
    pub updated_at: DateTime<Utc>,
}

/// A send the worker refused before journaling it: to a chat that exists but which the
/// connection may not send to, or may not even read. Nothing of what was to be sent is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedSend {
    /// The connection that tried.
    pub connection_id: String,
    /// Its name.
    pub connection_name: String,
    /// The tool it called; absent for a media send refused at its pre-check, before the
    /// gateway stored any bytes (the tool is not known there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The chat.
    pub chat_id: String,
    /// Its name as the owner knows it.
    pub chat_name: String,
    /// `send_not_permitted` (the chat is readable, the send permission does not cover it) or
    /// `chat_out_of_scope` (outside the read scope or the archive policy; the agent was
    /// answered `chat_not_found`).
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `owner_recent_sends`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendsPage {
    /// Newest first.
    pub sends: Vec<SendRow>,
    /// Refused attempts, newest first.
    #[serde(default)]
    pub refused: Vec<RefusedSend>,
}
