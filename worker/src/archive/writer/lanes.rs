//! History chunks stored beside each other, so history ingest uses both cores (DESIGN §11):
//! the writer resolves a chunk's chats (committed on their own) and reserves its positions,
//! then hands the rest — rows, inserts, commit — to a task with its own connection and
//! transaction, and goes on to the next chunk while Postgres inserts this one. At most
//! [`LANES`] chunks are in flight. Only chunks that depend on no other archived message
//! ([`messages::independent`]) go this way; every other command waits until the lanes are
//! empty. Chat statistics of lane chunks are deferred; after a page's last chunk (or every
//! [`FLUSH_CHUNKS`]) the writer lets the lanes empty and applies them (`Pending::flush_all`)
//! before it answers that chunk.
//!
//! Positions still become visible in order (DESIGN §8): chunks insert at the same time but
//! commit one after the other, in position order — each waits for its predecessor's turn to
//! end before its `COMMIT`. That wait happens outside Postgres, so no chunk may ever wait for
//! a row lock held by another chunk in flight (Postgres could not see the cycle): a chunk
//! that shares a message with one in flight (the only key two chunks can both take) waits
//! for the lanes to empty instead.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};

use deadpool_postgres::Pool;
use tokio::sync::oneshot;
use tokio::task::{Id, JoinSet};

use super::messages::{self, Ctx, Parsed, Written};
use super::stats::{FLUSH_CHUNKS, Step};
use super::{AccountState, Reply, Writer, chats};
use crate::archive::ids::IdKey;
use crate::archive::jid::JidKind;
use crate::archive::model::{Inbound, IngestOutcome};

/// History chunks in flight at once: one per core of the machine DESIGN §11 measures on.
pub(crate) const LANES: usize = 2;

/// One chunk, ready to store without the writer's state.
pub(super) struct Job {
    pub(super) account: String,
    pub(super) messages: Vec<Inbound>,
    pub(super) parsed: Vec<Option<Parsed>>,
    /// Canonical JID → chat id for every JID of the chunk (the chats are committed).
    pub(super) ids: HashMap<String, String>,
    /// The first of `messages.len()` positions reserved for the chunk; unused ones stay gaps.
    pub(super) first_position: i64,
    pub(super) state: AccountState,
    pub(super) key: IdKey,
}

/// A chunk's place in the commit order.
struct Turn {
    /// Resolves when the chunk before has committed or given up (none: no chunk before).
    after: Option<oneshot::Receiver<()>>,
    /// Dropped when this chunk has committed or given up, after its predecessor did.
    done: oneshot::Sender<()>,
}

impl Turn {
    /// Wait for the chunk before (at most once).
    async fn wait(&mut self) {
        if let Some(after) = self.after.take() {
            let _ = after.await;
        }
    }
}

/// What the writer keeps of a chunk in flight.
struct InFlight {
    account: String,
    /// The last chunk of its history page: answered once the statistics are applied.
    last: bool,
    /// Hashes of the chunk's `(chat id, WhatsApp id)` pairs, the inputs of its message ids.
    keys: HashSet<u64>,
    reply: Reply<Vec<IngestOutcome>>,
}

/// A chunk that finished (committed or not), for the writer to record and answer.
pub(super) struct Finished {
    pub(super) account: String,
    pub(super) last: bool,
    pub(super) reply: Reply<Vec<IngestOutcome>>,
    pub(super) result: anyhow::Result<Written>,
}

/// The chunks in flight.
pub(super) struct Lanes {
    pool: Pool,
    tasks: JoinSet<anyhow::Result<Written>>,
    in_flight: HashMap<Id, InFlight>,
    /// The turn of the chunk started last: the next one commits after it.
    tail: Option<oneshot::Receiver<()>>,
    hasher: RandomState,
}

