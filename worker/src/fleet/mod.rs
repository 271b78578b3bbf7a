//! Workers share the accounts (ARCHITECTURE.md "Several workers"): each account is served by
//! exactly one worker, the holder of its lease ([`crate::lease`]); this module decides which
//! leases a worker takes and gives up, and starts and stops what serving an account takes
//! ([`account`]).
//!
//! Every [`POLL_EVERY`] a worker refreshes its row in `worker_presence` and reads the registry,
//! the leases and how many workers are alive (rows refreshed within [`PRESENCE_TTL`]). Its fair
//! share is `⌈accounts / workers⌉`:
//!
//! - below it, it takes leases nobody holds (expired, released, or never held), the accounts it
//!   served last first (sticky across a restart);
//! - above it (a worker joined), it gives one account up per [`RELEASE_EVERY`], cleanly: the
//!   account's requests drain, its writer and connector stop, its lease is released, and a
//!   worker below its share takes it within a poll;
//! - a lease expired for [`ORPHAN_AFTER`] is taken whatever the share: an account is better
//!   served by a busy worker than by none.
//!
//! A worker that dies stops renewing: its leases expire [`crate::lease::TTL`] after its last
//! renewal and its presence ages out by then too, so the others' shares grow and they take its
//! accounts at their next poll — within `TTL + POLL_EVERY` plus the account's start (its
//! writer resumes from the account's last committed position; sends it left unfinished are
//! settled, [`crate::send::recovery`]).

pub mod account;

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConnectorKind};
use crate::lease;
use crate::state::AppState;

/// How often a worker looks at the leases (and refreshes its presence).
pub const POLL_EVERY: Duration = lease::POLL_EVERY;
/// A worker whose presence is older than this is gone.
pub const PRESENCE_TTL: Duration = lease::TTL;
/// A lease expired this long is taken by any worker, whatever its share.
pub const ORPHAN_AFTER: Duration = Duration::from_secs(2);
/// The least time between two accounts given up for balance.
pub const RELEASE_EVERY: Duration = Duration::from_secs(2);

/// Refresh this worker's presence.
const HEARTBEAT: &str = "insert into worker_presence (holder, seen_at) values ($1, now())
     on conflict (holder) do update set seen_at = now()";
/// Forget workers long gone.
const FORGET: &str = "delete from worker_presence where seen_at < now() - interval '1 minute'";
/// Leave at a clean stop, so the others' shares grow at once.
const LEAVE: &str = "delete from worker_presence where holder = $1";
/// Workers alive now.
const ALIVE: &str =
    "select count(*) from worker_presence where seen_at > now() - make_interval(secs => $1)";
/// Every account in use, with its connector and its lease: who holds it, whether that still
/// counts, and for how long it has not.
const PLAN: &str = "select a.account_id, a.connector, l.holder,
            coalesce(l.expires_at > now(), false),
            coalesce(extract(epoch from now() - nullif(l.expires_at, '-infinity')), 1e9)::float8
       from accounts a
       left join worker_lease l on l.name = 'account:' || a.account_id
      where a.removed_at is null
      order by a.account_id";

/// One account in the plan.
#[derive(Debug, Clone)]
struct Planned {
    id: String,
    connector: Option<String>,
    holder: Option<String>,
    held: bool,
    expired_for: f64,
}

/// An account this worker serves: the task serving it and how to stop it.
struct Running {
    /// The account's lease (given up at once when NATS is lost).
    held: lease::Held,
    stop: CancellationToken,
    task: JoinHandle<()>,
    since: Instant,
}

/// Take, serve and give up accounts until `shutdown`; then stop serving every account (their
/// requests drain, their leases are released) and leave. `lease_pool` is a small pool outside
/// the serving ones (renewals must not wait behind requests); `can_serve` says whether this
/// worker could serve now (NATS connected): while it cannot, it takes nothing and gives up
/// what it holds after [`NATS_GRACE`].
pub async fn run(
    state: AppState,
    config: Config,
    lease_pool: Pool,
    holder: String,
    can_serve: impl Fn() -> bool,
    shutdown: CancellationToken,
) {
    let mut fleet = Fleet {
        state,
        config,
        lease_pool,
        holder,
        running: HashMap::new(),
        last_release: Instant::now(),
        down_since: None,
    };
    // The first look is at once: a lone worker serves at once. Workers started together each
    // count only those that showed up before them at first, so the first ones may take more
    // than their share; they hand the surplus over within a few polls.
    let mut tick = tokio::time::interval(POLL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        fleet.reap();
        if !fleet.nats_ok(&can_serve).await {
            continue;
        }
        if let Err(e) = fleet.step().await {
            tracing::debug!(error = %crate::error::redacted(e.as_ref()), "account plan not read; retrying");
        }
    }
    fleet.stop_all().await;
    if let Ok(db) = fleet.lease_pool.get().await {
        let _ = db.execute(LEAVE, &[&fleet.holder]).await;
    }
}

/// How long this worker may be without NATS (it answers nothing then) before it gives its
/// accounts up for a worker that can serve them.
pub const NATS_GRACE: Duration = Duration::from_secs(3);

struct Fleet {
    state: AppState,
    config: Config,
    lease_pool: Pool,
    holder: String,
    running: HashMap<String, Running>,
    last_release: Instant,
    down_since: Option<Instant>,
}

