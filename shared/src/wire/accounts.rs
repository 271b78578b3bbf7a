//! The account registry on the owner API (#27): list, add, remove. The op markers are with the
//! other owner ops ([`super::owner`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::SyncState;

/// One account of the registry, as the owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSummary {
    /// Its id (`default`, `work`, …).
    pub account_id: String,
    /// What the owner calls it.
    pub display_name: String,
    /// The connector it runs on (`whatsapp`, `demo`, `sim`); absent: the deployment's
    /// (`WAZAP_CONNECTOR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Its session state now (`unpaired` for an account no worker connects yet).
    pub state: SyncState,
    /// The linked phone's number (digits), once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
    /// When it was removed with its archive kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<DateTime<Utc>>,
}

/// `owner_list_accounts`: every account, `default` first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountList {
    /// The accounts.
    pub accounts: Vec<AccountSummary>,
}

/// `owner_add_account`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddAccountRequest {
    /// 1–32 of `[a-z0-9-]`, starting with a letter or digit.
    pub account_id: String,
    /// What the owner calls it (default: the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// `whatsapp`, `demo` or `sim` (default: the deployment's connector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
}

/// `owner_remove_account`: keep the archive (readable, no longer connected), or delete it —
/// which needs `confirm` equal to the account's id; without it the answer is
/// `invalid_argument` saying what would go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveAccountRequest {
    /// The account.
    pub account_id: String,
    /// Delete its archive too.
    #[serde(default)]
    pub delete_archive: bool,
    /// The account's id typed again, to delete its archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// What a removal took away (`deleted`) or kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedAccount {
    /// The account.
    pub account_id: String,
    /// True when its archive was deleted; false when it was kept.
    pub deleted: bool,
    /// Messages deleted or kept.
    pub messages: i64,
    /// Chats deleted or kept.
    pub chats: i64,
    /// Files deleted or kept.
    pub files: i64,
    /// Status stories deleted or kept.
    pub stories: i64,
}
