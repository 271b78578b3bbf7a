//! The live path: messages that someone may be waiting on (a `wait_for_messages` wake-up, a
//! send's answer). Consecutive live deliveries share one transaction, and the transaction's
//! round trips are pipelined on the writer's connection: `BEGIN`, the archive policy read and
//! the writes go out together, written on the policy as last read (a policy changed since
//! rolls them back and they go again); then the chat statistics, any [`AlsoCommit`]
//! statements and `COMMIT` go out together — two round trips for a plain message where one
//! statement after the other cost five. Statements that ride together reach Postgres in the
//! order written (each is prepared, or sent, before the next); a failed statement leaves the
//! transaction aborted and its `COMMIT` rolls back.

use std::collections::HashSet;

use deadpool_postgres::GenericClient as _;
use tokio_postgres::types::ToSql;

use super::messages;
use super::stats::{self, Step};
use super::{Reply, Writer};
use crate::archive::model::{Inbound, IngestOutcome};

const POLICY: &str = "select excluded_chats from archive_policy";

/// The excluded chats in a policy row.
fn excluded(row: Option<tokio_postgres::Row>) -> HashSet<String> {
    row.map(|r| r.get::<_, Vec<String>>(0))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// One statement committed in the same transaction as a live delivery. It must raise an error
/// when it cannot do its part (e.g. divide by the number of rows it changed), which rolls the
/// whole delivery back: it travels in one flight with `COMMIT`, so no row count can be
/// checked before committing. A send journals its `accepted` state this way with the own
/// message it archives: an accepted send is in the archive.
pub struct AlsoCommit {
    /// The statement.
    pub sql: &'static str,
    /// Its parameters.
    pub params: Vec<Box<dyn ToSql + Send + Sync>>,
}

impl std::fmt::Debug for AlsoCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlsoCommit").finish_non_exhaustive()
    }
}

/// One live delivery waiting in a group.
pub(crate) struct Delivery {
    pub(crate) messages: Vec<Inbound>,
    pub(crate) also: Option<AlsoCommit>,
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
        let also: Vec<&AlsoCommit> = group.iter().filter_map(|d| d.also.as_ref()).collect();
        match self.live(account, &all, &also).await {
            Ok(outcomes) => {
                let mut it = outcomes.into_iter();
                for d in group {
                    let n = d.messages.len();
                    let _ = d.reply.send(Ok(it.by_ref().take(n).collect()));
                }
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), deliveries = group.len(), "live group failed; retrying each delivery alone");
                for d in group {
                    self.alone(account, d).await;
                }
            }
        }
    }

    /// Commit one delivery in a transaction of its own and answer it.
    async fn alone(&mut self, account: &str, d: Delivery) {
        let also: Vec<&AlsoCommit> = d.also.iter().collect();
        let r = self.live(account, &d.messages, &also).await;
        let _ = d.reply.send(r);
    }

    /// One live transaction; on failure, forget what it may have made wrong in memory.
    async fn live(
        &mut self,
        account: &str,
        messages: &[Inbound],
        also: &[&AlsoCommit],
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
        also: &[&AlsoCommit],
    ) -> anyhow::Result<(messages::Written, Step)> {
        let state = self.account(db, account).await?;
        let policy = db.prepare_cached(POLICY).await?;
        if self.excluded.is_none() {
            self.excluded = Some(excluded(db.query_opt(&policy, &[]).await?));
        }
        // The writes go out with BEGIN and the policy read, on the policy last seen; a policy
        // changed since rolls them back and they go again on the new one (rare: an owner edit).
        let mut written = loop {
            let cached = self.excluded.take().unwrap_or_default();
            let ctx = messages::Ctx {
                key: &self.key,
                account,
                own: &state.own,
                excluded: &cached,
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
            let fresh = excluded(fresh?);
            let current = fresh == cached;
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

        // Everything below is prepared first, then sent in one flight ending with COMMIT.
        let apply = if now.is_empty() {
            None
        } else {
            Some(db.prepare_cached(stats::APPLY).await?)
        };
        let mut extra = Vec::with_capacity(also.len());
        for a in also {
            extra.push(db.prepare_cached(a.sql).await?);
        }
        let cols = stats::Columns::of(&now);
        let params = cols.params(&account);
        let stats_fut = async {
            match &apply {
                Some(stmt) => db.execute(stmt, &params).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let also_fut = futures::future::join_all(also.iter().zip(&extra).map(|(a, stmt)| {
            let params: Vec<&(dyn ToSql + Sync)> = a
                .params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            async move { db.execute(stmt, &params).await }
        }));
        let (applied, changed, committed) = tokio::join!(
            biased;
            stats_fut,
            also_fut,
            db.batch_execute("commit")
        );
        applied?;
        for c in changed {
            c?;
        }
        committed?;
        Ok((written, step))
    }
}
