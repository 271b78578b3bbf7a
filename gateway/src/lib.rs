//! The wazap gateway: stateless, run as many as you like. It checks `Host`/`Origin`, limits
//! concurrency and body sizes, verifies bearer grants against the worker's public keys, serves MCP
//! over Streamable HTTP at `/mcp`, and forwards every tool call to exactly one worker over NATS
//! request/reply. The owner listener serves the owner dashboard and API ([`owner`]), whose state
//! lives in the worker too. It never touches Postgres or WhatsApp.

mod bus;
pub mod config;
mod error;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod jwks;
mod mcp;
mod media;
mod metrics;
mod oauth;
mod objects;
mod owner;
mod send;
mod state;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;
#[doc(hidden)]
pub use media::sniff::fixtures as media_fixtures;

use crate::state::{AppState, ListenerPolicy};

/// The sockets a gateway serves: the MCP listener (`/mcp`, `/api/send/*`, health) and, when given,
/// the owner listener (the owner dashboard and API, plus `/mcp` and `/api/send/*` under its own
/// Host).
#[derive(Debug)]
pub struct Listeners {
    /// The MCP listener (`WAZAP_MCP_ADDR`).
    pub mcp: TcpListener,
    /// The owner listener (`WAZAP_OWNER_ADDR`); `None` serves no owner dashboard.
    pub owner: Option<TcpListener>,
}

impl From<TcpListener> for Listeners {
    /// The MCP listener alone.
    fn from(mcp: TcpListener) -> Self {
        Self { mcp, owner: None }
    }
}

/// Serve `listeners` until `shutdown` is cancelled, then stop accepting and let in-flight
/// requests finish (bounded by [`http::serve::DRAIN_LIMIT`]). Both listeners speak HTTP/1.1
/// through [`http::serve`]'s accept loop, which bounds each connection's buffers.
pub async fn run(
    config: Config,
    listeners: impl Into<Listeners>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Listeners { mcp, owner } = listeners.into();
    let local = mcp.local_addr()?;
    let nats = wazap_shared::bus::connect(&config.nats, "wazap-gateway").await?;
    // One state for both listeners: one bus, one key cache and refresher, one tool set.
    let state = AppState::new(&config, nats, &shutdown);
    let refresher = state.keys.spawn_refresher(shutdown.child_token());
    let mcp_policy = ListenerPolicy::new(&config, &config.public_hosts, local.port());
    tracing::info!(addr = %local, "MCP listener serving /mcp, /healthz, /readyz");
    let mcp_app = http::router(Arc::clone(&state), Arc::clone(&mcp_policy));
    let served_mcp = http::serve::serve(mcp, mcp_app, &shutdown);
    let served_owner = async {
        let Some(listener) = owner else {
            return Ok(());
        };
        let addr = listener.local_addr()?;
        // A's hosts too: the owner listener's authorization endpoint names every `/mcp` URL.
        let app = owner::owner_listener(&config, state, addr.port(), &mcp_policy);
        tracing::info!(addr = %addr, "owner listener serving the owner dashboard, /mcp");
        http::serve::serve(listener, app, &shutdown).await
    };
    let outcome = tokio::try_join!(served_mcp, served_owner).map(|_| ());
    refresher.abort();
    tracing::info!("listeners stopped");
    outcome
}
