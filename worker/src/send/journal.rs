//! The send journal in Postgres (DESIGN §5), per credential (connection id): a row per
//! `request_id` with the digest of (tool, chat, payload), the recipient and the allocated
//! WhatsApp id — never the text or the bytes. Every state change commits before the next step,
//! and the 100,000-key cap is a counter row updated by the reserving statement.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use crate::archive::CommitWith;
use wazap_shared::wire::send::{SendResult, SendState};

/// Most keys one credential may hold; the next reservation is `send_journal_full`.
pub const JOURNAL_CAP: i32 = 100_000;

/// A journal state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalState {
    /// Reserved; nothing handed over yet (rows of earlier versions; new keys are journaled
    /// `transmitting` at once, see [`reserve`]).
    Reserved,
    /// Being handed to the connector; it may leave at any moment.
    Transmitting,
    /// WhatsApp acknowledged it.
    Accepted,
    /// It may or may not have been delivered.
    OutcomeUnknown,
    /// Nothing was transmitted.
    Failed,
}

impl JournalState {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "reserved",
            Self::Transmitting => "transmitting",
            Self::Accepted => "accepted",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::Failed => "failed",
        }
    }

    fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "reserved" => Self::Reserved,
            "transmitting" => Self::Transmitting,
            "accepted" => Self::Accepted,
            "outcome_unknown" => Self::OutcomeUnknown,
            "failed" => Self::Failed,
            _ => anyhow::bail!("unknown journal state in the database"),
        })
    }

    /// True once the outcome will not change.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Accepted | Self::OutcomeUnknown | Self::Failed)
    }
}

/// One journal row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The caller's request id.
    pub request_id: String,
    /// The tool that made it.
    pub tool: String,
    /// The chat.
    pub chat_id: String,
    /// SHA-256 of (tool, chat, payload).
    pub digest: Vec<u8>,
    /// The opaque message id.
    pub message_id: String,
    /// Its state.
    pub state: JournalState,
    /// When WhatsApp acknowledged it.
    pub accepted_at: Option<DateTime<Utc>>,
    /// Still in flight past [`STALE_AFTER`]: the call that reserved it could not journal an
    /// outcome (it always does within the connector's budget otherwise).
    pub stale: bool,
}

impl Entry {
    /// The result a caller sees; not-yet-final states read as `outcome_unknown`.
    pub fn result(&self, duplicate: bool) -> SendResult {
        SendResult {
            request_id: self.request_id.clone(),
            chat_id: self.chat_id.clone(),
            state: match self.state {
                JournalState::Accepted => SendState::Accepted,
                JournalState::Failed => SendState::Failed,
                _ => SendState::OutcomeUnknown,
            },
            message_id: Some(self.message_id.clone()),
            duplicate,
            accepted_at: self.accepted_at,
        }
    }
}

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

const SELECT: &str = "select request_id, tool, chat_id, digest, message_id, state, accepted_at,
            state in ('reserved', 'transmitting')
              and updated_at < now() - make_interval(secs => $3)
     from send_journal where connection_id = $1 and request_id = $2";

/// How long a send may stay in flight before it is taken as abandoned: the connector's budget
/// (after which the call journals some outcome) and a margin for the journal write itself.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(65);

/// Settle abandoned sends: in flight past an age (`$1`, seconds) → `outcome_unknown` (it may
/// have left; it never transmits again); `$2`/`$3` one key, or null for all.
const SETTLE_STALE: &str = "update send_journal set state = 'outcome_unknown', updated_at = now()
     where state in ('reserved', 'transmitting')
       and updated_at <= now() - make_interval(secs => $1)
       and ($2::text is null or (connection_id = $2 and request_id = $3))";

/// Settle the abandoned sends ([`SETTLE_STALE`]) in flight for longer than `older_than`
/// ([`STALE_AFTER`] for the sweep; zero for a key known abandoned): every one, or only `key`'s.
/// A row that reached a final state meanwhile is left as it is. The count.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.settle_stale"))]
pub async fn settle_stale(
    db: &impl GenericClient,
    key: Option<(&str, &str)>,
    older_than: std::time::Duration,
) -> anyhow::Result<u64> {
    let stmt = db.prepare_cached(SETTLE_STALE).await?;
    let (c, r) = key.unzip();
    Ok(db
        .execute(&stmt, &[&older_than.as_secs_f64(), &c, &r])
        .await?)
}

