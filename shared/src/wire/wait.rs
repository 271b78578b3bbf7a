//! `wait_for_messages` (DESIGN §3 cursor, §5.2): the tool's arguments and result, the opaque
//! cursor, and the one-poll RPC the gateway repeats while it waits. The gateway does the long
//! wait (woken by `<prefix>.events.archive`); the worker answers each poll at once with the
//! messages after the cursor, or none and the position it has scanned up to.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::message::Message;
use crate::bus::Rpc;
use crate::error::RpcError;
use crate::ids::read_account;
use crate::subjects::op;

/// `timeout_seconds` when omitted.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 25;
/// Largest `timeout_seconds`.
pub const MAX_TIMEOUT_SECONDS: u32 = 55;
/// Most messages one call returns; the rest wait for the next call.
pub const MAX_WAIT_MESSAGES: usize = 200;

/// Arguments of `wait_for_messages` (also the body of each poll the gateway sends the worker).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForMessagesRequest {
    /// The `cursor` returned by your previous call, passed back exactly. Omit it on the first
    /// call to wait for messages arriving from now on. With the returned cursor no message is
    /// missed or repeated between calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only messages of this chat: a chat id from list_chats, or a phone number
    /// (`+972501234567`) for the direct chat with that person. Omit for every chat you may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The account to wait on (`default`, `work`, …); omit to use the account the cursor or
    /// `chat_id` names (else the default account). One account per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Only messages addressed to the account's owner: direct messages, @-mentions of them in
    /// groups, and replies to their messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addressed_to_me: Option<bool>,
    /// How long to wait for a message, 1–55 seconds (default 25). Returns as soon as one
    /// arrives; otherwise returns `timed_out: true` after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
}

impl WaitForMessagesRequest {
    /// The wait's length: `timeout_seconds` (default 25), `invalid_argument` outside 1–55.
    pub fn timeout(&self) -> Result<Duration, RpcError> {
        match self.timeout_seconds {
            None => Ok(Duration::from_secs(u64::from(DEFAULT_TIMEOUT_SECONDS))),
            Some(s) if (1..=MAX_TIMEOUT_SECONDS).contains(&s) => {
                Ok(Duration::from_secs(u64::from(s)))
            }
            Some(_) => Err(RpcError::invalid("timeout_seconds", "expected 1–55")),
        }
    }
}

/// Result of `wait_for_messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WaitForMessagesResponse {
    /// The account waited on.
    pub account_id: String,
    /// How many messages are returned.
    pub count: u32,
    /// Messages from other people archived after the cursor, oldest first (at most 200; the
    /// rest come with the next call).
    pub messages: Vec<Message>,
    /// Pass this to the next call to continue exactly after these messages.
    pub cursor: String,
    /// True when no message arrived within `timeout_seconds`.
    pub timed_out: bool,
    /// True when the cursor given belonged to another archive (e.g. the database was
    /// re-created): the wait started from now instead.
    pub cursor_reset: bool,
}

/// One poll's answer: the messages after the cursor (at most [`MAX_WAIT_MESSAGES`]), or none
/// and a cursor at the position scanned up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitPollResponse {
    /// The account polled.
    pub account_id: String,
    /// Messages after the cursor, in archive order.
    pub messages: Vec<Message>,
    /// The cursor to continue from (always usable, also when `messages` is empty).
    pub cursor: String,
    /// The archive position `cursor` stands for; an archive event above it means news.
    pub position: i64,
    /// True when the cursor given belonged to another archive and this poll started from now.
    pub cursor_reset: bool,
}

/// RPC `wait_for_messages`: one poll, answered at once (the gateway waits between polls).
#[derive(Debug)]
pub struct WaitForMessages;
impl Rpc for WaitForMessages {
    const OP: &'static str = op::WAIT_FOR_MESSAGES;
    const DEADLINE: Duration = Duration::from_secs(15);
    type Request = WaitForMessagesRequest;
    type Response = WaitPollResponse;

    fn account(req: &Self::Request) -> Option<&str> {
        let cursor = req.cursor.as_deref().and_then(Cursor::account_of);
        Some(read_account(
            req.account_id.as_deref().or(cursor),
            &[req.chat_id.as_deref()],
        ))
    }
}

/// A decoded cursor: the archive's identity, a message position in it and the account it
/// follows. On the wire it is the opaque string `w1.<archive id, 32 hex digits>.<position>`,
/// then `.<account id>` for every account but the default one (so cursors handed out before
/// there were several accounts still follow the same account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The archive's identity (32 lowercase hex digits).
    pub archive_id: String,
    /// The last position this cursor has seen.
    pub position: i64,
    /// The account whose messages it follows.
    pub account: String,
}

impl Cursor {
    /// The opaque form.
    pub fn encode(&self) -> String {
        let mut s = format!("w1.{}.{}", self.archive_id, self.position);
        if self.account != crate::ids::DEFAULT_ACCOUNT {
            s.push('.');
            s.push_str(&self.account);
        }
        s
    }

    /// The account named in cursor `s` (without parsing the rest), for routing: `None` for the
    /// default account's cursors and for anything else.
    pub fn account_of(s: &str) -> Option<&str> {
        s.strip_prefix("w1.")?.splitn(3, '.').nth(2)
    }