impl Lanes {
    pub(super) fn new(pool: Pool) -> Self {
        Self {
            pool,
            tasks: JoinSet::new(),
            in_flight: HashMap::new(),
            tail: None,
            hasher: RandomState::new(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// Whether another chunk may start.
    pub(super) fn has_room(&self) -> bool {
        self.in_flight.len() < LANES
    }

    /// The hashes of `job`'s message keys.
    fn keys(&self, job: &Job) -> HashSet<u64> {
        (job.messages.iter().zip(&job.parsed))
            .filter_map(|(m, p)| {
                let chat = job.ids.get(p.as_ref()?.chat_jid())?;
                Some(self.hasher.hash_one((chat, &m.wa_id)))
            })
            .collect()
    }

    /// Start storing `job` unless it may share a message with a chunk in flight; then it is
    /// handed back, to start once the lanes are empty.
    pub(super) fn spawn(
        &mut self,
        job: Job,
        last: bool,
        reply: Reply<Vec<IngestOutcome>>,
    ) -> Option<(Job, Reply<Vec<IngestOutcome>>)> {
        let keys = self.keys(&job);
        if self.in_flight.values().any(|f| !f.keys.is_disjoint(&keys)) {
            return Some((job, reply));
        }
        let (done, tail) = oneshot::channel();
        let turn = Turn {
            after: self.tail.replace(tail),
            done,
        };
        let account = job.account.clone();
        let handle = self.tasks.spawn(store(self.pool.clone(), job, turn));
        self.in_flight.insert(
            handle.id(),
            InFlight {
                account,
                last,
                keys,
                reply,
            },
        );
        None
    }

    /// The next chunk to finish; `None` when none is in flight.
    pub(super) async fn next(&mut self) -> Option<Finished> {
        let (id, result) = match self.tasks.join_next_with_id().await? {
            Ok((id, result)) => (id, result),
            Err(e) => (
                e.id(),
                Err(anyhow::anyhow!("a history chunk's task failed: {e}")),
            ),
        };
        let f = self
            .in_flight
            .remove(&id)
            .expect("every task has its chunk in flight");
        Some(Finished {
            account: f.account,
            last: f.last,
            reply: f.reply,
            result,
        })
    }
}

/// Store one chunk in a transaction of its own, committed in its turn.
async fn store(pool: Pool, job: Job, mut turn: Turn) -> anyhow::Result<Written> {
    let result = async {
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        let excluded = messages::excluded_chats(&tx).await?;
        let ctx = Ctx {
            key: &job.key,
            account: &job.account,
            own: &job.state.own,
            excluded: &excluded,
            live: false,
            merged: &job.state.merged,
        };
        let mut next = job.first_position;
        let written =
            messages::write_resolved(&tx, &ctx, &job.ids, &job.parsed, &mut next, &job.messages)
                .await?;
        turn.wait().await;
        tx.commit().await?;
        anyhow::Ok(written)
    }
    .await;
    // A chunk that gave up still ends its turn after its predecessor's, or the one behind
    // could commit before that one.
    turn.wait().await;
    drop(turn.done);
    result
}

impl Writer {
    /// A history chunk: stored beside the chunks in flight when it may be, else — once they
    /// finished — in the writer's own transaction, as every other write.
    pub(super) async fn history(
        &mut self,
        account: String,
        messages: Vec<Inbound>,
        last: bool,
        reply: Reply<Vec<IngestOutcome>>,
    ) {
        let parsed = messages::parse_all(&messages);
        if !messages::independent(&messages, &parsed) {
            self.drain().await;
            let r = self.messages(&account, &messages, last).await;
            let _ = reply.send(r);
            return;
        }
        // (A command held back by live grouping arrives whether or not a lane is free.)
        while !self.lanes.has_room() {
            if let Some(f) = self.lanes.next().await {
                self.finish(f);
            }
        }
        let job = match self.lane_job(account, messages, parsed).await {
            Ok(job) => job,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        if let Some((job, reply)) = self.lanes.spawn(job, last, reply) {
            self.drain().await;
            let none_left = self.lanes.spawn(job, last, reply);
            debug_assert!(none_left.is_none(), "no chunk is in flight to overlap");
        }
    }

    /// Resolve the chunk's chats (from memory, or committed in a transaction of their own),
    /// mark the chat statistics dirty and reserve the chunk's positions.
    async fn lane_job(
        &mut self,
        account: String,
        messages: Vec<Inbound>,
        parsed: Vec<Option<Parsed>>,
    ) -> anyhow::Result<Job> {
        let wanted = messages::wanted(&parsed);
        let known = (self.accounts.get(&account).cloned()).zip(self.cached(&account, &wanted));
        let (state, ids) = match known {
            Some(known) => known,
            None => {
                let r = self.resolve_committed(&account, &wanted).await;
                self.forgetting(r)?
            }
        };
        self.pending.mark_dirty(&self.pool, &account).await?;
        let first_position = self.next_position;
        self.next_position += messages.len() as i64;
        Ok(Job {
            account,
            messages,
            parsed,
            ids,
            first_position,
            state,
            key: self.key.clone(),
        })
    }

    /// The chat ids of `wanted` when the cache knows every one.
    fn cached(&self, account: &str, wanted: &[(&str, JidKind)]) -> Option<HashMap<String, String>> {
        let mut ids = HashMap::with_capacity(wanted.len());
        for (jid, _) in wanted {
            if !ids.contains_key(*jid) {
                ids.insert((*jid).to_owned(), self.cache.get(account, jid)?.clone());
            }
        }
        Some(ids)
    }

    /// Load the account and resolve `wanted`, creating the chats not seen before, and commit.
    async fn resolve_committed(
        &mut self,
        account: &str,
        wanted: &[(&str, JidKind)],
    ) -> anyhow::Result<(AccountState, HashMap<String, String>)> {
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        let state = self.account(&tx, account).await?;
        let ids = chats::resolve(&tx, &self.key, &mut self.cache, account, wanted).await?;
        tx.commit().await?;
        Ok((state, ids))
    }

    /// Record a finished chunk — its statistics deferred, its highest position announced —
    /// and answer its caller, or keep the answer until the statistics are applied (the last
    /// chunk of a page).
    pub(super) fn finish(&mut self, f: Finished) {
        let result = f.result.map(|mut written| {
            let deltas = std::mem::take(&mut written.deltas);
            self.pending.committed(&f.account, Step::Deferred(deltas));
            // Every chunk before this one has ended (committed or given up) before it
            // committed, so its highest position may be announced even when the writer hears
            // of the two ends the other way round.
            self.after_commit(written)
        });
        match result {
            Ok(outcomes) if f.last => self.unflushed.push((f.reply, outcomes)),
            result => {
                let _ = f.reply.send(result);
            }
        }
    }

    /// Whether deferred statistics are due: a page's last chunk is waiting for them, or
    /// [`FLUSH_CHUNKS`] chunks were deferred.
    pub(super) fn flush_due(&self) -> bool {
        !self.unflushed.is_empty() || self.pending.chunks() >= FLUSH_CHUNKS
    }

    /// Let the lanes empty, apply every deferred statistic and answer the chunks waiting for
    /// that. The chunks are committed whatever happens here: a failure is logged and left
    /// pending (and marked dirty, so a restart repairs it if no later flush does).
    pub(super) async fn flush(&mut self) {
        self.drain().await;
        if let Err(e) = self.pending.flush_all(&self.pool).await {
            tracing::warn!(error = %crate::error::redacted(e.as_ref()), "chat statistics not applied after a history page; kept for the next flush");
        }
        for (reply, outcomes) in self.unflushed.drain(..) {
            let _ = reply.send(Ok(outcomes));
        }
    }

    /// Wait for every chunk in flight and record it.
    pub(super) async fn drain(&mut self) {
        while let Some(f) = self.lanes.next().await {
            self.finish(f);
        }
    }
}
