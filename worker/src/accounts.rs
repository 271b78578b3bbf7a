//! The account registry (#27): the WhatsApp accounts this deployment keeps, in Postgres
//! (`accounts`, migration 0018). `default` is the first and is always there; the owner adds
//! others under ids of their own choosing (`[a-z0-9-]`, 1–32, [`wazap_shared::ids::is_account_id`]),
//! and removes them keeping their archive (it stays readable, no longer connected) or deleting
//! it, which takes an explicit confirmation: the account's id typed again, after being shown
//! what goes ([`Contents`]).
//!
//! Used by the command line (`wazap-worker account …`) and the owner's API; one checker per
//! rule, one wording per refusal ([`RegistryError`]).

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::ids::{ACCOUNT_ID_RULE, DEFAULT_ACCOUNT, is_account_id};

use crate::config::ConnectorKind;

/// Longest display name, in characters.
pub const MAX_DISPLAY_NAME: usize = 80;

/// One account of the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Its id (`default`, `work`, …).
    pub account_id: String,
    /// What the owner calls it.
    pub display_name: String,
    /// The connector it runs on; `None`: the deployment's `WAZAP_CONNECTOR`.
    pub connector: Option<ConnectorKind>,
    /// The linked phone's number (digits), once known.
    pub phone: Option<String>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
    /// When it was removed with its archive kept; `None` while it is in use.
    pub removed_at: Option<DateTime<Utc>>,
}

/// An account to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAccount {
    /// Its id.
    pub account_id: String,
    /// What the owner calls it (default: the id).
    pub display_name: Option<String>,
    /// Its connector (default: the deployment's).
    pub connector: Option<ConnectorKind>,
}

/// What an account's archive holds: what deleting it takes away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contents {
    /// Messages.
    pub messages: i64,
    /// Chats (people and groups).
    pub chats: i64,
    /// Files (attachments of messages and stories).
    pub files: i64,
    /// Status stories.
    pub stories: i64,
}

impl std::fmt::Display for Contents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} messages, {} chats, {} files, {} stories",
            self.messages, self.chats, self.files, self.stories
        )
    }
}

/// How an account goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    /// Keep its archive, readable as it was; it is no longer connected.
    KeepArchive,
    /// Delete its archive for good; `confirm` must be the account's id.
    DeleteArchive {
        /// The account's id, typed again; `None` asks what would go ([`RegistryError::Confirm`]).
        confirm: Option<String>,
    },
}

/// Why the registry refused; each with its one wording.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A malformed argument: the field and what it should be.
    #[error("{field}: {rule}")]
    Invalid {
        /// The argument.
        field: &'static str,
        /// What it should be.
        rule: &'static str,
    },
    /// No such account (or removed, for an action that needs it in use).
    #[error("no such account")]
    NotFound,
    /// An account with this id is in use already.
    #[error("an account with this id exists already")]
    Exists,
    /// `default` is where ids without an account live; it can be unlinked, not removed.
    #[error("the default account cannot be removed; unlink its phone instead")]
    Default,
    /// Deleting needs the id typed again; this is what would go.
    #[error(
        "deleting account {account}'s archive removes {contents} for good; confirm with the \
         account's id"
    )]
    Confirm {
        /// The account.
        account: String,
        /// What its archive holds.
        contents: Contents,
    },
    /// Postgres failed.
    #[error(transparent)]
    Db(#[from] tokio_postgres::Error),
}

const COLUMNS: &str = "account_id, display_name, connector, own_jid, created_at, removed_at";

/// Every account, `default` first, then by when they were added.
pub async fn list(db: &impl GenericClient) -> Result<Vec<Account>, RegistryError> {
    let stmt = db
        .prepare_cached(&format!(
            "select {COLUMNS} from accounts
              order by account_id <> 'default', created_at, account_id"
        ))
        .await?;
    Ok(db.query(&stmt, &[]).await?.iter().map(row).collect())
}

/// One account, removed or not.
pub async fn get(db: &impl GenericClient, account_id: &str) -> Result<Account, RegistryError> {
    let stmt = db
        .prepare_cached(&format!(
            "select {COLUMNS} from accounts where account_id = $1"
        ))
        .await?;
    db.query_opt(&stmt, &[&account_id])
        .await?
        .as_ref()
        .map(row)
        .ok_or(RegistryError::NotFound)
}

/// Add an account (or take back into use one removed with its archive kept, under its new
/// name and connector).
pub async fn add(db: &impl GenericClient, new: NewAccount) -> Result<Account, RegistryError> {
    check_id(&new.account_id)?;
    let name = display_name(new.display_name.as_deref(), &new.account_id)?;
    let connector = new.connector.map(ConnectorKind::as_str);
    let stmt = db
        .prepare_cached(&format!(
            "insert into accounts (account_id, display_name, connector) values ($1, $2, $3)
             on conflict (account_id) do update
                set display_name = excluded.display_name, connector = excluded.connector,
                    removed_at = null, paused_at = null
              where accounts.removed_at is not null
             returning {COLUMNS}"
        ))
        .await?;
    db.query_opt(&stmt, &[&new.account_id, &name, &connector])
        .await?
        .as_ref()
        .map(row)
        .ok_or(RegistryError::Exists)
}

/// Whether the owner paused `account_id` (and has not resumed, unlinked or paired it since):
/// its connection starts paused wherever it is served next.
pub async fn paused(db: &impl GenericClient, account_id: &str) -> Result<bool, RegistryError> {
    let stmt = db
        .prepare_cached("select paused_at is not null from accounts where account_id = $1")
        .await?;
    db.query_opt(&stmt, &[&account_id])
        .await?
        .map(|r| r.get(0))
        .ok_or(RegistryError::NotFound)
}

