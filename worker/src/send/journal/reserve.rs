//! Reserving a key: one statement that writes the row, the key count and the outbox row
//! ([`reserve`]), and, when its reply is lost, the re-read that tells whether it committed
//! ([`confirm`]) — nothing is handed to WhatsApp on a reservation not known durable.

use std::sync::LazyLock;

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::{Entry, JOURNAL_CAP, get};

/// What a new reservation carries.
#[derive(Debug, Clone)]
pub struct Reservation<'a> {
    /// The credential.
    pub connection_id: &'a str,
    /// The caller's key.
    pub request_id: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The account that sends.
    pub account_id: &'a str,
    /// The chat.
    pub chat_id: &'a str,
    /// SHA-256 of (tool, chat, payload).
    pub digest: &'a [u8],
    /// The chat's JID.
    pub recipient: &'a str,
    /// The allocated WhatsApp id.
    pub wa_id: &'a str,
    /// Its opaque id.
    pub message_id: &'a str,
}

/// What [`reserve`] did.
#[derive(Debug)]
pub enum Reserved {
    /// This call owns the key now (committed).
    New,
    /// The key already exists (maybe still in flight).
    Existing(Entry),
    /// The credential holds [`JOURNAL_CAP`] keys: nothing reserved.
    Full,
}

/// Reserve the key for a hand-over that starts right after, durably, or report the existing
/// row or a full journal. The row (already `transmitting`: everything that can fail before the
/// hand-over — gates, media bytes — has been checked, so from this commit on a crash must read
/// as `outcome_unknown`), the key count and the outbox row holding `outbox_text` are written by
/// one statement, committed on its own: one round trip, no `BEGIN`/`COMMIT` of their own.
///
/// How it stays exact: the statement first locks the credential's counter row (`for update`;
/// under read committed a waiter then reads the count its predecessor committed), inserts the
/// row only while the count is below [`JOURNAL_CAP`] (`on conflict do nothing`: simultaneous
/// reservations of one key serialise on its primary key, exactly one gets [`Reserved::New`]),
/// and moves the count and writes the outbox row only when the row is new. So a full journal
/// writes nothing and an existing key counts nothing; neither needs a rollback. (A separate
/// `reserved` commit before `transmitting` cost a commit per send and protected nothing.)
///
/// The counter row is made with the connection (migration 0012 for older ones), so the lock is
/// always taken before any key: a reservation that found no row to lock would insert its key
/// and only then queue for the row, which a later one could hold while queuing for that key — a
/// deadlock. (A credential with no row, which no connection made, is still counted: the
/// statement creates its row.)
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.reserve"))]
pub async fn reserve(
    db: &impl GenericClient,
    r: &Reservation<'_>,
    outbox_text: Option<&str>,
) -> anyhow::Result<Reserved> {
    let stmt = db.prepare_cached(&RESERVE).await?;
    let row = db.query_one(&stmt, &r.params(&outbox_text)).await?;
    reserved(db, r, row.try_get(0)?).await
}

/// [`reserve`]'s statement: its first column is true when this call reserved the key.
pub(crate) static RESERVE: LazyLock<String> = LazyLock::new(|| reserve_sql(&[]));

