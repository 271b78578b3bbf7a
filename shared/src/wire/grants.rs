//! Read scopes and send permissions of AI connections (DESIGN §4), as stored and as the owner
//! API shows them.

use std::collections::BTreeMap;

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

/// A connection's read scope: the accounts it reads and, in each, which chats and which dates
/// (dates bound retrieval, never sending). `chats`/`since`/`until` are the rule of every
/// account it reads, except those with their own rule in `per_account`. A scope that names no
/// accounts reads the default account only: every scope made before there were several
/// accounts keeps seeing exactly what it saw, and a new account is never shown to an existing
/// connection until the owner says so.
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
    /// Which accounts (absent: the default account only).
    #[serde(default, skip_serializing_if = "AccountSelection::is_default_only")]
    pub accounts: AccountSelection,
    /// Accounts read under a rule of their own instead of the one above.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_account: BTreeMap<String, AccountRule>,
}

/// Which accounts a connection reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum AccountSelection {
    /// Every account, also those added later.
    All,
    /// Only these accounts.
    Only {
        /// The account ids.
        accounts: Vec<String>,
    },
}

impl Default for AccountSelection {
    /// The default account only.
    fn default() -> Self {
        Self::Only {
            accounts: vec![crate::ids::DEFAULT_ACCOUNT.to_owned()],
        }
    }
}

impl AccountSelection {
    /// True for the default account only (the scope's default, left out of its JSON).
    pub fn is_default_only(&self) -> bool {
        *self == Self::default()
    }

    /// True when `account` is selected.
    pub fn includes(&self, account: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only { accounts } => accounts.iter().any(|a| a == account),
        }
    }
}

/// One account's rule: which chats, which dates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRule {
    /// Which chats (of this account).
    pub chats: ChatSelection,
    /// Only messages at or after this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Only messages before this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
}

impl ReadScope {
    /// Every chat of every account, at every date.
    pub fn all() -> Self {
        Self {
            chats: ChatSelection::All,
            since: None,
            until: None,
            accounts: AccountSelection::All,
            per_account: BTreeMap::new(),
        }
    }

    /// The scope of one account it reads, as a one-account scope whose `chats`/`since`/`until`
    /// are that account's rule; `None` when it does not read `account`.
    pub fn in_account(&self, account: &str) -> Option<Self> {
        if !self.accounts.includes(account) {
            return None;
        }
        let (chats, since, until) = match self.per_account.get(account) {
            Some(r) => (r.chats.clone(), r.since, r.until),
            None => (self.chats.clone(), self.since, self.until),
        };
        Some(Self {
            chats,
            since,
            until,
            accounts: AccountSelection::Only {
                accounts: vec![account.to_owned()],
            },
            per_account: BTreeMap::new(),
        })
    }

    /// True when chat `chat_id` (of the account its id names) is inside this scope's chats.
    pub fn allows_chat(&self, chat_id: &str) -> bool {
        self.rule_of(chat_id)
            .is_some_and(|(chats, _, _)| chats.allows(chat_id))
    }

    /// True when a message of `chat_id` at `ts` is inside this scope.
    pub fn allows(&self, chat_id: &str, ts: DateTime<Utc>) -> bool {
        self.rule_of(chat_id).is_some_and(|(chats, since, until)| {
            chats.allows(chat_id) && since.is_none_or(|s| ts >= s) && until.is_none_or(|u| ts < u)
        })
    }

    /// The rule of the account `chat_id` names, when this scope reads it.
    fn rule_of(&self, chat_id: &str) -> Option<Rule<'_>> {
        let account = crate::ids::account_of(chat_id).unwrap_or(crate::ids::DEFAULT_ACCOUNT);
        if !self.accounts.includes(account) {
            return None;
        }
        Some(match self.per_account.get(account) {
            Some(r) => (&r.chats, r.since, r.until),
            None => (&self.chats, self.since, self.until),
        })
    }
}

/// An account's chats and dates, borrowed.
type Rule<'a> = (
    &'a ChatSelection,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

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
            accounts: AccountSelection::default(),
            per_account: BTreeMap::new(),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"mode\":\"all_except\""));
        // The default account only, as every scope stored before there were accounts.
        assert!(!json.contains("accounts"), "{json}");
        assert_eq!(serde_json::from_str::<ReadScope>(&json).unwrap(), s);
        assert!(!s.allows("c_1", "2026-02-01T00:00:00Z".parse().unwrap()));
        assert!(s.allows("c_2", "2026-02-01T00:00:00Z".parse().unwrap()));
        assert!(!s.allows("c_2", "2025-12-31T00:00:00Z".parse().unwrap()));
        assert!(!s.allows("c_2-work", "2026-02-01T00:00:00Z".parse().unwrap()));
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

    #[test]
    fn each_account_it_reads_has_a_rule_and_no_other_is_read() {
        let when: DateTime<Utc> = "2026-02-01T00:00:00Z".parse().unwrap();
        let mut s = ReadScope {
            chats: ChatSelection::AllExcept {
                chats: vec!["c_1".into()],
            },
            since: None,
            until: None,
            accounts: AccountSelection::Only {
                accounts: vec!["default".into(), "work".into()],
            },
            per_account: BTreeMap::new(),
        };
        s.per_account.insert(
            "work".into(),
            AccountRule {
                chats: ChatSelection::Selected {
                    chats: vec!["c_9-work".into()],
                },
                since: Some(when),
                until: None,
            },
        );
        assert!(s.allows_chat("c_2") && !s.allows_chat("c_1"));
        assert!(s.allows_chat("c_9-work") && !s.allows_chat("c_2-work"));
        assert!(!s.allows("c_9-work", "2026-01-01T00:00:00Z".parse().unwrap()));
        assert!(s.allows("c_9-work", when));
        assert!(!s.allows_chat("c_2-home"), "an account it does not read");
        assert!(s.in_account("home").is_none());
        let work = s.in_account("work").unwrap();
        assert_eq!(
            (work.chats.clone(), work.since),
            (s.per_account["work"].chats.clone(), Some(when))
        );
        assert!(
            !work.allows_chat("c_2"),
            "the projection reads its account only"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["accounts"]["mode"], "only");
        assert_eq!(json["per_account"]["work"]["chats"]["mode"], "selected");
        assert_eq!(serde_json::from_value::<ReadScope>(json).unwrap(), s);
        assert!(ReadScope::all().allows_chat("c_2-home"));
    }
}
