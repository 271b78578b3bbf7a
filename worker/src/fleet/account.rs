//! Serving one account whose lease this worker holds: on a Postgres pool fenced by the lease,
//! the account's sends left unfinished are settled, its archive writer and event publisher
//! start, then its connector; its requests (`<prefix>.rpc.<account>.>`) are served until the
//! fleet stops it or the lease is lost. Then the requests drain, the writer and connector stop,
//! and the lease is released (unless lost: then another worker holds it already).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use crate::archive::{self, Archive};
use crate::config::{Config, ConnectorKind};
use crate::db::account_status;
use crate::lease::{self, Held};
use crate::send::receipts::JournalReceipts;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::{connector, db, rpc};

/// Postgres connections one account's writer, sends and connector use at most: as many as the
/// worker's pool for reads, since a burst of sends (each holding one while it reserves and
/// journals) is what it serves. Connections are opened as they are needed.
pub const ACCOUNT_POOL_SIZE: usize = crate::server::POOL_SIZE;

/// Serve the account `held` is the lease of until `stop` or until the lease is lost. A failure
/// to start or to go on serving (a connector the configuration refuses, a subscription that
/// ended) stops the worker as a fatal task failure would: it exits non-zero, to be restarted.
pub async fn serve(
    state: AppState,
    config: Config,
    lease_pool: Pool,
    held: Held,
    kind: ConnectorKind,
    stop: CancellationToken,
) {
    let Some(account) = lease::account_of_lease(held.name()).map(str::to_owned) else {
        return;
    };
    let supervisor = state.supervisor.child();
    held.spawn_keeper(lease_pool.clone(), &supervisor);
    // Serving ends when the fleet says so or when the lease is lost.
    let serving = stop.child_token();
    let lost = held.lost();
    {
        let serving = serving.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = lost.cancelled() => serving.cancel(),
                () = serving.cancelled() => {}
            }
        });
    }
    let served =
        start_and_serve(&state, &config, &account, &held, kind, &supervisor, serving).await;
    state.served.remove(&account);
    // The writer and the connector stop before another worker may take over; writes still in
    // flight are fenced.
    supervisor.stop().cancel();
    if let Err(e) = served {
        let e = e.context(format!("serving account {account}"));
        state
            .supervisor
            .spawn_fatal("account", async move { Err(e) });
    }
    if held.lost().is_cancelled() {
        tracing::warn!(account = %account, "account lease lost or given up: this worker serves it no more");
    } else {
        held.release(&lease_pool).await;
        tracing::info!(account = %account, "account handed over");
    }
}

async fn start_and_serve(
    state: &AppState,
    config: &Config,
    account: &str,
    held: &Held,
    kind: ConnectorKind,
    supervisor: &crate::supervise::Supervisor,
    serving: CancellationToken,
) -> anyhow::Result<()> {
    let pool = db::fenced_pool(
        &config.database_url,
        ACCOUNT_POOL_SIZE,
        held.name(),
        held.epoch(),
    )
    .context("database pool")?;
    // What the previous holder left in flight can no longer finish: settle it before any new
    // request of the account is taken.
    crate::send::recovery::recover(&pool, account).await?;
    let archive = Archive::start(pool.clone(), account, supervisor)
        .await
        .context("archive")?;
    // Waiting gateways wake on these events instead of polling (DESIGN §8).
    archive::spawn_event_publisher(&archive, state.nats.clone(), &state.subjects, supervisor);
    // Read under the lease: a pause the previous holder kept is seen, one it had not yet
    // written can no longer be written (the fence).
    let paused = crate::accounts::paused(&pool.get().await?, account).await?;
    let connector = connector::start(
        config,
        kind,
        paused,
        archive.clone(),
        pool.clone(),
        state.nats.clone(),
        state.subjects.clone(),
        Arc::new(JournalReceipts::new(pool.clone())),
        supervisor,
    )
    .await
    .context("connector")?;
    let served = state.serve(pool, archive, connector, Some(held.clone()));
    let subject = state.subjects.rpc_account(account);
    let sub = rpc::subscribe(state, &subject).await?;
    // Recorded once its requests reach it: from then on the account counts as served
    // (`ping`, the dashboard).
    spawn_status(
        state.clone(),
        served,
        held.holder().to_owned(),
        serving.clone(),
    );
    tracing::info!(account, epoch = held.epoch(), "account served");
    rpc::serve_on(state.clone(), sub, subject, Shutdown::new(serving)).await
}

/// How often an account's session state is compared with the one last recorded.
const STATUS_EVERY: Duration = Duration::from_secs(1);
/// How often the record's time moves on while nothing changes (how far "offline since" can be
/// early when this worker dies).
const TOUCH_EVERY: Duration = Duration::from_secs(30);
/// The archive is counted for the dashboard at most this often, and spends at most 1 % of the
/// time counting (a count of millions of rows takes a second or so).
const COUNT_EVERY: Duration = Duration::from_secs(10);
const COUNT_SHARE: u32 = 100;

/// Record the account's truth in `account_status` ([`account_status`]), so every worker's owner
/// dashboard shows it (only this worker's connector knows it): its state and history sync
/// whenever they change, its archive counted at once and then again every [`COUNT_EVERY`], or
/// [`COUNT_SHARE`] times as long as the last count took if that is longer.
fn spawn_status(
    state: AppState,
    served: Arc<crate::state::ServedAccount>,
    holder: String,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let id = served.id.as_str();
        let mut last = None;
        let (mut touched, mut counted) = (Instant::now(), None::<Instant>);
        let mut count_every = COUNT_EVERY;
        loop {
            let now = (served.connector.state(id), served.connector.history(id));
            if last != Some(now) {
                match account_status::record_state(&state.db, id, now.0, now.1, &holder).await {
                    Ok(()) => (last, touched) = (Some(now), Instant::now()),
                    Err(e) => {
                        tracing::debug!(account = %id, error = %crate::error::redacted(e.as_ref()), "account state not recorded; retrying")
                    }
                }
            } else if touched.elapsed() >= TOUCH_EVERY
                && account_status::touch(&state.db, id, &holder).await.is_ok()
            {
                touched = Instant::now();
            }
            if last.is_some() && counted.is_none_or(|t| t.elapsed() >= count_every) {
                let began = Instant::now();
                match account_status::record_counts(&state.db, id).await {
                    Ok(()) => {
                        counted = Some(Instant::now());
                        count_every = COUNT_EVERY.max(began.elapsed() * COUNT_SHARE);
                    }
                    Err(e) => {
                        counted = Some(Instant::now());
                        tracing::debug!(account = %id, error = %crate::error::redacted(e.as_ref()), "archive not counted; retrying later")
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(STATUS_EVERY) => {}
            }
        }
        // Stopped: the time it was last served.
        let _ = account_status::touch(&state.db, id, &holder).await;
    });
}