    /// Parse the opaque form; anything else is `invalid_argument` (naming the field only).
    pub fn parse(s: &str) -> Result<Self, RpcError> {
        let bad = || RpcError::invalid("cursor", "not a cursor returned by wait_for_messages");
        let rest = s.strip_prefix("w1.").ok_or_else(bad)?;
        let (archive, rest) = rest.split_once('.').ok_or_else(bad)?;
        let (pos, account) = match rest.split_once('.') {
            None => (rest, crate::ids::DEFAULT_ACCOUNT),
            Some((_, crate::ids::DEFAULT_ACCOUNT)) => return Err(bad()),
            Some((pos, account)) if crate::ids::is_account_id(account) => (pos, account),
            Some(_) => return Err(bad()),
        };
        let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if archive.len() != 32 || !archive.chars().all(hex) {
            return Err(bad());
        }
        if pos.is_empty() || pos.len() > 19 || !pos.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let position: i64 = pos.parse().map_err(|_| bad())?;
        Ok(Self {
            archive_id: archive.to_owned(),
            position,
            account: account.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::wire::message::{MessageType, Sender};

    const ARCHIVE: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = Cursor {
            archive_id: ARCHIVE.into(),
            position: 42,
            account: "default".into(),
        };
        assert_eq!(c.encode(), format!("w1.{ARCHIVE}.42"));
        assert_eq!(Cursor::parse(&c.encode()).unwrap(), c);
        let work = Cursor {
            account: "work".into(),
            ..c.clone()
        };
        assert_eq!(work.encode(), format!("w1.{ARCHIVE}.42.work"));
        assert_eq!(Cursor::account_of(&work.encode()), Some("work"));
        assert_eq!(Cursor::account_of(&c.encode()), None);
        assert_eq!(Cursor::parse(&work.encode()).unwrap(), work);
        for bad in [
            "",
            "w1.",
            "w1.0123.5",
            &format!("w2.{ARCHIVE}.5"),
            &format!("w1.{ARCHIVE}."),
            &format!("w1.{ARCHIVE}.-5"),
            &format!("w1.{ARCHIVE}.5x"),
            &format!("w1.{}.5", ARCHIVE.to_uppercase()),
            &format!("w1.{ARCHIVE}.99999999999999999999"),
            &format!("w1.{ARCHIVE}.5.default"),
            &format!("w1.{ARCHIVE}.5."),
            &format!("w1.{ARCHIVE}.5.Work"),
            &format!("w1.{ARCHIVE}.5.w.k"),
        ] {
            let e = Cursor::parse(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad}");
            assert!(e.message.starts_with("cursor:"));
        }
    }

    #[test]
    fn timeout_is_bounded() {
        let req = |t| WaitForMessagesRequest {
            timeout_seconds: t,
            ..Default::default()
        };
        assert_eq!(req(None).timeout().unwrap(), Duration::from_secs(25));
        assert_eq!(req(Some(1)).timeout().unwrap(), Duration::from_secs(1));
        assert_eq!(req(Some(55)).timeout().unwrap(), Duration::from_secs(55));
        assert!(req(Some(0)).timeout().is_err());
        assert!(req(Some(56)).timeout().is_err());
    }

    #[test]
    fn wait_types_round_trip() {
        let req = WaitForMessagesRequest {
            cursor: Some(format!("w1.{ARCHIVE}.7")),
            chat_id: Some("c_1".into()),
            account_id: None,
            addressed_to_me: Some(true),
            timeout_seconds: Some(3),
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(
            serde_json::from_str::<WaitForMessagesRequest>(&json).unwrap(),
            req
        );
        assert!(serde_json::from_str::<WaitForMessagesRequest>(r#"{"timeout":5}"#).is_err());
        let message = Message {
            message_id: "m_1".into(),
            chat_id: "c_1".into(),
            timestamp: "2026-01-02T03:04:05Z".parse().unwrap(),
            kind: MessageType::Text,
            text: "hi".into(),
            from_me: false,
            sender: Sender {
                name: Some("Ana".into()),
                chat_id: Some("c_1".into()),
            },
            private: false,
            reply_to: None,
            mentions_me: true,
            attachment: None,
            edited: false,
            reactions: vec![],
        };
        let poll = WaitPollResponse {
            account_id: "default".into(),
            messages: vec![message.clone()],
            cursor: format!("w1.{ARCHIVE}.9"),
            position: 9,
            cursor_reset: false,
        };
        let json = serde_json::to_string(&poll).unwrap();
        assert_eq!(
            serde_json::from_str::<WaitPollResponse>(&json).unwrap(),
            poll
        );
        let out = WaitForMessagesResponse {
            account_id: "default".into(),
            count: 1,
            messages: vec![message],
            cursor: poll.cursor.clone(),
            timed_out: false,
            cursor_reset: true,
        };
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v["cursor_reset"], true);
        assert_eq!(v["messages"][0]["mentions_me"], true);
        assert_eq!(
            serde_json::from_value::<WaitForMessagesResponse>(v).unwrap(),
            out
        );
    }
}
