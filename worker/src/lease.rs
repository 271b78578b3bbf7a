//! One worker at a time (#25, ARCHITECTURE.md "One worker, fenced"): the lease a worker must
//! hold before it serves RPCs, runs the connector or writes the archive and the journal, and
//! the fencing token that makes the writes of a worker that lost it fail.
//!
//! A lease is a row in Postgres (`worker_lease`, migrations 0015 and 0019) naming the account
//! it owns ([`account_lease`]): each account has its own, and [`crate::fleet`] decides which
//! ones a worker takes. A worker takes one when it has expired by the
//! database's clock, bumping its `epoch`; it keeps it by pushing the expiry [`TTL`] ahead every
//! [`RENEW_EVERY`]. A worker that finds it held is a **standby** for it: it tries again
//! ([`try_acquire`]) at its fleet's next step, every [`POLL_EVERY`], so it takes over within
//! `TTL + POLL_EVERY` of the holder's last renewal.
//!
//! The holder counts its lease as held until `TTL − MARGIN` after it *sent* its last successful
//! renewal, by its own monotonic clock: the row's expiry was set later than that by the server,
//! so the holder stops counting before the row expires, and a standby never starts while the
//! holder still believes it holds. A holder past that deadline (Postgres unreachable, or the
//! process was paused) hands nothing to WhatsApp and keeps trying to renew: a renewal under the
//! same epoch means nobody took over (while Postgres was down nobody could), and it goes on;
//! one that finds another epoch means it lost the lease for good and must stop
//! ([`Held::lost`]). Meanwhile the fence refuses its writes whatever it still believes, because
//! its sessions carry the old epoch ([`crate::db::fenced_pool`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::supervise::Supervisor;

/// The name of account `id`'s lease (`account:<id>`).
pub fn account_lease(id: &str) -> String {
    format!("account:{id}")
}

/// The account a lease name is of.
pub fn account_of_lease(name: &str) -> Option<&str> {
    name.strip_prefix("account:")
}
/// How long a renewal keeps the lease, by the database's clock.
pub const TTL: Duration = Duration::from_secs(5);
/// How often the holder renews.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);
/// How often a standby tries to take the lease.
pub const POLL_EVERY: Duration = Duration::from_secs(1);
/// How much sooner than the row the holder stops counting on the lease.
const MARGIN: Duration = Duration::from_secs(1);
/// The longest a takeover waits for the old holder's writes in flight before trying again.
const TAKEOVER_LOCK_WAIT: &str = "2s";

/// The row of a lease nobody has held yet (an account added since the migrations ran).
const ENSURE: &str = "insert into worker_lease (name) values ($1) on conflict (name) do nothing";

/// Take the lease if it has expired: the row is locked `for update` first (a plain `update`
/// would not wait for the fence's key-share locks), so the takeover waits for the old holder's
/// writes in flight, and those that come later see the new epoch and fail.
const LOCK_EXPIRED: &str =
    "select 1 from worker_lease where name = $1 and expires_at < now() for update";
const TAKE: &str = "update worker_lease set epoch = epoch + 1, holder = $2,
         expires_at = now() + make_interval(secs => $3)
     where name = $1 returning epoch";

/// Keep it: only while the epoch is still ours, and never once released (a renewal already
/// in flight when the lease is given up must not take it back).
const RENEW: &str = "update worker_lease set expires_at = now() + make_interval(secs => $3)
     where name = $1 and epoch = $2 and expires_at <> '-infinity' returning 1";

/// Give it up at a clean stop, so a standby takes over at once.
const RELEASE: &str = "update worker_lease set expires_at = '-infinity'
     where name = $1 and epoch = $2";

/// A lease this worker holds: its name, its epoch (the fencing token) and whether it still
/// counts. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Held {
    name: Arc<str>,
    epoch: i64,
    holder: Arc<str>,
    until: Arc<Mutex<Instant>>,
    lost: CancellationToken,
}

impl Held {
    /// What it owns.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fencing token: every session of this worker carries it.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// True while the lease counts: renewed recently enough and not given up.
    pub fn is_held(&self) -> bool {
        !self.lost.is_cancelled() && Instant::now() < *self.until.lock().expect("lease clock")
    }

    /// Cancelled once the lease is lost (or released): the worker must stop.
    pub fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// Renew until the supervisor's stop or until the lease is lost; in the background, as a
    /// fatal task (a keeper that died would leave a worker that never sends again).
    pub fn spawn_keeper(&self, pool: Pool, supervisor: &Supervisor) {
        let held = self.clone();
        let stop = supervisor.stop().clone();
        supervisor.spawn_fatal("lease keeper", async move {
            held.keep(&pool, &stop).await;
            Ok(())
        });
    }

