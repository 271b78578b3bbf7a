//! Wires the worker together and serves until shutdown: NATS (connecting in the background),
//! the migrations (waiting for Postgres), the signing key, the requests about no account, and
//! the fleet ([`crate::fleet`]), which takes this worker's share of the accounts' leases and
//! serves each on a pool fenced by its lease; on shutdown, a drain bounded by one deadline
//! ([`crate::shutdown`]). Every long-lived task runs under one [`Supervisor`]
//! ([`crate::supervise`]): a fatal failure shuts the worker down the same way and `run`
//! returns it.
//!
//! Everything lives in values handed down from [`run`], never in globals, so tests can run
//! several workers (and gateways) in one process.

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use wazap_shared::bus;
use wazap_shared::subjects::{ANY_ACCOUNT, Subjects};

use crate::archive;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::supervise::Supervisor;
use crate::{Config, db, grants, lease, rpc};

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

/// Postgres connections for start-up, the lease keepers and the fleet (outside the serving
/// pool, so a busy pool never delays a renewal).
const LEASE_POOL_SIZE: usize = 4;

/// Migrate, then start everything under `supervisor`: the requests about no account
/// (`<prefix>.rpc._any.>`: the owner API, the registry, JWKS) are served at once, by every
/// worker; the fleet ([`crate::fleet`]) takes this worker's share of the accounts and serves
/// each. Until `shutdown`: then every account drains and its lease is released.
async fn start_and_serve(
    config: Config,
    shutdown: Shutdown,
    supervisor: Supervisor,
) -> anyhow::Result<()> {
    let nats = bus::connect(&config.nats, "wazap-worker")
        .await
        .context("NATS")?;
    let subjects = Subjects::new(config.nats_prefix.clone());
    let startup = db::pool(&config.database_url, LEASE_POOL_SIZE).context("database pool")?;
    if !db::migrate_when_ready(&startup, shutdown.token())
        .await
        .context("migrations")?
    {
        tracing::info!("shut down before Postgres came up");
        return Ok(());
    }
    db::check_durability(&startup).await?;
    let pool = db::pool(&config.database_url, POOL_SIZE).context("database pool")?;
    // Plans cached while a table was still small must not outlive its growth.
    db::statistics::spawn(pool.clone(), &supervisor);
    let meta = archive::meta(&pool).await.context("archive")?;
    let kid = grants::ensure_signing_key(&pool)
        .await
        .context("signing key")?;
    if crate::owner::bootstrap_password(&pool, config.owner_password.as_deref())
        .await
        .context("owner password")?
    {
        tracing::info!("owner password set from WAZAP_OWNER_PASSWORD");
    }
    let trust_loopback =
        grants::verify::loopback_trusted(&config.nats.url, config.nats.is_authenticated());
    if !trust_loopback {
        tracing::warn!(
            "NATS is neither on loopback nor authenticated: local connections are refused"
        );
    }
    let state = AppState::new(
        pool,
        meta,
        nats.clone(),
        subjects.clone(),
        supervisor.clone(),
    )
    .trusting_loopback(trust_loopback);
    state.tokens.reload().await;
    crate::send::recovery::spawn_sweeper(state.db.clone(), &supervisor);
    let served = state.served.clone();
    crate::metrics::register_gauges(
        move || {
            served
                .ids()
                .into_iter()
                .filter_map(|id| served.get(&id))
                .map(|a| (a.id.clone(), a.connector.state(&a.id)))
                .collect()
        },
        &state.db,
        &nats,
    );
    let holder = lease::holder_name();
    tracing::info!(
        archive.id = %state.meta.archive_id,
        kid = %kid,
        connector = ?config.connector,
        prefix = subjects.prefix(),
        holder = %holder,
        "worker started"
    );
    let nats_up = {
        let nats = nats.clone();
        move || nats.connection_state() == async_nats::connection::State::Connected
    };
    let fleet = tokio::spawn(crate::fleet::run(
        state.clone(),
        config.clone(),
        startup,
        holder,
        nats_up,
        shutdown.token().clone(),
    ));
    let any = subjects.rpc_account(ANY_ACCOUNT);
    let served = rpc::serve_subject(state, any, shutdown).await;
    // The accounts drain beside the requests about none; their writers and connectors stop
    // before their leases are released.
    if let Err(e) = fleet.await {
        tracing::error!(error = %e, "the fleet task failed");
    }
    served
}
