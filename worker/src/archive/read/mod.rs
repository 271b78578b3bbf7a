//! The read side of the archive: the queries behind the read tools. Every query takes the
//! caller's [`Viewer`] and pushes its read scope and the archive policy into SQL (chat lists,
//! time bounds), so limits and paging stay exact. The RPC edge validates arguments and maps
//! results onto wire types; these functions return rows or `None` for "no such thing".

/// The SQL of a message's sender name as the owner knows it — the phonebook's, else the push
/// name the message carried — for the messages (or hits) aliased `$t`, joined to their chat
/// merges as `g`. A sub-select per row returned (one index probe each), never a join: joined,
/// the planner hashed the whole phonebook, and could sort a whole chat, for a page of 50
/// (2,000 contacts and 300,000 messages in a group: 220–234 ms against 0.24–0.27 ms, #29).
macro_rules! sender_name {
    ($t:literal) => {
        concat!(
            "coalesce((select k.name from contacts k where k.account_id = ",
            $t,
            ".account_id and k.chat_id = coalesce(g.into_chat_id, ",
            $t,
            ".sender_chat_id)), ",
            $t,
            ".sender_name)"
        )
    };
}

pub(crate) mod attachments;
pub(crate) mod chats;
pub(crate) mod messages;
pub(crate) mod search;
pub(crate) mod snippet;
pub(crate) mod wait;

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use wazap_shared::ErrorCode;
use wazap_shared::wire::grants::ChatSelection;

use super::jid::phone_jid;
use crate::error::{Context as _, Error};
use crate::viewer::Viewer;

/// Positional SQL parameters collected while a query is built.
#[derive(Default)]
pub(crate) struct Params {
    values: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Params {
    /// Add a parameter; returns its placeholder (`$n`).
    pub(crate) fn push<T: ToSql + Sync + Send + 'static>(&mut self, value: T) -> String {
        self.values.push(Box::new(value));
        format!("${}", self.values.len())
    }

    /// Add a bigint parameter that no plan sees (a sub-select reads it); returns its SQL.
    ///
    /// Why: Postgres keeps a prepared statement's generic plan only while it costs no more
    /// than the custom plans it made at the first calls. A custom plan sees the limit (or a
    /// range of positions), a generic one guesses — a tenth of the rows for a `LIMIT`, a wide
    /// range — so on a large archive the generic plan looked dearer, and Postgres planned the
    /// statement anew at every call (often dearer than running it) to reach the
    /// same plan. Behind a sub-select both guess alike, and the generic plan stays. Only for
    /// values that do not change which plan is best.
    pub(crate) fn push_opaque(&mut self, value: i64) -> String {
        format!("(select {}::int8)", self.push(value))
    }

    /// The parameters, as the driver takes them.
    pub(crate) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|v| v.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// SQL condition: `column` (a chat id) is inside the viewer's chat selection and not excluded
/// by the archive policy.
pub(crate) fn chat_filter(viewer: &Viewer, column: &str, p: &mut Params) -> String {
    let excluded = &viewer.excluded_chats;
    match &viewer.scope.chats {
        ChatSelection::All if excluded.is_empty() => "true".to_owned(),
        ChatSelection::All => format!("{column} <> all({})", p.push(excluded.clone())),
        ChatSelection::Selected { chats } => {
            let allowed: Vec<String> = chats
                .iter()
                .filter(|c| !excluded.contains(c))
                .cloned()
                .collect();
            format!("{column} = any({})", p.push(allowed))
        }
        ChatSelection::AllExcept { chats } => {
            let mut out: Vec<String> = chats.clone();
            out.extend(excluded.iter().cloned());
            format!("{column} <> all({})", p.push(out))
        }
    }
}

/// SQL condition: `column` (a timestamp) is inside the scope's `since`/`until`.
pub(crate) fn time_filter(viewer: &Viewer, column: &str, p: &mut Params) -> String {
    let mut out = String::from("true");
    if let Some(since) = viewer.scope.since {
        out.push_str(&format!(" and {column} >= {}", p.push(since)));
    }
    if let Some(until) = viewer.scope.until {
        out.push_str(&format!(" and {column} < {}", p.push(until)));
    }
    out
}

/// `text` as a case-insensitive `ilike` pattern matching it anywhere.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// True when the account exists.
pub(crate) async fn account_exists(db: &impl GenericClient, account: &str) -> anyhow::Result<bool> {
    let stmt = db
        .prepare_cached("select 1 from accounts where account_id = $1")
        .await?;
    Ok(db.query_opt(&stmt, &[&account]).await?.is_some())
}

/// A chat as a read names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChatRef {
    /// An opaque chat id (possibly of a chat since merged into another).
    Opaque(String),
    /// A phone number's digits: the direct chat with that person.
    Phone(String),
}

/// A chat found by [`find_chat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundChat {
    /// Its account.
    pub(crate) account_id: String,
    /// Its current chat id.
    pub(crate) chat_id: String,
}

/// Find a chat of `account` (for an opaque id, the account it names: see
/// [`crate::rpc`]'s argument checks). A chat id merged into another finds the other. `None`
/// when there is no such chat.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "read.find_chat"))]
pub(crate) async fn find_chat(
    db: &impl GenericClient,
    account: &str,
    chat: &ChatRef,
) -> anyhow::Result<Option<FoundChat>> {
    let row = |r: tokio_postgres::Row| FoundChat {
        account_id: r.get(0),
        chat_id: r.get(1),
    };
    match chat {
        ChatRef::Opaque(id) => {
            let stmt = db
                .prepare_cached(
                    "select account_id, chat_id from chats where account_id = $2 and chat_id = $1
                     union all
                     select c.account_id, c.chat_id from chat_merges m
                       join chats c on c.account_id = m.account_id and c.chat_id = m.into_chat_id
                      where m.account_id = $2 and m.from_chat_id = $1
                     limit 1",
                )
                .await?;
            Ok(db.query_opt(&stmt, &[id, &account]).await?.map(row))
        }
        ChatRef::Phone(digits) => {
            let stmt = db
                .prepare_cached(
                    "select account_id, chat_id from chat_aliases where account_id = $1 and jid = $2",
                )
                .await?;
            Ok(db
                .query_opt(&stmt, &[&account, &phone_jid(digits)])
                .await?
                .map(row))
        }
    }
}

/// `query` in the same flight as the check that `account` exists — one round trip to Postgres
/// where one after the other cost two. The query's answer counts only when the account exists
/// (`account_not_found` otherwise, whatever the query said); every read filters by account,
/// so it finds nothing of one that does not.
pub(crate) async fn in_account<T>(
    db: &impl GenericClient,
    account: &str,
    context: &'static str,
    query: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let (exists, answer) = tokio::join!(biased; account_exists(db, account), query);
    match exists {
        Ok(true) => answer,
        Ok(false) => Err(Error::new(ErrorCode::AccountNotFound, "no such account")),
        Err(e) => Err(Error::internal(context, e)),
    }
}

/// [`in_account`] when `check`, else `query` alone (an account already known to exist: the
/// default one, or one a lookup has found).
pub(crate) async fn in_account_if<T>(
    check: bool,
    db: &impl GenericClient,
    account: &str,
    context: &'static str,
    query: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    if check {
        in_account(db, account, context, query).await
    } else {
        query.await
    }
}

/// A pooled connection for a read; a pool failure is `internal` (logged once with `context`).
pub(crate) async fn connection(
    pool: &deadpool_postgres::Pool,
    context: &'static str,
) -> Result<deadpool_postgres::Client, Error> {
    pool.get().await.context(context)
}
