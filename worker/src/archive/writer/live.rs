//! The live path: messages that someone may be waiting on (a `wait_for_messages` wake-up, a
//! send's answer). Consecutive live deliveries share one transaction, sent as one flight of
//! pipelined statements when the writer can plan the chunk from memory
//! ([`messages::planned`]): `BEGIN`, a guard that the archive policy is the one last read,
//! the writes, the chat statistics, any [`CommitWith`] statements and `COMMIT` — one round
//! trip to Postgres. The speculation is checked by Postgres itself: a changed policy fails the
//! guard and an already archived message fails its plain `INSERT`, either of which aborts the
//! transaction (its `COMMIT` then rolls back), and the chunk goes the ordinary way. That way
//! is two flights: `BEGIN`, the policy read and the writes together, written on the policy as
//! last read (a policy changed since rolls them back and they go again); then the statistics,
//! any [`CommitWith`] statements and `COMMIT`. Statements that ride together reach Postgres in
//! the order written (each is prepared first, and sent on its future's first poll); a failed
//! statement leaves the transaction aborted and its `COMMIT` rolls back.

use std::collections::HashSet;

use deadpool_postgres::GenericClient as _;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::messages::{self, planned};
use super::stats::{self, Deltas, Step};
use super::{AccountState, Reply, Writer};
use crate::archive::model::{Inbound, IngestOutcome};

const POLICY: &str = "select excluded_chats from archive_policy";

/// Fails (division by zero) unless the excluded chats are still `$1`, as read before.
const POLICY_GUARD: &str = "select 1 / (coalesce((select excluded_chats from archive_policy),
     '{}'::text[]) = $1::text[])::int";

/// The archive policy's excluded chats, as the live path last read them.
#[derive(Debug, Default)]
pub(super) struct Policy {
    /// As stored, for [`POLICY_GUARD`].
    read: Vec<String>,
    /// For lookups.
    set: HashSet<String>,
}

impl Policy {
    /// The excluded chats in a policy row.
    fn of(row: Option<tokio_postgres::Row>) -> Self {
        let read: Vec<String> = row.map(|r| r.get(0)).unwrap_or_default();
        let set = read.iter().cloned().collect();
        Self { read, set }
    }
}
/// One statement committed in the same transaction as a live delivery. It must raise an error
/// when it cannot do its part (e.g. divide by the number of rows it changed), which rolls the
/// whole delivery back: it travels in one flight with `COMMIT`, so no row count can be
/// checked before committing. A send journals its `accepted` state this way with the own
/// message it archives: an accepted send is in the archive.
pub struct CommitWith {
    /// The statement.
    pub sql: &'static str,
    /// Its parameters.
    pub params: Vec<Box<dyn ToSql + Send + Sync>>,
}

impl std::fmt::Debug for CommitWith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitWith").finish_non_exhaustive()
    }
}

/// One live delivery waiting in a group.
pub(crate) struct Delivery {
    pub(crate) messages: Vec<Inbound>,
    pub(crate) also: Option<CommitWith>,
    pub(crate) reply: Reply<Vec<IngestOutcome>>,
}

impl Writer {
    /// Commit a group of live deliveries together and answer each. When the group fails and
    /// held more than one delivery, each is tried again on its own, so one bad delivery never
    /// fails its neighbours.
    pub(super) async fn live_group(&mut self, account: &str, group: Vec<Delivery>) {
        if group.len() == 1 {
            let d = group.into_iter().next().expect("one");
            self.alone(account, d).await;
            return;
        }
        let all: Vec<Inbound> = group.iter().flat_map(|d| d.messages.clone()).collect();
        let also: Vec<&CommitWith> = group.iter().filter_map(|d| d.also.as_ref()).collect();
        match self.live(account, &all, &also).await {
            Ok(outcomes) => {
                let mut it = outcomes.into_iter();
                for d in group {
                    let n = d.messages.len();
                    let _ = d.reply.send(Ok(it.by_ref().take(n).collect()));
                }
            }
            Err(e) => {
                tracing::warn!(error = %crate::error::redacted(e.as_ref()), deliveries = group.len(), "live group failed; retrying each delivery alone");
                for d in group {
                    self.alone(account, d).await;
                }
            }
        }
    }

