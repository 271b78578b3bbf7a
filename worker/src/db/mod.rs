//! The Postgres pool and the embedded migrations, applied at start (waiting for Postgres) and by
//! `wazap-worker migrate`.

pub mod account_status;
pub mod statistics;

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_util::sync::CancellationToken;

/// The first pause between attempts while Postgres is not up; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between attempts while Postgres is not up.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The migrations, in order. Each runs once, in its own transaction, recorded in
/// `schema_migrations`; an advisory lock keeps two starting workers from racing.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_archive", include_str!("migrations/0001_archive.sql")),
    ("0002_grants", include_str!("migrations/0002_grants.sql")),
    ("0003_journal", include_str!("migrations/0003_journal.sql")),
    ("0004_search", include_str!("migrations/0004_search.sql")),
    ("0005_owner", include_str!("migrations/0005_owner.sql")),
    (
        "0007_search_lexemes",
        include_str!("migrations/0007_search_lexemes.sql"),
    ),
    (
        "0008_message_keys",
        include_str!("migrations/0008_message_keys.sql"),
    ),
    (
        "0009_id_collation",
        include_str!("migrations/0009_id_collation.sql"),
    ),
    (
        "0010_search_vector",
        include_str!("migrations/0010_search_vector.sql"),
    ),
    (
        "0011_snippets",
        include_str!("migrations/0011_snippets.sql"),
    ),
    (
        "0012_journal_counters",
        include_str!("migrations/0012_journal_counters.sql"),
    ),
    (
        "0013_send_receipts",
        include_str!("migrations/0013_send_receipts.sql"),
    ),
    (
        "0014_send_refusal",
        include_str!("migrations/0014_send_refusal.sql"),
    ),
    (
        "0015_worker_lease",
        include_str!("migrations/0015_worker_lease.sql"),
    ),
    (
        "0016_sim_transmission_ids",
        include_str!("migrations/0016_sim_transmission_ids.sql"),
    ),
    (
        "0017_owner_login_sources",
        include_str!("migrations/0017_owner_login_sources.sql"),
    ),
    (
        "0018_account_registry",
        include_str!("migrations/0018_account_registry.sql"),
    ),
    (
        "0019_account_leases",
        include_str!("migrations/0019_account_leases.sql"),
    ),
    (
        "0020_send_refusals",
        include_str!("migrations/0020_send_refusals.sql"),
    ),
    (
        "0021_account_truth",
        include_str!("migrations/0021_account_truth.sql"),
    ),
    (
        "0022_account_paused",
        include_str!("migrations/0022_account_paused.sql"),
    ),
    ("0023_oauth", include_str!("migrations/0023_oauth.sql")),
    (
        "0024_attachment_search",
        include_str!("migrations/0024_attachment_search.sql"),
    ),
    (
        "0025_search_keys",
        include_str!("migrations/0025_search_keys.sql"),
    ),
];

/// How long a caller waits for a pooled connection before the call fails.
pub const POOL_WAIT: Duration = Duration::from_secs(10);
/// Connecting, unless the URL sets `connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long sent data may stay unacknowledged by the server before the kernel drops the
/// connection (a blackholed link), unless the URL sets `tcp_user_timeout`.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);
/// Any one statement, unless the URL's `options` set `statement_timeout` (migrations run
/// without one).
pub const STATEMENT_TIMEOUT: &str = "30s";

/// How often a session's server checks, during a statement, that the worker is still there
/// (PostgreSQL 14 or later). A killed worker's statement waiting for a lock is then cancelled
/// instead of running — and committing — after its death (a reservation nobody will
/// transmit, an outcome nobody answered).
const CLIENT_CHECK: &str = "1s";

/// Build a pool for `url`. It does not connect yet: connections open on first use, so the worker
/// starts while Postgres is still coming up. Every call is bounded in time (the constants above;
/// a URL can set its own `connect_timeout`, `tcp_user_timeout` and `statement_timeout`), so a
/// Postgres that stops answering fails calls instead of hanging them. Every session commits
/// synchronously whatever the server's default (a send's reservation must be durable before it is
/// transmitted), stops a statement whose worker died ([`CLIENT_CHECK`]), and turns off
/// parallel plans (on 2 cores the generic parallel plan of a prepared search is many times
/// slower, DESIGN §11) and JIT: every statement of the worker runs in milliseconds, but one whose
/// rows are overestimated (a small table never analysed, the busiest chat) crosses the JIT cost
/// threshold and spends 150–250 ms compiling itself — the owner login's throttle statement did,
/// while it held the row lock every login queues on.
pub fn pool(url: &str, size: usize) -> anyhow::Result<Pool> {
    build(url, size, "")
}

/// [`pool`], for a worker holding the lease `name` at `epoch` ([`crate::lease`]): each session
/// names them, so the fence in the database refuses its archive and journal writes once another
/// worker has taken the lease over; and a session idle inside a transaction for 10 s is ended
/// by the server (a paused worker must not hold the row locks a takeover waits for).
pub fn fenced_pool(url: &str, size: usize, name: &str, epoch: i64) -> anyhow::Result<Pool> {
    anyhow::ensure!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || ":*-_".contains(c)),
        "a lease name is letters, digits and :*-_"
    );
    let fence = format!(
        "-c wazap.lease={name} -c wazap.epoch={epoch} -c idle_in_transaction_session_timeout=10s"
    );
    build(url, size, &fence)
}

