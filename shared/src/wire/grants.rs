//! Read scopes and send permissions of AI connections (DESIGN §4), as stored and as the owner
//! API shows them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Which chats a connection may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ChatSelection {
    /// Every chat (inside the archive policy).
    All,
    /// Only these chat ids.
    Selected {
        /// The chats.
        chats: Vec<String>,
    },
    /// Every chat but these.
    AllExcept {
        /// The chats left out.
        chats: Vec<String>,
    },
}

impl ChatSelection {
    /// True when `chat_id` is selected.
    pub fn allows(&self, chat_id: &str) -> bool {
        match self {
            Self::All => true,
            Self::Selected { chats } => chats.iter().any(|c| c == chat_id),
            Self::AllExcept { chats } => !chats.iter().any(|c| c == chat_id),
        }
    }
}

/// A connection's read scope: chats, and optional dates that bound retrieval (never sending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadScope {
    /// Which chats.
    pub chats: ChatSelection,
    /// Only messages at or after this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Only messages before this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
}

impl ReadScope {
    /// Everything.
    pub fn all() -> Self {
        Self {
            chats: ChatSelection::All,
            since: None,
            until: None,
        }
    }

    /// True when a message of `chat_id` at `ts` is inside this scope.
    pub fn allows(&self, chat_id: &str, ts: DateTime<Utc>) -> bool {
        self.chats.allows(chat_id)
            && self.since.is_none_or(|s| ts >= s)
            && self.until.is_none_or(|u| ts < u)
    }
}

/// Send permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendMode {
    /// No sending.
    None,
    /// Only the listed chats.
    Selected,
    /// Every chat inside the read scope and archive policy.
    All,
}

/// A connection's send permission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendPermission {
    /// The mode.
    pub mode: SendMode,
    /// The chats, for `selected`; empty otherwise.
    pub chats: Vec<String>,
    /// Advances with every accepted edit.
    pub revision: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_round_trips_and_decides() {
        let s = ReadScope {
            chats: ChatSelection::AllExcept {
                chats: vec!["c_1".into()],
            },
            since: Some("2026-01-01T00:00:00Z".parse().unwrap()),
            until: None,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"mode\":\"all_except\""));
        assert_eq!(serde_json::from_str::<ReadScope>(&json).unwrap(), s);
        assert!(!s.allows("c_1", "2026-02-01T00:00:00Z".parse().unwrap()));
        assert!(s.allows("c_2", "2026-02-01T00:00:00Z".parse().unwrap()));
        assert!(!s.allows("c_2", "2025-12-31T00:00:00Z".parse().unwrap()));
        let p = SendPermission {
            mode: SendMode::Selected,
            chats: vec!["c_1".into()],
            revision: 2,
        };
        assert_eq!(
            serde_json::from_str::<SendPermission>(&serde_json::to_string(&p).unwrap()).unwrap(),
            p
        );
    }
}
