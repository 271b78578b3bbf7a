//! The owner API over NATS (DESIGN §6): what the owner listener asks the worker on the owner's
//! behalf.
//!
//! Owner ops carry no bearer grant. Each request is an [`OwnerCall`]: the session id from the
//! owner's cookie and, for writes, the `X-CSRF-Token` the page sent; the worker checks both
//! (sessions and their CSRF tokens live in Postgres), so any gateway serves any owner request.
//! Answers are [`OwnerAnswer`]: the op's value, or one of the two refusals the gateway turns into HTTP
//! 403 (CSRF) and 409 (stale revision) without inventing error codes beyond DESIGN §7.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::SyncState;
use super::grants::{ReadScope, SendMode, SendPermission};
pub use super::owner_sends::{RefusedSend, SendRow, SendsPage, SendsRequest};
use crate::bus::Rpc;
use crate::grant::ConnectionKind;
use crate::subjects::op;

/// How long the gateway waits for an owner op (login hashes a password: ~50 ms).
const OWNER_DEADLINE: Duration = Duration::from_secs(10);

/// One owner request: the session it runs in, the CSRF token for writes, and the op's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerCall<T> {
    /// The session id from the cookie (`None`: no cookie).
    pub session: Option<String>,
    /// The `X-CSRF-Token` header, for writes.
    pub csrf: Option<String>,
    /// The op's own request.
    pub body: T,
}

/// An owner op's answer when the session was valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerAnswer<T> {
    /// Done.
    Done(T),
    /// A write without the session's CSRF token (HTTP 403).
    CsrfRejected,
    /// A revision the editor saw is no longer current; nothing changed (HTTP 409).
    Stale,
}

macro_rules! owner_op {
    // `connector`: an op carried out by the connector of the account its body names, which goes
    // to the worker serving that account; the others go to any worker.
    ($(#[$doc:meta])* $name:ident, $op:expr, $req:ty, $resp:ty $(, $connector:ident)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
        impl Rpc for $name {
            const OP: &'static str = $op;
            const DEADLINE: Duration = OWNER_DEADLINE;
            type Request = OwnerCall<$req>;
            type Response = OwnerAnswer<$resp>;
            $(
                fn account(req: &Self::Request) -> Option<&str> {
                    owner_op!(@$connector req)
                }
            )?
        }
    };
    (@connector $req:ident) => {
        Some($req.body.account())
    };
}

/// Nothing to send.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

/// `owner_login`: the password (the call's `session` is the old one, deleted at login) and where
/// the login came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginRequest {
    /// The owner password.
    pub password: String,
    /// The peer address of the owner listener's connection (never a forwarded header), which the
    /// worker's failed-login throttle counts per source when it believes the gateway; `None`
    /// from a gateway that does not say (counted as the one unknown source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<std::net::IpAddr>,
}

/// A session as the gateway needs it: the cookie value (only at login) and the CSRF token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The new session id, set as the cookie; `None` except at login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The CSRF token bound to the session.
    pub csrf: String,
    /// When the session ends at the latest.
    pub expires_at: DateTime<Utc>,
}

/// A connection as the owner API shows it (DESIGN §6 `GET /api/connections`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerConnection {
    /// `conn_…`.
    pub id: String,
    /// The owner's label.
    pub name: String,
    /// `local` or `remote`.
    pub kind: ConnectionKind,
    /// The credential revision.
    pub revision: u32,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
    /// When it was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// What it may read.
    pub read_scope: ReadScope,
    /// Where it may send.
    pub send_permission: SendPermission,
    /// The OAuth client it was approved for (its client id), when it came from the consent
    /// page rather than `connection create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_client: Option<String>,
}

/// `owner_list_connections`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionList {
    /// Oldest first.
    pub connections: Vec<OwnerConnection>,
}

/// `owner_create_connection`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateConnectionRequest {
    /// A label, 1–100 characters.
    pub name: String,
    /// `local` or `remote`.
    pub kind: ConnectionKind,
    /// When it stops working (required, in the future).
    pub expires_at: DateTime<Utc>,
    /// What it may read.
    pub read_scope: ReadScope,
}

/// A connection with its new token, shown once (create, rotate, scope edit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedConnection {
    /// The connection after the change.
    pub connection: OwnerConnection,
    /// The bearer token of its current revision; never stored, never shown again.
    pub token: String,
}

