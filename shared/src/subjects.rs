//! Every NATS subject wazap uses, built in one place from the deployment's prefix.

/// The op names of `<prefix>.rpc.<op>`; one per tool or route.
pub mod op {
    /// The worker's public signing keys (JWKS), fetched by gateways.
    pub const JWKS: &str = "jwks";
    /// A cheap liveness probe of the worker, used by `/readyz`.
    pub const PING: &str = "ping";
    /// `list_chats`.
    pub const LIST_CHATS: &str = "list_chats";
    /// `search_contacts`.
    pub const SEARCH_CONTACTS: &str = "search_contacts";
    /// `search_groups`.
    pub const SEARCH_GROUPS: &str = "search_groups";
    /// `read_messages`.
    pub const READ_MESSAGES: &str = "read_messages";
    /// `wait_for_messages` (one poll; the gateway waits between polls).
    pub const WAIT_FOR_MESSAGES: &str = "wait_for_messages";
    /// `send_message`.
    pub const SEND_MESSAGE: &str = "send_message";
    /// `send_media`.
    pub const SEND_MEDIA: &str = "send_media";
    /// `send_voice_note`.
    pub const SEND_VOICE_NOTE: &str = "send_voice_note";
    /// `get_send_status`.
    pub const GET_SEND_STATUS: &str = "get_send_status";
    /// `send_check`: whether a media send may go ahead, asked before its bytes are stored.
    pub const SEND_CHECK: &str = "send_check";
    /// `search_messages`.
    pub const SEARCH_MESSAGES: &str = "search_messages";
    /// `search_attachments`.
    pub const SEARCH_ATTACHMENTS: &str = "search_attachments";
    /// `get_attachment`.
    pub const GET_ATTACHMENT: &str = "get_attachment";
    /// Owner dashboard/API ops (DESIGN §6): a session, not a grant; see `wire::owner`.
    pub const OWNER_LOGIN: &str = "owner_login";
    /// End an owner session.
    pub const OWNER_LOGOUT: &str = "owner_logout";
    /// An owner session's CSRF token.
    pub const OWNER_SESSION: &str = "owner_session";
    /// List AI connections.
    pub const OWNER_LIST_CONNECTIONS: &str = "owner_list_connections";
    /// Create an AI connection (token shown once).
    pub const OWNER_CREATE_CONNECTION: &str = "owner_create_connection";
    /// Rotate a connection's credential.
    pub const OWNER_ROTATE_CONNECTION: &str = "owner_rotate_connection";
    /// Change a connection's read scope.
    pub const OWNER_SET_READ_SCOPE: &str = "owner_set_read_scope";
    /// Revoke a connection.
    pub const OWNER_REVOKE_CONNECTION: &str = "owner_revoke_connection";
    /// Set a connection's send permission.
    pub const OWNER_SET_SEND_PERMISSION: &str = "owner_set_send_permission";
    /// Chats by name for the owner's editors.
    pub const OWNER_LIST_CHATS: &str = "owner_list_chats";
    /// The archive policy.
    pub const OWNER_POLICY: &str = "owner_policy";
    /// Change the archive policy.
    pub const OWNER_SET_POLICY: &str = "owner_set_policy";
    /// The linked account's state and pairing.
    pub const OWNER_ACCOUNT: &str = "owner_account";
    /// Pause, resume, unlink or pair the account.
    pub const OWNER_ACCOUNT_ACTION: &str = "owner_account_action";
    /// Recent send journal rows.
    pub const OWNER_RECENT_SENDS: &str = "owner_recent_sends";
    /// The account registry.
    pub const OWNER_LIST_ACCOUNTS: &str = "owner_list_accounts";
    /// Add an account.
    pub const OWNER_ADD_ACCOUNT: &str = "owner_add_account";
    /// Remove an account (keeping or deleting its archive).
    pub const OWNER_REMOVE_ACCOUNT: &str = "owner_remove_account";
    /// A pending OAuth authorization request, for the consent page.
    pub const OWNER_OAUTH_REQUEST: &str = "owner_oauth_request";
    /// The owner's decision on a pending OAuth authorization request.
    pub const OWNER_OAUTH_DECIDE: &str = "owner_oauth_decide";
    /// OAuth (#28, `wire::oauth`): Dynamic Client Registration.
    pub const OAUTH_REGISTER: &str = "oauth_register";
    /// OAuth: check and keep an authorization request.
    pub const OAUTH_AUTHORIZE: &str = "oauth_authorize";
    /// OAuth: the token endpoint.
    pub const OAUTH_TOKEN: &str = "oauth_token";
    /// OAuth: the revocation endpoint.
    pub const OAUTH_REVOKE: &str = "oauth_revoke";
}

