//! Fresh planner statistics for the tables the worker's hot statements plan against: a table
//! that has changed by more than it held when it was last analyzed is analyzed again at once.
//!
//! Why: the worker's statements are prepared once per connection, and after five runs
//! Postgres keeps a generic plan built on the statistics of that moment. A table that starts
//! empty (a new archive, the send journal) then looks one page long, a primary-key lookup is
//! planned as a sequential scan, and it stays one while the table grows — until autovacuum
//! analyzes the table, up to a minute later; in `wazap-bench`'s send phase that made the
//! journal's final-state update the largest single cost of a send. An `ANALYZE` invalidates the cached
//! plans at once, and it only runs while a table is still growing fast (roughly each time it
//! doubles), so a settled archive never pays for it.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use crate::supervise::Supervisor;

/// The tables checked: what reads, live ingest and sends look up by key while they grow.
const TABLES: &[&str] = &[
    "messages",
    "attachments",
    "chats",
    "contacts",
    "send_journal",
    "send_outbox",
];
/// How often the change counters are read (Postgres publishes them about once a second).
const EVERY: Duration = Duration::from_secs(2);
/// Changes below this never trigger an analysis: small tables plan well enough either way.
const MIN_CHANGES: i64 = 1_000;

/// Check [`TABLES`] every [`EVERY`] until the supervisor stops, analyzing each one whose rows
/// changed since its last analysis (inserts, updates and deletes) number more than
/// [`MIN_CHANGES`] and more than the rows it had then. Started again by `supervisor` if it
/// fails.
pub fn spawn(pool: Pool, supervisor: &Supervisor) {
    let stop = supervisor.stop().clone();
    supervisor.spawn_restarting("statistics refresher", move || {
        run(pool.clone(), stop.clone())
    });
}

/// The refresher's loop, until `shutdown`.
async fn run(pool: Pool, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut failing = false;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(EVERY) => {}
        }
        match refresh(&pool).await {
            Ok(analyzed) => {
                failing = false;
                if !analyzed.is_empty() {
                    tracing::debug!(tables = ?analyzed, "planner statistics refreshed");
                }
            }
            // Not fatal: autovacuum analyzes these tables too, only later. Said once per
            // run of failures.
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %crate::error::redacted(e.as_ref()), "refreshing planner statistics failed");
            }
            Err(_) => {}
        }
    }
}

/// Analyze the tables of [`TABLES`] whose statistics are stale; returns their names.
pub async fn refresh(pool: &Pool) -> anyhow::Result<Vec<String>> {
    let client = pool.get().await?;
    let stmt = client
        .prepare_cached(
            "select s.relname::text
               from pg_stat_user_tables s
               join pg_class c on c.oid = s.relid
              where s.schemaname = current_schema() and s.relname = any($1)
                and s.n_mod_since_analyze > greatest(c.reltuples::bigint, $2)",
        )
        .await?;
    let tables: Vec<String> = TABLES.iter().map(|t| (*t).to_owned()).collect();
    let stale: Vec<String> = client
        .query(&stmt, &[&tables, &MIN_CHANGES])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for table in &stale {
        // Only names from TABLES reach here (the query filters on them).
        debug_assert!(TABLES.contains(&table.as_str()));
        client.batch_execute(&format!("analyze {table}")).await?;
    }
    Ok(stale)
}