/// `owner_rotate_connection`: a new credential revision (old tokens stop working, send
/// permission resets to `none`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotateRequest {
    /// The connection.
    pub id: String,
    /// The credential revision the owner saw.
    pub revision: u32,
}

/// `owner_set_read_scope`: a new read scope, which is a new credential revision too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadScopeRequest {
    /// The connection.
    pub id: String,
    /// The credential revision the owner saw.
    pub revision: u32,
    /// The new scope.
    pub read_scope: ReadScope,
}

/// `owner_revoke_connection`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeRequest {
    /// The connection.
    pub id: String,
}

/// `owner_set_send_permission` (DESIGN §6 `POST /api/connections/send-permission`). Without
/// `mode` it is the older body: non-empty `chats` = selected, empty = none, and no send-revision
/// check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendPermissionRequest {
    /// The connection.
    pub id: String,
    /// The credential revision the owner saw.
    pub revision: u32,
    /// The new mode; absent in the older body.
    #[serde(default)]
    pub mode: Option<SendMode>,
    /// The chats for `selected`; `[]` otherwise.
    pub chats: Vec<String>,
    /// The send revision the owner saw; required with `mode`.
    #[serde(default)]
    pub expected_send_revision: Option<u32>,
}

/// `owner_list_chats`: chats for the permissions editor and the policy page, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatsRequest {
    /// Only chats this connection may read (and the policy allows); all chats when absent.
    #[serde(default)]
    pub connection_id: Option<String>,
    /// Only chats of this account (`account_not_found` when the registry has no such
    /// account); every account's when absent. The read-scope editor picks per account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Words the name (or phone number) must contain, case-insensitive.
    #[serde(default)]
    pub query: String,
    /// Chats to skip.
    #[serde(default)]
    pub offset: u32,
    /// Page size (1–200, default 50).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Chat ids to name regardless of the page (e.g. the selected ones).
    #[serde(default)]
    pub named: Vec<String>,
}

/// One chat in an owner list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerChat {
    /// The opaque chat id.
    pub id: String,
    /// Its name as the owner knows it.
    pub name: String,
    /// `direct` or `group`.
    pub kind: String,
}

/// `owner_list_chats`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatPage {
    /// This page.
    pub chats: Vec<OwnerChat>,
    /// How many chats match in all.
    pub total: u32,
    /// The chats of [`ChatsRequest::named`] that exist, in any order.
    pub named: Vec<OwnerChat>,
}

/// The archive policy (DESIGN §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Chats never stored nor returned.
    pub excluded_chats: Vec<String>,
    /// Advances with each change.
    pub revision: u32,
}

/// `owner_set_policy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetPolicyRequest {
    /// The full new list of excluded chats.
    pub excluded_chats: Vec<String>,
    /// The policy revision the owner saw.
    pub revision: u32,
}

/// The linked account as the account page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    /// The account (`default`).
    pub account_id: String,
    /// The session state.
    pub state: SyncState,
    /// The QR payload to draw, while one is live; it never leaves the owner's page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qr: Option<String>,
    /// When the QR payload expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qr_expires_at: Option<DateTime<Utc>>,
    /// The pairing code to type on the phone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing_code: Option<String>,
    /// A short human explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Caveats about the archive the owner should know now (e.g. it cannot be written), in
    /// the same words the read tools' `notes` use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `owner_account`: which account (absent: `default`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRef {
    /// The account id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
}

impl AccountRef {
    /// The account meant: the one named, else `default`.
    pub fn account(&self) -> &str {
        self.account_id
            .as_deref()
            .unwrap_or(crate::ids::DEFAULT_ACCOUNT)
    }
}

/// `owner_account_action`: an action on an account (absent: `default`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountActionCall {
    /// Which account (`account_id`).
    #[serde(flatten)]
    pub account: AccountRef,
    /// What to do.
    #[serde(flatten)]
    pub action: AccountActionRequest,
}

impl AccountActionCall {
    /// The account meant ([`AccountRef::account`]).
    pub fn account(&self) -> &str {
        self.account.account()
    }
}

/// An owner action on an account's connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum AccountActionRequest {
    /// Stop the connection until resumed.
    Pause,
    /// Reconnect after a pause.
    Resume,
    /// Log the device out.
    Unlink,
    /// Start QR pairing.
    PairWithQr,
    /// Ask for a pairing code for this phone number.
    PairWithCode {
        /// Digits with country code.
        phone: String,
    },
}

