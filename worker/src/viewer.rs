//! The authorised caller of one request: which connection, what it may read and where it may
//! send. Built by `grants::authorize` on every request; every read path filters through it.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use wazap_shared::wire::grants::{ReadScope, SendMode, SendPermission};

/// The connection behind a request, with its current scope, permission and the archive policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    /// The connection id.
    pub connection_id: String,
    /// Its read scope.
    pub scope: ReadScope,
    /// Its send permission.
    pub send: SendPermission,
    /// Chats the archive policy excludes (never stored, never returned).
    pub excluded_chats: Vec<String>,
}

impl Viewer {
    /// This viewer inside one account it reads, as every read's SQL applies it (a read covers
    /// one account): `None` when the scope does not read `account` — the caller answers
    /// `account_not_found`, as for one that does not exist. Borrowed unless that account has a
    /// rule of its own: the scope's own rule already answers for its chats.
    pub fn in_account(&self, account: &str) -> Option<Cow<'_, Viewer>> {
        if !self.scope.per_account.contains_key(account) {
            return self
                .scope
                .accounts
                .includes(account)
                .then_some(Cow::Borrowed(self));
        }
        let scope = self.scope.in_account(account)?;
        Some(Cow::Owned(Viewer {
            scope,
            ..self.clone()
        }))
    }

    /// True when the chat is readable: of an account the scope reads, inside that account's
    /// chat selection, and not excluded.
    pub fn can_read_chat(&self, chat_id: &str) -> bool {
        self.scope.allows_chat(chat_id) && !self.excluded_chats.iter().any(|c| c == chat_id)
    }

    /// True when a message of `chat_id` at `ts` is readable.
    pub fn can_read(&self, chat_id: &str, ts: DateTime<Utc>) -> bool {
        self.can_read_chat(chat_id) && self.scope.allows(chat_id, ts)
    }

    /// True when the send permission covers `chat_id` (inside the read scope's chats and the
    /// archive policy; `all` extends neither).
    pub fn may_send_to(&self, chat_id: &str) -> bool {
        self.can_read_chat(chat_id)
            && match self.send.mode {
                SendMode::None => false,
                SendMode::All => true,
                SendMode::Selected => self.send.chats.iter().any(|c| c == chat_id),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wazap_shared::wire::grants::ChatSelection;

    fn viewer(mode: SendMode, chats: &[&str], scope: ChatSelection) -> Viewer {
        Viewer {
            connection_id: "conn_1".into(),
            scope: ReadScope {
                chats: scope,
                since: None,
                until: None,
                ..ReadScope::all()
            },
            send: SendPermission {
                mode,
                chats: chats.iter().map(|c| c.to_string()).collect(),
                revision: 0,
            },
            excluded_chats: vec!["c_x".into()],
        }
    }

    #[test]
    fn send_never_extends_read_scope_or_policy() {
        let v = viewer(
            SendMode::All,
            &[],
            ChatSelection::Selected {
                chats: vec!["c_1".into(), "c_x".into()],
            },
        );
        assert!(v.may_send_to("c_1"));
        assert!(!v.may_send_to("c_2"));
        assert!(!v.may_send_to("c_x"));
        let v = viewer(SendMode::Selected, &["c_2"], ChatSelection::All);
        assert!(v.may_send_to("c_2"));
        assert!(!v.may_send_to("c_3"));
        let v = viewer(SendMode::None, &[], ChatSelection::All);
        assert!(!v.may_send_to("c_2"));
        assert!(v.can_read_chat("c_2"));
        assert!(!v.can_read_chat("c_x"));
    }
}