/// A reservation whose call failed before any hand-over (its reply was lost, say) is `failed`:
/// nothing was transmitted under `wa_id`. Only a row still in flight under that id changes.
pub async fn abandon(
    db: &impl GenericClient,
    connection_id: &str,
    request_id: &str,
    wa_id: &str,
) -> anyhow::Result<u64> {
    Ok(db
        .execute(
            "update send_journal set state = 'failed', updated_at = now()
             where connection_id = $1 and request_id = $2 and wa_id = $3
               and state in ('reserved', 'transmitting')",
            &[&connection_id, &request_id, &wa_id],
        )
        .await?)
}

/// The row of `(connection_id, request_id)`, if any.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.get"))]
pub async fn get(
    db: &impl GenericClient,
    connection_id: &str,
    request_id: &str,
) -> anyhow::Result<Option<Entry>> {
    let stmt = db.prepare_cached(SELECT).await?;
    db.query_opt(
        &stmt,
        &[&connection_id, &request_id, &STALE_AFTER.as_secs_f64()],
    )
    .await?
    .map(|r| {
        Ok(Entry {
            request_id: r.try_get(0)?,
            tool: r.try_get(1)?,
            chat_id: r.try_get(2)?,
            digest: r.try_get(3)?,
            message_id: r.try_get(4)?,
            state: JournalState::parse(r.try_get(5)?)?,
            accepted_at: r.try_get(6)?,
            stale: r.try_get(7)?,
        })
    })
    .transpose()
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
static RESERVE: LazyLock<String> = LazyLock::new(|| reserve_sql(&[]));

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

/// Moves a send still in flight to a final state (`$3`, with `$4` its acceptance time);
/// `accepted` and `failed` drop the outbox row with it. A send no longer in flight changes no
/// row and the statement fails (a division by that zero count), so it also serves inside a
/// transaction that must not commit without it ([`accepted_with_echo`]).
const FINISH: &str = "with u as (
       update send_journal set state = $3, accepted_at = $4, wa_error = $5, updated_at = now()
       where connection_id = $1 and request_id = $2
         and state in ('reserved', 'transmitting')
       returning connection_id, request_id),
     d as (
       delete from send_outbox o using u
       where $3 <> 'outcome_unknown'
         and o.connection_id = u.connection_id and o.request_id = u.request_id)
     select 1 / (select count(*) from u)";

/// Record a final state (`accepted` with its time, `outcome_unknown` or `failed`, with
/// WhatsApp's error code when its server refused the send) for a transmitting send. `accepted`
/// and `failed` drop the outbox row in the same statement.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.finish"))]
pub async fn finish(
    db: &impl GenericClient,
    connection_id: &str,
    request_id: &str,
    (state, refusal): (JournalState, Option<&str>),
    accepted_at: Option<DateTime<Utc>>,
) -> anyhow::Result<()> {
    debug_assert!(state.is_final());
    let stmt = db.prepare_cached(FINISH).await?;
    db.query_one(
        &stmt,
        &[
            &connection_id,
            &request_id,
            &state.as_str(),
            &accepted_at,
            &refusal,
        ],
    )
    .await
    .map_err(|e| match e.code() {
        Some(&tokio_postgres::error::SqlState::DIVISION_BY_ZERO) => {
            anyhow::anyhow!("the send was no longer in flight")
        }
        _ => e.into(),
    })?;
    Ok(())
}

/// `accepted` as a statement the archive commits together with the send's own message
/// (`Archive::ingest_live_with`): the send is journaled accepted exactly when its message is
/// archived, and neither commits for a send no longer in flight.
pub fn accepted_with_echo(
    connection_id: &str,
    request_id: &str,
    accepted_at: DateTime<Utc>,
) -> CommitWith {
    CommitWith {
        sql: FINISH,
        params: vec![
            Box::new(connection_id.to_owned()),
            Box::new(request_id.to_owned()),
            Box::new(JournalState::Accepted.as_str()),
            Box::new(Some(accepted_at)),
            Box::new(None::<String>),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_read_as_results() {
        for s in [
            JournalState::Reserved,
            JournalState::Transmitting,
            JournalState::Accepted,
            JournalState::OutcomeUnknown,
            JournalState::Failed,
        ] {
            assert_eq!(JournalState::parse(s.as_str()).unwrap(), s);
        }
        let e = Entry {
            request_id: "r".into(),
            tool: "send_message".into(),
            chat_id: "c_1".into(),
            digest: vec![1],
            message_id: "m_1".into(),
            state: JournalState::Transmitting,
            accepted_at: None,
            stale: false,
        };
        assert_eq!(e.result(true).state, SendState::OutcomeUnknown);
        assert!(e.result(true).duplicate);
        assert!(!JournalState::Transmitting.is_final());
    }
}