fn build(url: &str, size: usize, extra: &str) -> anyhow::Result<Pool> {
    let mut pg: tokio_postgres::Config = url.parse()?;
    let given = pg.get_options().unwrap_or_default().to_owned();
    let mut options = format!(
        "{given} -c max_parallel_workers_per_gather=0 -c jit=off -c synchronous_commit=on \
         -c client_connection_check_interval={CLIENT_CHECK} {extra}"
    );
    if !given.contains("statement_timeout") {
        options.push_str(&format!(" -c statement_timeout={STATEMENT_TIMEOUT}"));
    }
    pg.options(options.trim());
    if pg.get_connect_timeout().is_none() {
        pg.connect_timeout(CONNECT_TIMEOUT);
    }
    if pg.get_tcp_user_timeout().is_none() {
        pg.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    pg.application_name("wazap-worker");
    let mgr = Manager::from_config(
        pg,
        tokio_postgres::NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Ok(Pool::builder(mgr)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(POOL_WAIT))
        .create_timeout(Some(CONNECT_TIMEOUT))
        .build()?)
}

/// Refuse a Postgres that runs with `fsync` off: a crash could lose a committed reservation, and
/// the retry would then send a message a second time.
pub async fn check_durability(pool: &Pool) -> anyhow::Result<()> {
    let db = pool.get().await?;
    let fsync: String = db.query_one("show fsync", &[]).await?.get(0);
    anyhow::ensure!(
        fsync == "on",
        "Postgres runs with fsync off: a crash could lose a send's reservation and the retry \
         would send it twice; turn fsync on"
    );
    Ok(())
}

/// Apply every migration not applied yet.
pub async fn migrate(pool: &Pool) -> anyhow::Result<()> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    // An index over a large archive may take longer than any one statement may.
    tx.batch_execute("set local statement_timeout = 0").await?;
    // One lock id for wazap's migrations; released at commit.
    tx.execute("select pg_advisory_xact_lock(7342001)", &[])
        .await?;
    tx.batch_execute(
        "create table if not exists schema_migrations (
            name text primary key,
            applied_at timestamptz not null default now()
        )",
    )
    .await?;
    for (name, sql) in MIGRATIONS {
        let done = tx
            .query_opt("select 1 from schema_migrations where name = $1", &[name])
            .await?
            .is_some();
        if done {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute("insert into schema_migrations (name) values ($1)", &[name])
            .await?;
        tracing::info!(migration = name, "migration applied");
    }
    tx.commit().await?;
    Ok(())
}

/// Apply migrations, waiting with exponential backoff (capped at 5 s) while Postgres is not up
/// yet: one log line when the wait starts and one when it ends. Errors that waiting cannot fix
/// (a failing migration, a missing database, bad credentials) return at once. `Ok(false)` when
/// `shutdown` was cancelled before Postgres came up.
pub async fn migrate_when_ready(pool: &Pool, shutdown: &CancellationToken) -> anyhow::Result<bool> {
    let mut delay = FIRST_BACKOFF;
    let mut waiting = false;
    loop {
        match migrate(pool).await {
            Ok(()) => {
                if waiting {
                    tracing::info!("Postgres is up; migrations applied");
                }
                return Ok(true);
            }
            Err(e) if is_unavailable(&e) => {
                if waiting {
                    tracing::debug!(error = %format_args!("{e:#}"), "Postgres still not up");
                } else {
                    tracing::warn!(error = %format_args!("{e:#}"), "waiting for Postgres…");
                    waiting = true;
                }
                tokio::select! {
                    () = shutdown.cancelled() => return Ok(false),
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(e),
        }
    }
}

/// True when `err` means Postgres is not reachable (yet): a refused or dropped connection, a
/// server starting or shutting down, or too many connections — the errors worth waiting out.
pub fn is_unavailable(err: &anyhow::Error) -> bool {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<PoolError>() {
            return match e {
                PoolError::Timeout(_) => true,
                // A database that does not accept connections now (being restored, say).
                PoolError::Backend(e) => {
                    pg_unavailable(e)
                        || e.code() == Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE)
                }
                _ => false,
            };
        }
        if let Some(e) = cause.downcast_ref::<tokio_postgres::Error>() {
            return pg_unavailable(e);
        }
    }
    false
}

/// See [`is_unavailable`]: no server answer at all, or one of the "not now" codes.
fn pg_unavailable(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => [
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(db.code()),
    }
}

/// Create a fresh, empty database named `name` on the server of `url` (connecting to its
/// `postgres` database) and return the new database's URL. Tests and the benchmark use this so
/// that runs never share state.
pub async fn create_database(url: &str, name: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "database names are [a-z0-9_]"
    );
    let mut admin: tokio_postgres::Config = url.parse()?;
    admin.dbname("postgres");
    let (client, conn) = admin.connect(tokio_postgres::NoTls).await?;
    let task = tokio::spawn(conn);
    client
        .batch_execute(&format!("create database {name}"))
        .await?;
    drop(client);
    let _ = task.await;
    Ok(with_dbname(url, name))
}

/// `url` with its database name replaced by `name`.
fn with_dbname(url: &str, name: &str) -> String {
    // postgres://user@host:port/db?params → swap the path segment.
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = base[scheme_end..]
        .find('/')
        .map(|i| i + scheme_end)
        .unwrap_or(base.len());
    let mut out = format!("{}/{name}", &base[..path_start]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_the_database_name() {
        assert_eq!(
            with_dbname("postgres://postgres@127.0.0.1:5432/wazap", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(
            with_dbname("postgres://u@h/db?sslmode=disable", "t2"),
            "postgres://u@h/t2?sslmode=disable"
        );
        assert_eq!(with_dbname("postgres://u@h", "t3"), "postgres://u@h/t3");
    }
}
