//! Serving one account whose lease this worker holds: on a Postgres pool fenced by the lease,
//! the account's sends left unfinished are settled, its archive writer and event publisher
//! start, then its connector; its requests (`<prefix>.rpc.<account>.>`) are served until the
//! fleet stops it or the lease is lost. Then the requests drain, the writer and connector stop,
//! and the lease is released (unless lost: then another worker holds it already).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;
use wazap_shared::wire::SyncState;

use crate::archive::{self, Archive};
use crate::config::{Config, ConnectorKind};
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
    let connector = connector::start(
        config,
        kind,
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

/// Record the account's session state in `account_status` whenever it changes, so every
/// worker's owner dashboard shows it (only this worker's connector knows it).
fn spawn_status(
    state: AppState,
    served: Arc<crate::state::ServedAccount>,
    holder: String,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut last: Option<SyncState> = None;
        loop {
            let now = served.connector.state(&served.id);
            if last != Some(now) {
                match record_status(&state.db, &served.id, now, &holder).await {
                    Ok(()) => last = Some(now),
                    Err(e) => {
                        tracing::debug!(account = %served.id, error = %crate::error::redacted(e.as_ref()), "account state not recorded; retrying")
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(STATUS_EVERY) => {}
            }
        }
    });
}

async fn record_status(
    pool: &Pool,
    account: &str,
    state: SyncState,
    holder: &str,
) -> anyhow::Result<()> {
    let db = pool.get().await?;
    db.execute(
        "insert into account_status (account_id, state, since, holder, updated_at)
         values ($1, $2, now(), $3, now())
         on conflict (account_id) do update
            set since = case when account_status.state = excluded.state
                             then account_status.since else now() end,
                state = excluded.state, holder = excluded.holder, updated_at = now()",
        &[&account, &state.as_str(), &holder],
    )
    .await?;
    Ok(())
}
