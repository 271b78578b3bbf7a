//! The send journal in Postgres (DESIGN §5), per credential (connection id): a row per
//! `request_id` with the digest of (tool, chat, payload), the recipient and the allocated
//! WhatsApp id — never the text or the bytes. Every state change commits before the next step,
//! and the 100,000-key cap is a counter row updated by the reserving statement.

mod reserve;

pub(crate) use reserve::{RESERVE, reserve_sql, reserved};
pub use reserve::{Reservation, Reserved, confirm, may_have_committed, reserve};

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

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