owner_op!(
    /// RPC `owner_login`: check the password (throttled), start a new session.
    OwnerLogin, op::OWNER_LOGIN, LoginRequest, SessionInfo
);
owner_op!(
    /// RPC `owner_logout`: end the session.
    OwnerLogout, op::OWNER_LOGOUT, Empty, Empty
);
owner_op!(
    /// RPC `owner_session`: the session's CSRF token (for pages), or `unauthenticated`.
    OwnerSession, op::OWNER_SESSION, Empty, SessionInfo
);
owner_op!(
    /// RPC `owner_list_connections`.
    OwnerListConnections, op::OWNER_LIST_CONNECTIONS, Empty, ConnectionList
);
owner_op!(
    /// RPC `owner_create_connection`.
    OwnerCreateConnection, op::OWNER_CREATE_CONNECTION, CreateConnectionRequest, IssuedConnection
);
owner_op!(
    /// RPC `owner_rotate_connection`.
    OwnerRotateConnection, op::OWNER_ROTATE_CONNECTION, RotateRequest, IssuedConnection
);
owner_op!(
    /// RPC `owner_set_read_scope`.
    OwnerSetReadScope, op::OWNER_SET_READ_SCOPE, ReadScopeRequest, IssuedConnection
);
owner_op!(
    /// RPC `owner_revoke_connection`.
    OwnerRevokeConnection, op::OWNER_REVOKE_CONNECTION, RevokeRequest, Empty
);
owner_op!(
    /// RPC `owner_set_send_permission`.
    OwnerSetSendPermission, op::OWNER_SET_SEND_PERMISSION, SendPermissionRequest, SendPermission
);
owner_op!(
    /// RPC `owner_list_chats`.
    OwnerListChats, op::OWNER_LIST_CHATS, ChatsRequest, ChatPage
);
owner_op!(
    /// RPC `owner_policy`.
    OwnerPolicy, op::OWNER_POLICY, Empty, Policy
);
owner_op!(
    /// RPC `owner_set_policy`.
    OwnerSetPolicy, op::OWNER_SET_POLICY, SetPolicyRequest, Policy
);
owner_op!(
    /// RPC `owner_account`.
    OwnerAccount, op::OWNER_ACCOUNT, AccountRef, AccountView, connector
);
owner_op!(
    /// RPC `owner_account_action`.
    OwnerAccountAction, op::OWNER_ACCOUNT_ACTION, AccountActionCall, AccountView, connector
);
owner_op!(
    /// RPC `owner_recent_sends`.
    OwnerRecentSends, op::OWNER_RECENT_SENDS, SendsRequest, SendsPage
);
owner_op!(
    /// RPC `owner_list_accounts`.
    OwnerListAccounts, op::OWNER_LIST_ACCOUNTS, Empty, super::accounts::AccountList
);
owner_op!(
    /// RPC `owner_add_account`.
    OwnerAddAccount, op::OWNER_ADD_ACCOUNT, super::accounts::AddAccountRequest,
    super::accounts::AccountSummary
);
owner_op!(
    /// RPC `owner_remove_account`.
    OwnerRemoveAccount, op::OWNER_REMOVE_ACCOUNT, super::accounts::RemoveAccountRequest,
    super::accounts::RemovedAccount
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_send_permission_body_parses_and_unknown_fields_do_not() {
        let legacy: SendPermissionRequest =
            serde_json::from_str(r#"{"id":"conn_1","revision":0,"chats":["c_1"]}"#).unwrap();
        assert_eq!(legacy.mode, None);
        assert_eq!(legacy.expected_send_revision, None);
        let full: SendPermissionRequest = serde_json::from_str(
            r#"{"id":"conn_1","revision":0,"mode":"all","chats":[],"expected_send_revision":3}"#,
        )
        .unwrap();
        assert_eq!(full.mode, Some(SendMode::All));
        assert!(
            serde_json::from_str::<SendPermissionRequest>(
                r#"{"id":"conn_1","revision":0,"chats":[],"extra":1}"#
            )
            .is_err()
        );
        let stale: OwnerAnswer<Empty> = serde_json::from_str(r#""stale""#).unwrap();
        assert_eq!(stale, OwnerAnswer::Stale);
        let action: AccountActionRequest =
            serde_json::from_str(r#"{"action":"pair_with_code","phone":"972501234567"}"#).unwrap();
        assert!(matches!(action, AccountActionRequest::PairWithCode { .. }));
    }
}
