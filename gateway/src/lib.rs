//! The wazap gateway: stateless, run as many as you like. It checks `Host`/`Origin`, limits
//! concurrency and body sizes, verifies bearer grants against the worker's public keys, serves
//! MCP over Streamable HTTP at `/mcp`, and forwards every tool call to exactly one worker over
//! NATS request/reply. It never touches Postgres or WhatsApp.

pub mod config;
mod error;
mod events;
mod http;
mod jwks;
mod mcp;
mod media;
mod metrics;
mod objects;
mod send;
mod state;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;

use crate::state::AppState;

/// How long in-flight requests may run on after shutdown begins (the longest deadline, a send,
/// is 60 s).
const DRAIN_LIMIT: Duration = Duration::from_secs(65);

/// Serve listener A (`/mcp`, `/healthz`, `/readyz`) on `listener` until `shutdown` is
/// cancelled, then stop accepting and let in-flight requests finish (bounded).
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let local = listener.local_addr()?;
    let nats = wazap_shared::bus::connect(&config.nats_url, "wazap-gateway").await?;
    let state = AppState::new(config, nats, local.port(), &shutdown);
    let refresher = state.keys.spawn_refresher(shutdown.child_token());
    let app = http::router(state);
    tracing::info!(addr = %local, "listener A serving /mcp, /healthz, /readyz");

    let serve = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown.clone().cancelled_owned())
    .into_future();
    let drain_expired = async {
        shutdown.cancelled().await;
        tokio::time::sleep(DRAIN_LIMIT).await;
    };
    let outcome = tokio::select! {
        served = serve => served.map_err(anyhow::Error::from),
        () = drain_expired => {
            tracing::warn!("in-flight requests outlived the drain limit; stopping anyway");
            Ok(())
        }
    };
    refresher.abort();
    tracing::info!("listener A stopped");
    outcome
}