/// Keep the owner's pause of `account_id` (`true`), or clear it. The serving worker writes it
/// through its pool fenced by the account's lease, so a worker that has lost the account can
/// no longer change what the next one starts with.
pub async fn set_paused(
    db: &impl GenericClient,
    account_id: &str,
    paused: bool,
) -> Result<(), RegistryError> {
    let stmt = db
        .prepare_cached(
            "update accounts
                set paused_at = case when $2 then coalesce(paused_at, now()) end
              where account_id = $1 and (paused_at is not null) <> $2",
        )
        .await?;
    db.execute(&stmt, &[&account_id, &paused]).await?;
    Ok(())
}

/// What `account_id`'s archive holds.
pub async fn contents(
    db: &impl GenericClient,
    account_id: &str,
) -> Result<Contents, RegistryError> {
    let stmt = db
        .prepare_cached(
            "select (select count(*) from messages where account_id = $1),
                    (select count(*) from chats where account_id = $1),
                    (select count(*) from attachments where account_id = $1),
                    (select count(*) from stories where account_id = $1)",
        )
        .await?;
    let r = db.query_one(&stmt, &[&account_id]).await?;
    Ok(Contents {
        messages: r.get(0),
        chats: r.get(1),
        files: r.get(2),
        stories: r.get(3),
    })
}

/// The tables holding an account's archive, each row naming its account, in an order that
/// deletes what refers to a chat before the chat. The send journal is not among them: it holds
/// no message text, and its keys keep a retried `request_id` from sending again.
pub const ARCHIVE_TABLES: &[&str] = &[
    "account_status",
    "send_refusals",
    "attachments",
    "messages",
    "stories",
    "contacts",
    "groups",
    "chat_aliases",
    "chat_merges",
    "chats",
    "send_outbox",
    "sim_transmissions",
];

/// Remove `account_id` as `how` says; what its archive held. The caller stops its connection
/// first (a running worker unlinks the phone; the command line works on a stopped one).
pub async fn remove(
    db: &mut deadpool_postgres::Client,
    account_id: &str,
    how: Removal,
) -> Result<Contents, RegistryError> {
    check_id(account_id)?;
    if account_id == DEFAULT_ACCOUNT {
        return Err(RegistryError::Default);
    }
    let account = get(&*db, account_id).await?;
    let contents = contents(&*db, account_id).await?;
    match how {
        Removal::KeepArchive => {
            if account.removed_at.is_some() {
                return Err(RegistryError::NotFound);
            }
            let stmt = db
                .prepare_cached("update accounts set removed_at = now() where account_id = $1")
                .await?;
            db.execute(&stmt, &[&account_id]).await?;
        }
        Removal::DeleteArchive { confirm } => {
            if confirm.as_deref() != Some(account_id) {
                return Err(RegistryError::Confirm {
                    account: account_id.to_owned(),
                    contents,
                });
            }
            let tx = db.transaction().await?;
            // A large archive takes longer than one read is allowed.
            tx.batch_execute("set local statement_timeout = 0").await?;
            for table in ARCHIVE_TABLES {
                tx.execute(
                    &format!("delete from {table} where account_id = $1"),
                    &[&account_id],
                )
                .await?;
            }
            tx.execute("delete from accounts where account_id = $1", &[&account_id])
                .await?;
            tx.commit().await?;
        }
    }
    tracing::info!(account.id = %account_id, "account removed");
    Ok(contents)
}

fn check_id(account_id: &str) -> Result<(), RegistryError> {
    if is_account_id(account_id) {
        Ok(())
    } else {
        Err(RegistryError::Invalid {
            field: "account_id",
            rule: ACCOUNT_ID_RULE,
        })
    }
}

/// The display name: trimmed, 1–[`MAX_DISPLAY_NAME`] characters, no control characters; the
/// id when none is given.
fn display_name(name: Option<&str>, account_id: &str) -> Result<String, RegistryError> {
    let name = name.map(str::trim).unwrap_or(account_id);
    if name.is_empty()
        || name.chars().count() > MAX_DISPLAY_NAME
        || name.chars().any(char::is_control)
    {
        return Err(RegistryError::Invalid {
            field: "display_name",
            rule: "expected 1-80 characters, no control characters",
        });
    }
    Ok(name.to_owned())
}

fn row(r: &tokio_postgres::Row) -> Account {
    let own_jid: Option<String> = r.get(3);
    Account {
        account_id: r.get(0),
        display_name: r.get(1),
        connector: r.get::<_, Option<&str>>(2).and_then(ConnectorKind::parse),
        phone: own_jid.and_then(|j| {
            let user = j.split(['@', ':']).next().unwrap_or_default();
            (!user.is_empty() && user.bytes().all(|b| b.is_ascii_digit())).then(|| user.to_owned())
        }),
        created_at: r.get(4),
        removed_at: r.get(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_are_trimmed_bounded_and_default_to_the_id() {
        assert_eq!(display_name(None, "work").unwrap(), "work");
        assert_eq!(
            display_name(Some("  Work phone "), "work").unwrap(),
            "Work phone"
        );
        for bad in ["", "   ", "a\nb", &"x".repeat(81)] {
            let e = display_name(Some(bad), "work").unwrap_err().to_string();
            assert!(e.starts_with("display_name: "), "{e}");
        }
    }

    #[test]
    fn ids_are_checked_before_anything_else() {
        let e = check_id("Work").unwrap_err().to_string();
        assert_eq!(e, format!("account_id: {ACCOUNT_ID_RULE}"));
        assert!(check_id("2nd-phone").is_ok());
    }
}
