//! Start-up recovery of the journal (DESIGN §5): a send that was being handed over when the
//! worker stopped may have left, so it becomes `outcome_unknown` (and never transmits again);
//! one that was only reserved never left, so it becomes `failed`. Runs for an account when a
//! worker takes its lease, before any of its requests is served: only the lease's holder sends
//! for the account, and the previous holder's writes are fenced by then. While the worker runs, a sweep settles sends abandoned
//! in flight (their call could not journal an outcome) once they are older than the
//! connector's budget allows ([`journal::STALE_AFTER`]).

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use super::journal;
use crate::supervise::Supervisor;

/// How often the sweep looks for abandoned sends.
pub const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// What recovery changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// `transmitting` → `outcome_unknown`.
    pub unknown: u64,
    /// `reserved` → `failed`.
    pub failed: u64,
    /// Outbox rows removed (expired, settled or echoed).
    pub swept: u64,
}

/// Settle every unfinished send of `account` and sweep the outbox, in one transaction.
pub async fn recover(pool: &Pool, account: &str) -> anyhow::Result<Recovered> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let unknown = tx
        .execute(
            "update send_journal set state = 'outcome_unknown', updated_at = now()
             where state = 'transmitting' and account_id = $1",
            &[&account],
        )
        .await?;
    let failed = tx
        .execute(
            "update send_journal set state = 'failed', updated_at = now()
             where state = 'reserved' and account_id = $1",
            &[&account],
        )
        .await?;
    let swept = super::outbox::sweep(&tx).await?;
    tx.commit().await?;
    let r = Recovered {
        unknown,
        failed,
        swept,
    };
    if unknown + failed > 0 {
        tracing::warn!(
            account,
            outcome_unknown = unknown,
            failed,
            "unfinished sends settled after an unclean stop"
        );
    }
    Ok(r)
}

/// Settle abandoned sends every [`SWEEP_EVERY`] until the supervisor stops; started again by
/// `supervisor` if it fails.
pub fn spawn_sweeper(pool: Pool, supervisor: &Supervisor) {
    let stop = supervisor.stop().clone();
    supervisor.spawn_restarting("abandoned-send sweeper", move || {
        sweep_until(pool.clone(), stop.clone())
    });
}

/// The sweeper's loop, until `stop`.
async fn sweep_until(pool: Pool, stop: CancellationToken) -> anyhow::Result<()> {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            _ = every.tick() => {}
        }
        match sweep(&pool).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(outcome_unknown = n, "abandoned sends settled"),
            Err(e) => {
                tracing::warn!(error = %crate::error::redacted(e.as_ref()), "the abandoned-send sweep failed; next try soon")
            }
        }
    }
}

/// One sweep: abandoned sends → `outcome_unknown`. The count.
pub async fn sweep(pool: &Pool) -> anyhow::Result<u64> {
    let db = pool.get().await?;
    journal::settle_stale(&db, None, journal::STALE_AFTER).await
}