    /// Commit one delivery in a transaction of its own and answer it.
    async fn alone(&mut self, account: &str, d: Delivery) {
        let also: Vec<&CommitWith> = d.also.iter().collect();
        let r = self.live(account, &d.messages, &also).await;
        let _ = d.reply.send(r);
    }

    /// One live transaction; on failure, forget what it may have made wrong in memory.
    async fn live(
        &mut self,
        account: &str,
        messages: &[Inbound],
        also: &[&CommitWith],
    ) -> anyhow::Result<Vec<IngestOutcome>> {
        let pool = self.pool.clone();
        let client = pool.get().await?;
        match self.live_tx(&client, account, messages, also).await {
            Ok((written, step)) => {
                self.pending.committed(account, step);
                Ok(self.after_commit(written))
            }
            Err(e) => {
                self.forget();
                // Leave no transaction open on a pooled connection; one that cannot even roll
                // back is dropped from the pool.
                if client.batch_execute("rollback").await.is_err() {
                    let _ = deadpool_postgres::Object::take(client);
                }
                Err(e)
            }
        }
    }

    async fn live_tx(
        &mut self,
        db: &deadpool_postgres::Object,
        account: &str,
        messages: &[Inbound],
        also: &[&CommitWith],
    ) -> anyhow::Result<(messages::Written, Step)> {
        let state = self.account(db, account).await?;
        let policy = db.prepare_cached(POLICY).await?;
        if self.excluded.is_none() {
            self.excluded = Some(Policy::of(db.query_opt(&policy, &[]).await?));
        }
        if let Some(done) = self.one_flight(db, account, &state, messages, also).await? {
            return Ok(done);
        }
        // The writes go out with BEGIN and the policy read, on the policy last seen; a policy
        // changed since rolls them back and they go again on the new one (rare: an owner edit).
        let mut written = loop {
            let cached = self.excluded.take().unwrap_or_default();
            let ctx = messages::Ctx {
                key: &self.key,
                account,
                own: &state.own,
                excluded: &cached.set,
                live: true,
                merged: &state.merged,
            };
            let (begun, fresh, written) = tokio::join!(
                biased;
                db.batch_execute("begin"),
                db.query_opt(&policy, &[]),
                messages::write(db, &ctx, &mut self.cache, &mut self.next_position, messages)
            );
            begun?;
            let fresh = Policy::of(fresh?);
            let current = fresh.set == cached.set;
            self.excluded = Some(fresh);
            if current {
                break written?;
            }
            db.batch_execute("rollback").await?;
            // Rows and chats the rolled-back writes made are not there.
            self.cache.clear();
        };
        let (now, step) = self
            .pending
            .live(account, std::mem::take(&mut written.deltas));
        let ending = Ending::prepare(db, &now, also).await?;
        let (applied, changed, committed) = ending.send(db, account, &now, also).await;
        applied?;
        for c in changed {
            c?;
        }
        committed?;
        Ok((written, step))
    }