/// [`reserve`]'s statement, made conditional on `guards`: queries whose `ok` column fails
/// (division by zero) when what the caller decided on no longer holds (parameters from `$12`
/// on; `$1`–`$11` are [`Reservation::params`]). A failing guard fails the whole statement,
/// which then reserves nothing: every guard is read in the insert's condition and, so that no
/// shortcut there can skip one (a full journal, say), again in the answer.
pub(crate) fn reserve_sql(guards: &[String]) -> String {
    let mut with = String::new();
    let mut checked = String::new();
    let mut answer = String::new();
    for (i, guard) in guards.iter().enumerate() {
        with.push_str(&format!("g{i} as materialized ({guard}),\n"));
        checked.push_str(&format!(" and (select ok from g{i}) = 1"));
        answer.push_str(&format!(", (select ok from g{i})"));
    }
    format!(
        "with {with}
         c as materialized (
           select keys from send_journal_keys where connection_id = $1 for update),
         j as (
           insert into send_journal (connection_id, request_id, tool, account_id, chat_id,
               digest, recipient, wa_id, message_id, state)
           select $1, $2, $3, $4, $5, $6, $7, $8, $9, 'transmitting'
            where coalesce((select keys from c), 0) < $10{checked}
           on conflict do nothing
           returning 1),
         k as (
           insert into send_journal_keys (connection_id, keys)
           select $1, 1 where exists (select 1 from j)
           on conflict (connection_id) do update set keys = send_journal_keys.keys + 1
           returning 1),
         o as (
           insert into send_outbox
             (connection_id, request_id, account_id, chat_id, message_id, text)
           select $1, $2, $4, $5, $9, $11::text
            where $11::text is not null and exists (select 1 from j)
           returning 1)
         select exists (select 1 from j){answer}"
    )
}

impl Reservation<'_> {
    /// The reservation statement's `$1`–`$11`, with the outbox row's text.
    pub(crate) fn params<'p>(
        &'p self,
        outbox_text: &'p Option<&str>,
    ) -> [&'p (dyn ToSql + Sync); 11] {
        [
            &self.connection_id,
            &self.request_id,
            &self.tool,
            &self.account_id,
            &self.chat_id,
            &self.digest,
            &self.recipient,
            &self.wa_id,
            &self.message_id,
            &JOURNAL_CAP,
            outbox_text,
        ]
    }
}

/// What the reservation statement did, from its first column (`inserted`): when it inserted nothing, the key exists
/// (a simultaneous call's statement has committed by now, and this fresh read sees it), or the
/// credential is at the cap.
pub(crate) async fn reserved(
    db: &impl GenericClient,
    r: &Reservation<'_>,
    inserted: bool,
) -> anyhow::Result<Reserved> {
    if inserted {
        return Ok(Reserved::New);
    }
    Ok(match get(db, r.connection_id, r.request_id).await? {
        Some(e) => Reserved::Existing(e),
        None => Reserved::Full,
    })
}

/// Whether a reservation whose statement failed may have committed: false when Postgres
/// answered it with an error (a statement that fails on its own commits nothing), true when
/// the answer never came (the link broke or timed out after the statement may have run).
pub fn may_have_committed(e: &anyhow::Error) -> bool {
    e.downcast_ref::<tokio_postgres::Error>()
        .is_none_or(|e| e.as_db_error().is_none())
}

/// Settle a reservation whose answer was lost, on another connection, holding the
/// credential's counter row (which a reservation locks from its start to its commit, so one
/// still running on the server is waited for rather than read half-way): its row is there
/// under `r`'s WhatsApp id and in flight → it committed, [`Reserved::New`]; another call's row →
/// [`Reserved::Existing`]; no row → it never ran, or has not reached the server yet (held in a
/// broken link), so `statement` — the same reservation, with its guards — runs again here and
/// commits first: the late one then finds the key taken and writes nothing. Either way the
/// answer is one committed reservation or none, known to this call.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.confirm"))]
pub async fn confirm(
    db: &mut deadpool_postgres::Client,
    r: &Reservation<'_>,
    (statement, params): (&str, &[&(dyn ToSql + Sync)]),
) -> anyhow::Result<Reserved> {
    let tx = db.transaction().await?;
    tx.execute(
        "select 1 from send_journal_keys where connection_id = $1 for update",
        &[&r.connection_id],
    )
    .await?;
    let reserved = match get(&tx, r.connection_id, r.request_id).await? {
        Some(e) if e.message_id == r.message_id && !e.state.is_final() => Reserved::New,
        Some(e) => Reserved::Existing(e),
        None => {
            let stmt = tx.prepare_cached(statement).await?;
            let inserted = tx.query_one(&stmt, params).await?.try_get(0)?;
            reserved(&tx, r, inserted).await?
        }
    };
    tx.commit().await?;
    Ok(reserved)
}