impl Fleet {
    /// Whether NATS is up; down for [`NATS_GRACE`], every account is given up (a worker that
    /// reaches NATS takes them within a poll) and none is taken until it is back.
    async fn nats_ok(&mut self, can_serve: &impl Fn() -> bool) -> bool {
        if can_serve() {
            self.down_since = None;
            return true;
        }
        let since = *self.down_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= NATS_GRACE && !self.running.is_empty() {
            tracing::error!(
                accounts = self.running.len(),
                "NATS unreachable for 3 s: giving every account up for a worker that can serve"
            );
            // Released first, so a worker that reaches NATS takes them within a poll; the
            // drains (which NATS cannot confirm) come after, and what they write is fenced.
            for r in self.running.values() {
                r.held.release(&self.lease_pool).await;
            }
            self.stop_all().await;
        }
        false
    }

    /// Forget accounts whose task has ended (lease lost, or stopped).
    fn reap(&mut self) {
        self.running.retain(|_, r| !r.task.is_finished());
    }

    /// One look at the plan: take or give up what the share says.
    async fn step(&mut self) -> anyhow::Result<()> {
        // Statements prepared once per pooled connection: one round trip each, every tick.
        let db = self.lease_pool.get().await?;
        let heartbeat = db.prepare_cached(HEARTBEAT).await?;
        db.execute(&heartbeat, &[&self.holder]).await?;
        db.execute(&db.prepare_cached(FORGET).await?, &[]).await?;
        let alive: i64 = db
            .query_one(
                &db.prepare_cached(ALIVE).await?,
                &[&PRESENCE_TTL.as_secs_f64()],
            )
            .await?
            .get(0);
        let plan: Vec<Planned> = db
            .query(&db.prepare_cached(PLAN).await?, &[])
            .await?
            .iter()
            .map(|r| Planned {
                id: r.get(0),
                connector: r.get(1),
                holder: r.get(2),
                held: r.get(3),
                expired_for: r.get(4),
            })
            .collect();
        drop(db);
        // Accounts removed (or gone from the plan) stop here.
        let gone: Vec<String> = (self.running.keys())
            .filter(|id| !plan.iter().any(|p| &p.id == *id))
            .cloned()
            .collect();
        for id in gone {
            tracing::info!(account = %id, "account removed: no longer served");
            self.stop(&id).await;
        }
        let share = share(plan.len(), alive);
        if self.running.len() > share {
            if alive > 1 && self.last_release.elapsed() >= RELEASE_EVERY {
                self.give_up_one().await;
            }
            return Ok(());
        }
        let mut wanted: Vec<&Planned> = plan
            .iter()
            .filter(|p| !p.held && !self.running.contains_key(&p.id))
            .collect();
        // Sticky: what this worker served last comes first.
        wanted.sort_by_key(|p| p.holder.as_deref() != Some(self.holder.as_str()));
        for p in wanted {
            let orphan = p.expired_for >= ORPHAN_AFTER.as_secs_f64();
            if self.running.len() >= share && !orphan {
                continue;
            }
            self.take(p).await;
        }
        Ok(())
    }

    /// Try to take `p`'s lease and start serving it.
    async fn take(&mut self, p: &Planned) {
        let name = lease::account_lease(&p.id);
        let held = match lease::try_acquire(&self.lease_pool, &name, &self.holder).await {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(account = %p.id, error = %crate::error::redacted(e.as_ref()), "lease not taken");
                return;
            }
        };
        let kind = (p.connector.as_deref())
            .and_then(ConnectorKind::parse)
            .unwrap_or(self.config.connector);
        tracing::info!(account = %p.id, epoch = held.epoch(), connector = kind.as_str(), "account taken: this worker serves it");
        let stop = CancellationToken::new();
        let task = tokio::spawn(account::serve(
            self.state.clone(),
            self.config.clone(),
            self.lease_pool.clone(),
            held.clone(),
            kind,
            stop.clone(),
        ));
        self.running.insert(
            p.id.clone(),
            Running {
                held,
                stop,
                task,
                since: Instant::now(),
            },
        );
    }

    /// Give up the account taken last (the others keep their place).
    async fn give_up_one(&mut self) {
        let newest = (self.running.iter())
            .max_by_key(|(_, r)| r.since)
            .map(|(id, _)| id.clone());
        if let Some(id) = newest {
            tracing::info!(account = %id, "more accounts than this worker's share: handing one over");
            self.stop(&id).await;
            self.last_release = Instant::now();
        }
    }

    /// Stop serving `id` and wait until it has drained and its lease is released.
    async fn stop(&mut self, id: &str) {
        if let Some(r) = self.running.remove(id) {
            r.stop.cancel();
            let _ = r.task.await;
        }
    }

    async fn stop_all(&mut self) {
        for r in self.running.values() {
            r.stop.cancel();
        }
        for (_, r) in self.running.drain() {
            let _ = r.task.await;
        }
    }
}

/// How many of `accounts` each of `workers` serves at most when they are spread evenly.
fn share(accounts: usize, workers: i64) -> usize {
    let workers = usize::try_from(workers.max(1)).unwrap_or(1);
    accounts.div_ceil(workers)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn a_share_rounds_up_and_counts_at_least_one_worker() {
        assert_eq!(share(6, 3), 2);
        assert_eq!(share(5, 3), 2);
        assert_eq!(share(1, 2), 1);
        assert_eq!(share(0, 2), 0);
        assert_eq!(share(4, 0), 4);
    }
}