/// The op names of `<prefix>.sim.<op>` (only served with `WAZAP_CONNECTOR=sim`).
pub mod sim_op {
    /// Inject one inbound (or own, `from_me`) message through the live path.
    pub const INJECT_MESSAGE: &str = "inject_message";
    /// Inject a status story.
    pub const INJECT_STORY: &str = "inject_story";
    /// Add or update a contact.
    pub const UPSERT_CONTACT: &str = "upsert_contact";
    /// Add or update a group.
    pub const UPSERT_GROUP: &str = "upsert_group";
    /// Queue a page of older history, served when the phone is asked for it.
    pub const HISTORY_PAGE: &str = "history_page";
    /// Ingest a history-sync batch at once, through the batch path.
    pub const HISTORY_SYNC: &str = "history_sync";
    /// Set the session state.
    pub const SET_STATE: &str = "set_state";
    /// Set the account's own phone JID and/or LID (so @-mentions of it count as `mentions_me`).
    pub const SET_ACCOUNT: &str = "set_account";
    /// Arm a fault for the next send (`fail_upload`, `no_ack`, `ack_delay_ms`,
    /// `error_after_transmit`, `crash_after_transmit`).
    pub const ARM_SEND_FAULT: &str = "arm_send_fault";
    /// Read the transmission log (what the sim "sent").
    pub const TRANSMISSIONS: &str = "transmissions";
}

/// The account token of rpc subjects for requests about no account ([`Subjects::rpc`]); not
/// an account id, since those take no `_`.
pub const ANY_ACCOUNT: &str = "_any";

