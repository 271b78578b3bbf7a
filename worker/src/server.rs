//! Wires the worker together and serves until shutdown: NATS (connecting in the background),
//! the migrations (waiting for Postgres), the lease (waiting as a standby while another worker
//! holds it, [`crate::lease`]), then on a pool fenced by that lease the archive, the signing
//! key, the connector and the RPC dispatcher; on shutdown, a drain bounded by one deadline
//! ([`crate::shutdown`]); on losing the lease, the same drain and an error. Every long-lived
//! task runs under one [`Supervisor`] ([`crate::supervise`]): a fatal failure shuts the worker
//! down the same way and `run` returns it.
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
use crate::{Config, connector, db, grants, lease, rpc};

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

/// Postgres connections for start-up and the lease keeper (outside the serving pool, so a busy
/// pool never delays a renewal).
const LEASE_POOL_SIZE: usize = 2;

/// Migrate, take the lease (waiting as a standby while another worker holds it), then start
/// everything under `supervisor` and serve until `shutdown` or until the lease is lost — which ends
/// in an error, so the process exits non-zero and its supervisor starts it again (as a standby).
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
    let holder = lease::holder_name();
    let nats_up = {
        let nats = nats.clone();
        move || nats.connection_state() == async_nats::connection::State::Connected
    };
    let Some(lease) = lease::acquire(
        &startup,
        lease::ALL_ACCOUNTS,
        &holder,
        nats_up,
        shutdown.token(),
    )
    .await?
    else {
        tracing::info!("shut down while standing by");
        return Ok(());
    };
    let services = supervisor.stop().clone();
    lease.spawn_keeper(startup.clone(), &supervisor);
    // Serving stops on shutdown or when the lease is lost, whichever comes first.
    let serving = Shutdown::new(shutdown.token().child_token());
    let stop_serving = serving.token().clone();
    let lost = lease.lost();
    tokio::spawn(async move {
        tokio::select! {
            () = lost.cancelled() => stop_serving.cancel(),
            () = stop_serving.cancelled() => {}
        }
    });
    // Only while serving: a drain that NATS cannot confirm is the drain's to bound.
    give_up_without_nats(
        nats.clone(),
        lease.clone(),
        startup.clone(),
        serving.token().clone(),
    );
    let served = serve(&config, &lease, nats, subjects, serving, &supervisor).await;
    if lease.lost().is_cancelled() {
        services.cancel();
        return Err(served.err().unwrap_or_else(|| {
            anyhow::anyhow!("lost the worker lease; stopped so that only its new holder serves")
        }));
    }
    // The archive writer and the connector stop before a standby may take over; writes still
    // in flight are fenced.
    services.cancel();
    lease.release(&startup).await;
    served
}

/// How long the holder may be without NATS (it answers nothing then) before it gives the lease
/// up for a worker that can serve.
const NATS_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Watch the NATS connection while serving: down for [`NATS_GRACE`] → release the lease at once
/// (a standby that reaches NATS takes over within a poll; what this worker still does is fenced,
/// and it hands nothing more to WhatsApp), then drain and exit non-zero. Restarted, it takes a
/// lease only once NATS is back, so a NATS outage costs one restart, not a loop of them.
fn give_up_without_nats(
    nats: async_nats::Client,
    lease: lease::Held,
    pool: deadpool_postgres::Pool,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut down_since: Option<tokio::time::Instant> = None;
        let lost = lease.lost();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = lost.cancelled() => return,
                () = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
            }
            if nats.connection_state() == async_nats::connection::State::Connected {
                down_since = None;
                continue;
            }
            let since = *down_since.get_or_insert_with(tokio::time::Instant::now);
            if since.elapsed() >= NATS_GRACE {
                tracing::error!(
                    lease = lease.name(),
                    "NATS unreachable for 3 s: giving the lease up for a worker that can serve"
                );
                lease.release(&pool).await;
                return;
            }
        }
    });
}

/// Start the archive, the key, the connector and the dispatcher on a pool fenced by `lease`, then
/// serve until `shutdown`.
async fn serve(
    config: &Config,
    lease: &lease::Held,
    nats: async_nats::Client,
    subjects: Subjects,
    shutdown: Shutdown,
    supervisor: &Supervisor,
) -> anyhow::Result<()> {
    let pool = db::fenced_pool(&config.database_url, POOL_SIZE, lease.name(), lease.epoch())
        .context("database pool")?;
    // Plans cached while a table was still small must not outlive its growth.
    db::statistics::spawn(pool.clone(), supervisor);
    let archive = Archive::start(pool.clone(), supervisor)
        .await
        .context("archive")?;
    // Waiting gateways wake on these events instead of polling (DESIGN §8).
    archive::spawn_event_publisher(&archive, nats.clone(), &subjects, supervisor);
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
        config,
        archive.clone(),
        pool.clone(),
        nats.clone(),
        subjects.clone(),
        Arc::new(JournalReceipts::new(pool.clone())),
        supervisor,
    )
    .await
    .context("connector")?;
    tracing::info!(
        archive.id = %archive.meta().archive_id,
        kid = %kid,
        connector = ?config.connector,
        prefix = subjects.prefix(),
        lease.epoch = lease.epoch(),
        "worker started"
    );
    let trust_loopback =
        grants::verify::loopback_trusted(&config.nats.url, config.nats.is_authenticated());
    if !trust_loopback {
        tracing::warn!(
            "NATS is neither on loopback nor authenticated: local connections are refused"
        );
    }
    let state = AppState::new(pool, archive, connector, nats, subjects, supervisor.clone())
        .trusting_loopback(trust_loopback)
        .holding(lease.clone());
    state.tokens.reload().await;
    rpc::serve(state, shutdown).await
}