    async fn keep(&self, pool: &Pool, stop: &CancellationToken) {
        let mut tick = tokio::time::interval(RENEW_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut lapsed = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.lost.cancelled() => return,
                _ = tick.tick() => {}
            }
            let sent = Instant::now();
            let renewed = tokio::time::timeout(RENEW_EVERY, async {
                let db = pool.get().await?;
                let stmt = db.prepare_cached(RENEW).await?;
                anyhow::Ok(
                    db.query_opt(&stmt, &[&&*self.name, &self.epoch, &TTL.as_secs_f64()])
                        .await?
                        .is_some(),
                )
            })
            .await;
            match renewed {
                Ok(Ok(true)) => {
                    *self.until.lock().expect("lease clock") = sent + TTL - MARGIN;
                    if std::mem::take(&mut lapsed) {
                        tracing::info!(
                            lease = %self.name,
                            epoch = self.epoch,
                            "lease renewed after a lapse: nobody took it over; sending again"
                        );
                    }
                }
                Ok(Ok(false)) => {
                    tracing::error!(
                        lease = %self.name,
                        epoch = self.epoch,
                        "lease lost: another worker has taken it over"
                    );
                    crate::metrics::lease_lost();
                    self.lost.cancel();
                    return;
                }
                Ok(Err(e)) => {
                    tracing::debug!(lease = %self.name, error = %crate::error::redacted(e.as_ref()), "lease renewal failed; retrying")
                }
                Err(_) => tracing::debug!(lease = %self.name, "lease renewal timed out; retrying"),
            }
            if !lapsed && !self.is_held() {
                lapsed = true;
                tracing::warn!(
                    lease = %self.name,
                    epoch = self.epoch,
                    "lease lapsed: not renewed in time (Postgres unreachable, or this process \
                     was paused); nothing is handed to WhatsApp until it is renewed or lost"
                );
            }
        }
    }

    /// Give the lease up (a clean stop, or a worker that cannot serve): it stops counting at
    /// once ([`Held::lost`]) and a standby may take it within a poll.
    pub async fn release(&self, pool: &Pool) {
        self.lost.cancel();
        let released = async {
            let db = pool.get().await?;
            db.execute(RELEASE, &[&&*self.name, &self.epoch]).await?;
            anyhow::Ok(())
        };
        match tokio::time::timeout(RENEW_EVERY, released).await {
            Ok(Ok(())) => tracing::info!(lease = %self.name, epoch = self.epoch, "lease released"),
            _ => tracing::warn!(
                lease = %self.name,
                "lease not released; it expires by itself"
            ),
        }
    }

    /// Who holds it, as written in the row (`host:pid:random`).
    pub fn holder(&self) -> &str {
        &self.holder
    }
}

/// One attempt at lease `name` for `holder`: `Some` when it had expired (or was never held)
/// and is now this worker's; `None` while another worker holds it, or when the takeover waited
/// too long for the old holder's writes in flight (try again later).
pub async fn try_acquire(pool: &Pool, name: &str, holder: &str) -> anyhow::Result<Option<Held>> {
    let sent = Instant::now();
    match try_take(pool, name, holder).await {
        Ok(Some(epoch)) => Ok(Some(Held::taken(name, epoch, holder, sent))),
        Ok(None) => Ok(None),
        Err(e) if is_lock_wait(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Held {
    /// A lease taken at `epoch` by a request sent at `sent`.
    fn taken(name: &str, epoch: i64, holder: &str, sent: Instant) -> Self {
        Self {
            name: name.into(),
            epoch,
            holder: holder.into(),
            until: Arc::new(Mutex::new(sent + TTL - MARGIN)),
            lost: CancellationToken::new(),
        }
    }
}

async fn try_take(pool: &Pool, name: &str, holder: &str) -> anyhow::Result<Option<i64>> {
    let mut db = pool.get().await?;
    db.execute(ENSURE, &[&name]).await?;
    let tx = db.transaction().await?;
    tx.batch_execute(&format!("set local lock_timeout = '{TAKEOVER_LOCK_WAIT}'"))
        .await?;
    if tx.query_opt(LOCK_EXPIRED, &[&name]).await?.is_none() {
        return Ok(None);
    }
    let epoch = tx
        .query_one(TAKE, &[&name, &holder, &TTL.as_secs_f64()])
        .await?
        .get(0);
    tx.commit().await?;
    Ok(Some(epoch))
}

/// The takeover waited too long for the old holder's writes in flight: try again later.
fn is_lock_wait(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<tokio_postgres::Error>()
            .and_then(|e| e.code())
            .is_some_and(|c| *c == tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE)
    })
}

/// This process's name in the lease row: host, process id and a random part (two workers in
/// one test process differ).
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    let mut r = [0u8; 3];
    let _ = getrandom::fill(&mut r);
    format!(
        "{host}:{}:{:02x}{:02x}{:02x}",
        std::process::id(),
        r[0],
        r[1],
        r[2]
    )
}
