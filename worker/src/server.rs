//! Wires the worker together and serves until shutdown: NATS (connecting in the background),
//! the Postgres pool and migrations (waiting for Postgres), the archive, the signing key, the
//! connector, then the RPC dispatcher; on shutdown, a drain bounded by one deadline
//! ([`crate::shutdown`]). Every long-lived task runs under one [`Supervisor`]
//! ([`crate::supervise`]): a fatal failure shuts the worker down the same way and `run` returns it.
//!
//! Everything lives in values handed down from [`run`], never in globals, so tests can run
//! several workers (and gateways) in one process.

use std::sync::Arc;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use wazap_shared::bus;
use wazap_shared::subjects::Subjects;

use crate::archive::{self, Archive};
use crate::send::receipts::JournalReceipts;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::supervise::Supervisor;
use crate::{Config, connector, db, grants, rpc};

/// Postgres connections the worker keeps open at most.
pub const POOL_SIZE: usize = 16;

/// Run the worker until `shutdown` is cancelled; returns once in-flight requests have finished,
/// and at the latest [`crate::shutdown::DRAIN_LIMIT`] after the cancellation, whether or not
/// NATS and Postgres still answer (what is cut short is logged). Start-up waits for Postgres
/// (logging once) but fails on errors waiting cannot fix. Whatever it started is told to stop
/// when it returns, also on error.
///
/// A supervised task that fails for good ([`Supervisor::spawn_fatal`]: the archive writer, the
/// connector) stops the worker as a signal would, through the same bounded drain, and `run`
/// returns that failure, so the process exits non-zero and its supervisor restarts it.
///
/// `config.owner_password` becomes the owner's dashboard password when none is set yet.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    // The archive writer and the connector run until `run` returns (also on error): after the
    // dispatcher has drained, so in-flight requests can still use them.
    let services = CancellationToken::new();
    let _stop_services = services.clone().drop_guard();
    let supervisor = Supervisor::new(services.clone());
    // Shutdown is asked for by the caller, or by a supervised task's fatal failure.
    let requested = shutdown.child_token();
    let shutdown = Shutdown::new(requested.clone());
    let on_failure = async {
        supervisor.failed().await;
        requested.cancel();
        std::future::pending::<()>().await;
    };
    // The drain keeps the deadline itself; this covers start-up steps that wait on NATS or
    // Postgres without an end (connecting, the archive, the key, the connector, recovery).
    let limit = async {
        shutdown.requested().await;
        tokio::time::sleep_until(shutdown.deadline()).await;
    };
    let served = tokio::select! {
        biased;
        r = start_and_serve(config, shutdown.clone(), supervisor.clone()) => r,
        () = limit => {
            tracing::warn!(
                "shutdown had not finished by the drain limit (start-up still waiting on NATS \
                 or Postgres); abandoned"
            );
            Ok(())
        }
        () = on_failure => unreachable!("waits forever"),
    };
    match supervisor.failure() {
        Some(reason) => Err(anyhow::anyhow!(reason)),
        None => served,
    }
}

/// Start everything under `supervisor`, then serve until `shutdown`.
async fn start_and_serve(
    config: Config,
    shutdown: Shutdown,
    supervisor: Supervisor,
) -> anyhow::Result<()> {
    let nats = bus::connect(&config.nats_url, "wazap-worker")
        .await
        .context("NATS")?;
    let subjects = Subjects::new(config.nats_prefix.clone());
    let pool = db::pool(&config.database_url, POOL_SIZE).context("database pool")?;
    if !db::migrate_when_ready(&pool, shutdown.token())
        .await
        .context("migrations")?
    {
        tracing::info!("shut down before Postgres came up");
        return Ok(());
    }
    db::check_durability(&pool).await?;
    // Plans cached while a table was still small must not outlive its growth.
    db::statistics::spawn(pool.clone(), &supervisor);
    let archive = Archive::start(pool.clone(), &supervisor)
        .await
        .context("archive")?;
    // Waiting gateways wake on these events instead of polling (DESIGN §8).
    archive::spawn_event_publisher(&archive, nats.clone(), &subjects, &supervisor);
    let kid = grants::ensure_signing_key(&pool)
        .await
        .context("signing key")?;
    if crate::owner::bootstrap_password(&pool, config.owner_password.as_deref())
        .await
        .context("owner password")?
    {
        tracing::info!("owner password set from WAZAP_OWNER_PASSWORD");
    }
    let connector = connector::start(
        &config,
        archive.clone(),
        pool.clone(),
        nats.clone(),
        subjects.clone(),
        Arc::new(JournalReceipts::new(pool.clone())),
        &supervisor,
    )
    .await
    .context("connector")?;
    tracing::info!(
        archive.id = %archive.meta().archive_id,
        kid = %kid,
        connector = ?config.connector,
        prefix = subjects.prefix(),
        "worker started"
    );
    let state = AppState::new(pool, archive, connector, nats, subjects, supervisor);
    rpc::serve(state, shutdown).await
}