    /// The chunk in one flight, when the writer can plan it from memory; `Ok(None)` when it
    /// cannot, or when Postgres refused the speculation (a changed policy, a message archived
    /// already): the flight rolled back and the ordinary path takes the chunk.
    async fn one_flight(
        &mut self,
        db: &deadpool_postgres::Object,
        account: &str,
        state: &AccountState,
        messages: &[Inbound],
        also: &[&CommitWith],
    ) -> anyhow::Result<Option<(messages::Written, Step)>> {
        let Some(policy) = &self.excluded else {
            return Ok(None);
        };
        let ctx = messages::Ctx {
            key: &self.key,
            account,
            own: &state.own,
            excluded: &policy.set,
            live: true,
            merged: &state.merged,
        };
        let first = self.next_position;
        let Some(mut plan) = planned::plan(&ctx, &self.cache, &mut self.next_position, messages)
        else {
            return Ok(None);
        };
        let (now, step) = self
            .pending
            .live(account, std::mem::take(&mut plan.written.deltas));
        let guard = db.prepare_cached(POLICY_GUARD).await?;
        let prepared = plan.prepare(db).await?;
        let ending = Ending::prepare(db, &now, also).await?;
        let read: [&(dyn ToSql + Sync); 1] = [&policy.read];
        let (begun, guarded, wrote, (applied, changed, committed)) = tokio::join!(
            biased;
            db.batch_execute("begin"),
            db.query_one(&guard, &read),
            plan.send(db, account, &prepared),
            ending.send(db, account, &now, also)
        );
        begun?;
        let refused = matches!(&guarded, Err(e) if e.code() == Some(&SqlState::DIVISION_BY_ZERO))
            || (guarded.is_ok() && matches!(wrote, Err(planned::Failed::Duplicate)));
        if refused {
            // The COMMIT of the aborted transaction rolled it back.
            committed?;
            self.next_position = first;
            if guarded.is_err() {
                // The policy changed: read it now, so the ordinary path writes on the new one
                // at its first attempt.
                let policy = db.prepare_cached(POLICY).await?;
                self.excluded = Some(Policy::of(db.query_opt(&policy, &[]).await?));
            }
            tracing::debug!("live chunk speculation refused; taking the ordinary path");
            return Ok(None);
        }
        guarded?;
        match wrote {
            Ok(()) => {}
            Err(planned::Failed::Other(e)) => return Err(e.into()),
            // Not reached (a refusal, or the guard's own error, returned above); an error, not a
            // panic, should that ever change: the writer must not die.
            Err(planned::Failed::Duplicate) => anyhow::bail!("a planned message was archived"),
        }
        applied?;
        for c in changed {
            c?;
        }
        committed?;
        Ok(Some((plan.written, step)))
    }
}

/// The statements a live transaction ends with — the chat statistics, the [`CommitWith`]
/// statements and `COMMIT` — prepared before any flight they ride in.
struct Ending {
    apply: Option<tokio_postgres::Statement>,
    also: Vec<tokio_postgres::Statement>,
}

/// What each statement of an [`Ending`] answered.
type Ended = (
    Result<(), tokio_postgres::Error>,
    Vec<Result<u64, tokio_postgres::Error>>,
    Result<(), tokio_postgres::Error>,
);

impl Ending {
    /// Prepare the ending of a transaction applying `now` and `also`.
    async fn prepare(
        db: &deadpool_postgres::Object,
        now: &Deltas,
        also: &[&CommitWith],
    ) -> anyhow::Result<Self> {
        let apply = if now.is_empty() {
            None
        } else {
            Some(db.prepare_cached(stats::statement(now)).await?)
        };
        let mut prepared = Vec::with_capacity(also.len());
        for a in also {
            prepared.push(db.prepare_cached(a.sql).await?);
        }
        Ok(Self {
            apply,
            also: prepared,
        })
    }

    /// Send the statistics `now`, the `also` statements and `COMMIT`, in that order (each on
    /// the future's first poll), and collect every answer.
    async fn send(
        &self,
        db: &deadpool_postgres::Object,
        account: &str,
        now: &Deltas,
        also: &[&CommitWith],
    ) -> Ended {
        let cols = stats::Columns::of(now);
        let params = cols.params(&account);
        let stats_fut = async {
            match &self.apply {
                Some(stmt) => db.execute(stmt, &params).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let also_fut = futures::future::join_all(also.iter().zip(&self.also).map(|(a, stmt)| {
            let params: Vec<&(dyn ToSql + Sync)> = a
                .params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            async move { db.execute(stmt, &params).await }
        }));
        tokio::join!(
            biased;
            stats_fut,
            also_fut,
            db.batch_execute("commit")
        )
    }
}
