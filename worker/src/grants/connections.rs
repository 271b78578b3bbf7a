//! AI connections (DESIGN §4): create one with its read scope and hand out its token once, list
//! them (never with tokens), revoke them. Send permissions start at `none`, revision 0.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::{Pool, Transaction};
use serde::{Deserialize, Serialize};
use tokio_postgres::Row;
use tokio_postgres::types::Json;
use wazap_shared::ErrorCode;
use wazap_shared::grant::{AUDIENCE, ConnectionKind, GrantClaims};
use wazap_shared::ids::{ACCOUNT_ID_RULE, account_of, is_account_id, is_chat_id};
use wazap_shared::wire::grants::{
    AccountRule, AccountSelection, ChatSelection, ReadScope, SendMode, SendPermission,
};

use super::{issue_token, random_hex};
use crate::error::{Context as _, Error};

/// Longest connection name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Most chats a `selected` / `all_except` read scope may list.
pub const MAX_SCOPE_CHATS: usize = 10_000;

/// What the owner gives to create a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConnection {
    /// A label for the owner (1–100 characters, no control characters).
    pub name: String,
    /// `local` or `remote`.
    pub kind: ConnectionKind,
    /// When the connection and its tokens stop working; must be in the future.
    pub expires_at: DateTime<Utc>,
    /// What it may read.
    pub read_scope: ReadScope,
}

/// A stored connection, as the owner sees it (never its token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRow {
    /// `conn_` + 16 hex digits.
    pub id: String,
    /// The owner's label.
    pub name: String,
    /// `local` or `remote`.
    pub kind: ConnectionKind,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
    /// The current credential revision; tokens of other revisions are stale.
    pub revision: u32,
    /// What it may read.
    pub read_scope: ReadScope,
    /// Where it may send.
    pub send: SendPermission,
    /// The OAuth client it was approved for, if it came from the consent page.
    pub oauth_client: Option<String>,
}

const COLUMNS: &str = "connection_id, name, kind, created_at, expires_at, revoked_at, revision,
     read_scope, send_mode, send_chats, send_revision, oauth_client_id";

/// Create a connection and sign its first token (revision 0). The token is returned once and
/// never stored. Bad input is `invalid_argument` naming the field.
pub async fn create_connection(
    pool: &Pool,
    new: NewConnection,
) -> Result<(ConnectionRow, String), Error> {
    let mut client = pool.get().await.context("create connection: database")?;
    let tx = client
        .transaction()
        .await
        .context("create connection: begin")?;
    let conn = insert_connection(&tx, new, None).await?;
    let claims = GrantClaims {
        sub: conn.id.clone(),
        rev: conn.revision,
        aud: AUDIENCE.into(),
        exp: conn.expires_at.timestamp(),
        iat: Utc::now().timestamp(),
        kind: conn.kind,
    };
    let token = issue_token(&tx, &claims)
        .await
        .context("create connection: sign")?;
    tx.commit().await.context("create connection: commit")?;
    Ok((conn, token))
}

/// Insert a connection (checked as [`create_connection`] says) in the caller's transaction,
/// with no token: `oauth_client` names the OAuth client it is approved for, whose tokens come
/// from the token endpoint.
pub(crate) async fn insert_connection(
    tx: &Transaction<'_>,
    new: NewConnection,
    oauth_client: Option<&str>,
) -> Result<ConnectionRow, Error> {
    let name = validate_name(&new.name)?;
    if new.expires_at <= Utc::now() {
        return Err(Error::invalid("expires_at", "must be in the future"));
    }
    let scope = normalize_scope(new.read_scope)?;
    let id = format!("conn_{}", random_hex(8).context("connection id")?);
    let row = tx
        .query_one(
            &format!(
                "insert into connections
                    (connection_id, name, kind, expires_at, read_scope, oauth_client_id)
                 values ($1, $2, $3, $4, $5, $6) returning {COLUMNS}"
            ),
            &[
                &id,
                &name,
                &new.kind.as_str(),
                &new.expires_at,
                &Json(&scope),
                &oauth_client,
            ],
        )
        .await
        .context("create connection: insert")?;
    let conn = from_row(&row).context("create connection: decode")?;
    // Its send-key counter exists from the start: every reservation locks it before inserting
    // its key, so simultaneous first sends queue instead of deadlocking (`send::journal`).
    tx.execute(
        "insert into send_journal_keys (connection_id, keys) values ($1, 0)",
        &[&conn.id],
    )
    .await
    .context("create connection: key counter")?;
    tracing::info!(
        connection.id = %conn.id,
        kind = conn.kind.as_str(),
        oauth = oauth_client.is_some(),
        "connection created"
    );
    Ok(conn)
}

