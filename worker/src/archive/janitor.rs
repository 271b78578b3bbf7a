//! The search index's janitor: moves the full-text index's pending entries into the index
//! proper, on a connection of its own, after the writer commits (beside bulk ingest, or once
//! live messages pause).
//!
//! Why: `messages_search` is a GIN index with `fastupdate`, so an insert only appends its
//! words to a pending list, and whichever backend finds that list over
//! `gin_pending_list_limit` merges it into the tree, inside its own statement. Left alone,
//! that backend is the single writer's: a third of its Postgres time during history ingest
//! (profiled at 1M messages), and a latency spike on whichever live message crosses the limit.
//! Cleaning from here puts that work on another backend (the machine's other core) and keeps
//! the list short for searches, which scan it in full. A writer that reaches the limit while
//! the janitor cleans skips the merge (Postgres lets one backend clean at a time and others
//! return at once), so the two never wait for each other.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::supervise::Supervisor;

/// Messages committed since the last cleaning that make the janitor clean at once (a history
/// chunk is 2,000): bulk ingest gets its list merged beside every chunk.
const EAGER: i64 = 1_000;
/// Quiet after the last commit before fewer messages are cleaned: live messages trickle in
/// one by one, and cleaning right after each would put a second backend's work (and its WAL
/// flush) beside the wake-up and the answer that the commit is about to cause.
const QUIET: Duration = Duration::from_millis(500);
/// Rest between two cleanings: commits arriving meanwhile are cleaned together.
const PAUSE: Duration = Duration::from_millis(20);

/// Clean the search index's pending list after commits (`committed` moves) until the
/// supervisor stops (or the writer is gone): at once when [`EAGER`] messages are waiting, else
/// after [`QUIET`] without a commit. Started again by `supervisor` if it fails.
pub(crate) fn spawn(pool: Pool, committed: watch::Receiver<i64>, supervisor: &Supervisor) {
    let stop = supervisor.stop().clone();
    supervisor.spawn_restarting("search index janitor", move || {
        run(pool.clone(), committed.clone(), stop.clone())
    });
}

/// The janitor's loop; returns when `shutdown` is cancelled or the writer is gone.
async fn run(
    pool: Pool,
    mut committed: watch::Receiver<i64>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut failing = false;
    let mut cleaned = *committed.borrow_and_update();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            changed = committed.changed() => if changed.is_err() { break },
        }
        loop {
            if *committed.borrow_and_update() - cleaned >= EAGER {
                break;
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return Ok(()),
                changed = committed.changed() => if changed.is_err() { return Ok(()) },
                () = tokio::time::sleep(QUIET) => break,
            }
        }
        cleaned = *committed.borrow();
        match clean(&pool).await {
            Ok(pages) => {
                failing = false;
                tracing::trace!(pages, "search index pending list cleaned");
            }
            // Not fatal: the writer cleans the list itself when it is full. Said once
            // per run of failures, not per commit.
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %crate::error::redacted(e.as_ref()), "cleaning the search index's pending list failed");
            }
            Err(_) => {}
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(PAUSE) => {}
        }
    }
    Ok(())
}

/// Merge the pending list into the index; returns the pending pages removed.
async fn clean(pool: &Pool) -> anyhow::Result<i64> {
    let client = pool.get().await?;
    let stmt = client
        .prepare_cached("select gin_clean_pending_list('messages_search'::regclass)")
        .await?;
    Ok(client.query_one(&stmt, &[]).await?.get(0))
}