/// Subject builder for one deployment prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    /// Subjects under `prefix` (e.g. `wazap`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The prefix these subjects live under.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `<prefix>.rpc.<account>.<op>`: a request about `account` goes to the worker that owns
    /// it; one about no account (`None`: the owner API, the registry, JWKS, `ping`, a send's
    /// status) to `<prefix>.rpc._any.<op>`, which any worker answers. `account` is expected to
    /// be an account id; anything else (it cannot be a subject token) goes to `_any`, where the
    /// worker refuses it as it would anywhere.
    pub fn rpc(&self, account: Option<&str>, op: &str) -> String {
        let account = account
            .filter(|a| crate::ids::is_account_id(a))
            .unwrap_or(ANY_ACCOUNT);
        format!("{}.rpc.{account}.{op}", self.prefix)
    }

    /// `<prefix>.rpc.<account>.>`: every request about `account` ([`ANY_ACCOUNT`] for those
    /// about none).
    pub fn rpc_account(&self, account: &str) -> String {
        format!("{}.rpc.{account}.>", self.prefix)
    }

    /// The account token ([`ANY_ACCOUNT`] or an account id) and the op of an rpc subject under
    /// this prefix, if it is one.
    pub fn rpc_route<'a>(&self, subject: &'a str) -> Option<(&'a str, &'a str)> {
        let rest = self.op_of(subject, "rpc")?;
        let (account, op) = rest.split_once('.')?;
        (!account.is_empty() && !op.is_empty() && !op.contains('.')).then_some((account, op))
    }

    /// `<prefix>.rpc.>`: every request, of every account.
    pub fn rpc_all(&self) -> String {
        format!("{}.rpc.>", self.prefix)
    }

    /// `<prefix>.sim.default.<op>`: sim op `op` on the default account.
    pub fn sim(&self, op: &str) -> String {
        self.sim_of(crate::ids::DEFAULT_ACCOUNT, op)
    }

    /// `<prefix>.sim.<account>.<op>`: sim op `op` on `account`, answered by the worker that
    /// owns it.
    pub fn sim_of(&self, account: &str, op: &str) -> String {
        format!("{}.sim.{account}.{op}", self.prefix)
    }

    /// `<prefix>.sim.<account>.>`.
    pub fn sim_account(&self, account: &str) -> String {
        format!("{}.sim.{account}.>", self.prefix)
    }

    /// `<prefix>.events.archive.<account>`: "`account`'s archive advanced to position P"
    /// (each account numbers its own messages).
    pub fn archive_events_of(&self, account: &str) -> String {
        format!("{}.events.archive.{account}", self.prefix)
    }

    /// `<prefix>.events.archive.>`: every account's archive events.
    pub fn archive_events(&self) -> String {
        format!("{}.events.archive.>", self.prefix)
    }

    /// The account of an archive event's subject, if it is one under this prefix.
    pub fn archive_event_account<'a>(&self, subject: &'a str) -> Option<&'a str> {
        let rest = self.op_of(subject, "events")?;
        let account = rest.strip_prefix("archive.")?;
        (!account.is_empty() && !account.contains('.')).then_some(account)
    }

    /// The JetStream object-store bucket where a send's media bytes wait from a gateway to the
    /// worker (bucket names take no dots). Gateways put into it and cannot read it; the worker
    /// reads and deletes (`deploy/nats.conf`).
    pub fn media_bucket(&self) -> String {
        format!("{}-media", self.prefix.replace('.', "_"))
    }

    /// The bucket where `get_attachment`'s bytes wait from the worker to a gateway: the worker
    /// puts, gateways read and delete. Apart from [`Self::media_bucket`] so that a gateway's
    /// credentials read nothing another gateway sent.
    pub fn attachment_bucket(&self) -> String {
        format!("{}-attachments", self.prefix.replace('.', "_"))
    }

    /// The reply-inbox prefix of this deployment's gateways (`_INBOX.<prefix>.gateway`): their
    /// requests' replies, JetStream's answers included, come to subjects under it, so a server
    /// can let only the gateway user subscribe there.
    pub fn gateway_inbox(&self) -> String {
        format!("_INBOX.{}.gateway", self.prefix)
    }

    /// The worker's reply-inbox prefix (`_INBOX.<prefix>.worker`).
    pub fn worker_inbox(&self) -> String {
        format!("_INBOX.{}.worker", self.prefix)
    }

    /// The op of an rpc or sim subject under this prefix, if it is one.
    pub fn op_of<'a>(&self, subject: &'a str, kind: &str) -> Option<&'a str> {
        subject
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix('.')?
            .strip_prefix(kind)?
            .strip_prefix('.')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_parses_subjects() {
        let s = Subjects::new("t1");
        assert_eq!(
            s.rpc(Some("default"), op::LIST_CHATS),
            "t1.rpc.default.list_chats"
        );
        assert_eq!(s.rpc(None, op::PING), "t1.rpc._any.ping");
        // Never a subject token that is not an account id.
        assert_eq!(s.rpc(Some("a.b"), op::PING), "t1.rpc._any.ping");
        assert_eq!(s.rpc(Some(">"), op::PING), "t1.rpc._any.ping");
        assert_eq!(
            s.rpc_route("t1.rpc.work.read_messages"),
            Some(("work", "read_messages"))
        );
        assert_eq!(s.rpc_route("t1.rpc._any.ping"), Some(("_any", "ping")));
        assert_eq!(s.rpc_route("t1.rpc.ping"), None);
        assert_eq!(s.rpc_route("t1.rpc.a.b.c"), None);
        assert_eq!(s.rpc_account("work"), "t1.rpc.work.>");
        assert_eq!(s.op_of("t1.rpc.list_chats", "rpc"), Some("list_chats"));
        assert_eq!(s.op_of("t1.sim.set_state", "sim"), Some("set_state"));
        assert_eq!(s.op_of("t2.rpc.list_chats", "rpc"), None);
        assert_eq!(s.op_of("t1x.rpc.list_chats", "rpc"), None);
    }
}