/// Every connection, oldest first, revoked and expired ones included.
pub async fn list_connections(pool: &Pool) -> Result<Vec<ConnectionRow>, Error> {
    let client = pool.get().await.context("list connections: database")?;
    let rows = client
        .query(
            &format!("select {COLUMNS} from connections order by created_at, connection_id"),
            &[],
        )
        .await
        .context("list connections: query")?;
    rows.iter()
        .map(from_row)
        .collect::<anyhow::Result<_>>()
        .context("list connections: decode")
}

/// Revoke a connection: every token it ever had stops working on the next request. Revoking
/// twice is fine; an unknown id is `not_found`.
pub async fn revoke_connection(pool: &Pool, id: &str) -> Result<(), Error> {
    let client = pool.get().await.context("revoke connection: database")?;
    let n = client
        .execute(
            "update connections set revoked_at = coalesce(revoked_at, now())
             where connection_id = $1",
            &[&id],
        )
        .await
        .context("revoke connection: update")?;
    if n == 0 {
        return Err(Error::new(ErrorCode::NotFound, "connection: not found"));
    }
    tracing::info!(connection.id = %id, "connection revoked");
    Ok(())
}

/// A trimmed name of 1–[`MAX_NAME_CHARS`] characters without control characters.
fn validate_name(name: &str) -> Result<String, Error> {
    let name = name.trim();
    let len = name.chars().count();
    if len == 0 || len > MAX_NAME_CHARS {
        return Err(Error::invalid("name", "must be 1-100 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(name.to_owned())
}

/// Check a read scope and drop repeated chats and accounts: listed chats must be opaque chat
/// ids (never phone numbers or JIDs) of an account the scope reads (a rule of its own: of that
/// account), `selected` needs at least one, `since` must come before `until`, the accounts are
/// account ids (at least one), and every account with a rule of its own is one it reads.
pub fn normalize_scope(scope: ReadScope) -> Result<ReadScope, Error> {
    let accounts = match scope.accounts {
        AccountSelection::All => AccountSelection::All,
        AccountSelection::Only { accounts } => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for a in accounts {
                if !is_account_id(&a) {
                    return Err(Error::invalid("read_scope.accounts", ACCOUNT_ID_RULE));
                }
                if seen.insert(a.clone()) {
                    out.push(a);
                }
            }
            if out.is_empty() {
                return Err(Error::invalid(
                    "read_scope.accounts",
                    "name at least one account, or all",
                ));
            }
            AccountSelection::Only { accounts: out }
        }
    };
    let reads = |account: &str| accounts.includes(account);
    let top = ("read_scope.chats", "read_scope.until");
    let AccountRule {
        chats,
        since,
        until,
    } = rule(top, scope.chats, scope.since, scope.until, &|c| {
        account_of(c).is_some_and(reads)
    })?;
    let mut per_account = BTreeMap::new();
    for (account, r) in scope.per_account {
        if !reads(&account) {
            return Err(Error::invalid(
                "read_scope.per_account",
                "a rule for an account the scope does not read",
            ));
        }
        let fields = (
            "read_scope.per_account.chats",
            "read_scope.per_account.until",
        );
        let checked = rule(fields, r.chats, r.since, r.until, &|c| {
            account_of(c) == Some(&account)
        })?;
        per_account.insert(account, checked);
    }
    Ok(ReadScope {
        chats,
        since,
        until,
        accounts,
        per_account,
    })
}

/// One rule of a read scope, checked ([`normalize_scope`]), refusals naming `fields` (its
/// chats', its until's); `in_scope` says whether a listed chat belongs to an account the rule
/// covers.
fn rule(
    (chats_field, until_field): (&'static str, &'static str),
    chats: ChatSelection,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    in_scope: &dyn Fn(&str) -> bool,
) -> Result<AccountRule, Error> {
    let list = |chats: Vec<String>| -> Result<Vec<String>, Error> {
        let chats = chat_list(chats_field, chats)?;
        if !chats.iter().all(|c| in_scope(c)) {
            return Err(Error::invalid(
                chats_field,
                "a chat of an account this rule does not cover",
            ));
        }
        Ok(chats)
    };
    let chats = match chats {
        ChatSelection::All => ChatSelection::All,
        ChatSelection::Selected { chats } => {
            let chats = list(chats)?;
            if chats.is_empty() {
                return Err(Error::invalid(
                    chats_field,
                    "selected needs at least one chat",
                ));
            }
            ChatSelection::Selected { chats }
        }
        ChatSelection::AllExcept { chats } => ChatSelection::AllExcept {
            chats: list(chats)?,
        },
    };
    if let (Some(since), Some(until)) = (since, until)
        && since >= until
    {
        return Err(Error::invalid(until_field, "must be after since"));
    }
    Ok(AccountRule {
        chats,
        since,
        until,
    })
}

/// Opaque chat ids, first occurrence kept, at most [`MAX_SCOPE_CHATS`].
fn chat_list(field: &str, chats: Vec<String>) -> Result<Vec<String>, Error> {
    let mut seen = HashSet::with_capacity(chats.len());
    let mut out = Vec::with_capacity(chats.len());
    for c in chats {
        if !is_chat_id(&c) {
            return Err(Error::invalid(field, "expected opaque chat ids (c_…)"));
        }
        if seen.insert(c.clone()) {
            out.push(c);
        }
    }
    if out.len() > MAX_SCOPE_CHATS {
        return Err(Error::invalid(field, "at most 10000 chats"));
    }
    Ok(out)
}

/// Decode a row selected with [`COLUMNS`].
fn from_row(row: &Row) -> anyhow::Result<ConnectionRow> {
    let kind: String = row.try_get("kind")?;
    let Json(read_scope): Json<ReadScope> = row.try_get("read_scope")?;
    Ok(ConnectionRow {
        id: row.try_get("connection_id")?,
        name: row.try_get("name")?,
        kind: kind.parse().map_err(anyhow::Error::msg)?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
        revision: u32::try_from(row.try_get::<_, i32>("revision")?)?,
        read_scope,
        send: SendPermission {
            mode: send_mode(row.try_get("send_mode")?)?,
            chats: row.try_get("send_chats")?,
            revision: u32::try_from(row.try_get::<_, i32>("send_revision")?)?,
        },
        oauth_client: row.try_get("oauth_client_id")?,
    })
}

/// The stored send mode.
pub(crate) fn send_mode(s: &str) -> anyhow::Result<SendMode> {
    match s {
        "none" => Ok(SendMode::None),
        "selected" => Ok(SendMode::Selected),
        "all" => Ok(SendMode::All),
        _ => anyhow::bail!("unknown send mode in the database"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(accounts: AccountSelection, chats: ChatSelection) -> ReadScope {
        ReadScope {
            chats,
            accounts,
            ..ReadScope::all()
        }
    }

    fn only(accounts: &[&str]) -> AccountSelection {
        AccountSelection::Only {
            accounts: accounts.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    fn refused(s: ReadScope) -> String {
        normalize_scope(s).unwrap_err().message().to_owned()
    }

    #[test]
    fn a_scope_names_valid_accounts_and_only_chats_of_them() {
        let ok = normalize_scope(scope(
            only(&["work", "default", "work"]),
            ChatSelection::All,
        ));
        assert_eq!(ok.unwrap().accounts, only(&["work", "default"]));
        assert!(
            refused(scope(only(&["Work"]), ChatSelection::All)).starts_with("read_scope.accounts")
        );
        assert!(refused(scope(only(&[]), ChatSelection::All)).starts_with("read_scope.accounts"));
        let chats = |c: &[&str]| ChatSelection::Selected {
            chats: c.iter().map(|c| (*c).to_owned()).collect(),
        };
        assert!(normalize_scope(scope(only(&["work"]), chats(&["c_1-work"]))).is_ok());
        assert!(
            refused(scope(only(&["work"]), chats(&["c_1"]))).starts_with("read_scope.chats"),
            "a default-account chat in a work-only scope"
        );
        let mut s = scope(only(&["default"]), ChatSelection::All);
        s.per_account.insert(
            "work".into(),
            AccountRule {
                chats: ChatSelection::All,
                since: None,
                until: None,
            },
        );
        assert!(refused(s.clone()).starts_with("read_scope.per_account"));
        s.accounts = AccountSelection::All;
        assert!(normalize_scope(s.clone()).is_ok());
        s.per_account.get_mut("work").unwrap().chats = chats(&["c_1"]);
        assert!(refused(s).starts_with("read_scope.per_account.chats"));
    }
}
