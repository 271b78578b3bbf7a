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
    /// Its session state now (`offline` for an account no worker serves).
    pub state: SyncState,
    /// Since when it has been in `state`, as far as wazap knows: for an account no worker
    /// serves, when a worker last served it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// The history WhatsApp has sent since the account's connection started (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryProgress>,
    /// What its archive holds, as last counted (absent: not counted yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveCounts>,
    /// The linked phone's number (digits), once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
    /// When it was removed with its archive kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<DateTime<Utc>>,
}

/// History sync as WhatsApp sends it after linking (and after a long time offline): pages of old
/// messages, with the phone's own estimate of how far it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryProgress {
    /// History pages received.
    pub pages: u32,
    /// Messages those pages added to the archive.
    pub messages: u64,
    /// The phone's estimate in percent, when it gave one (it does not always reach 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u8>,
}

/// What one account's archive holds, counted by the worker serving it every few minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveCounts {
    /// Messages archived.
    pub messages: i64,
    /// Chats with at least one message.
    pub chats: i64,
    /// Attachments (photos, voice notes, documents, …).
    pub media: i64,
    /// The newest message's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_at: Option<DateTime<Utc>>,
    /// Bytes on disk, estimated: the account's share of the message tables and indexes plus
    /// its cached files and thumbnails.
    pub disk_bytes: i64,
    /// When these were counted.
    pub counted_at: DateTime<Utc>,
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
