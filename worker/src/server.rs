//! Wires the worker together and serves until shutdown: NATS (connecting in the background),
//! the Postgres pool and migrations (waiting for Postgres), the archive, the signing key, the
//! connector, then the RPC dispatcher.
//!
//! Everything lives in values handed down from [`run`], never in globals, so tests can run
//! several workers (and gateways) in one process.

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use wazap_shared::bus;
use wazap_shared::subjects::Subjects;

use crate::archive::{self, Archive};
use crate::state::AppState;
use crate::{Config, connector, db, grants, rpc};

/// Postgres connections the worker keeps open at most.
pub const POOL_SIZE: usize = 16;

/// Run the worker until `shutdown` is cancelled; returns once in-flight requests have finished
/// (bounded by [`rpc::DRAIN_LIMIT`]). Start-up waits for Postgres (logging once) but fails
/// on errors waiting cannot fix. Whatever it started is told to stop when it returns, also on
/// error.
///
/// `config.owner_password` becomes the owner's dashboard password when none is set yet.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    // The archive writer and the connector run until `run` returns (also on error): after the
    // dispatcher has drained, so in-flight requests can still use them.
    let services = CancellationToken::new();
    let _stop_services = services.clone().drop_guard();

    let nats = bus::connect(&config.nats_url, "wazap-worker")
        .await
        .context("NATS")?;
    let subjects = Subjects::new(config.nats_prefix.clone());
    let pool = db::pool(&config.database_url, POOL_SIZE).context("database pool")?;
    if !db::migrate_when_ready(&pool, &shutdown)
        .await
        .context("migrations")?
    {
        tracing::info!("shut down before Postgres came up");
        return Ok(());
    }
    // Plans cached while a table was still small must not outlive its growth.
    db::statistics::spawn(pool.clone(), services.clone());
    let archive = Archive::start(pool.clone(), services.clone())
        .await
        .context("archive")?;
    // Waiting gateways wake on these events instead of polling (DESIGN §8).
    archive::spawn_event_publisher(&archive, nats.clone(), &subjects, services.clone());
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
        config.connector,
        archive.clone(),
        pool.clone(),
        nats.clone(),
        subjects.clone(),
        &config.data_dir,
        services.clone(),
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
    let state = AppState::new(pool, archive, connector, nats.clone(), subjects);
    let served = rpc::serve(state, shutdown).await;
    if let Err(e) = nats.flush().await {
        tracing::debug!(error = %e, "NATS flush at shutdown failed");
    }
    served
}
