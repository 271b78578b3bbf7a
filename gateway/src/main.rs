//! `wazap-gateway`: configuration → logging → bind listeners A and B → serve until a signal.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;
use wazap_gateway::{Config, Listeners};
use wazap_shared::config::Env;

/// mimalloc: glibc's malloc was a large share of the CPU on reads (figures: bench/README.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `EX_USAGE`: a configuration value could not be used.
const EXIT_CONFIG: u8 = 64;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_source(&Env) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("wazap-gateway: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    wazap_shared::telemetry::init("wazap-gateway");
    let bind = tokio::net::TcpListener::bind;
    let (mcp, owner) = match (bind(config.mcp_addr).await, bind(config.owner_addr).await) {
        (Ok(mcp), Ok(owner)) => (mcp, Some(owner)),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "cannot bind WAZAP_MCP_ADDR or WAZAP_OWNER_ADDR");
            return ExitCode::FAILURE;
        }
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let code = match wazap_gateway::run(config, Listeners { mcp, owner }, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "gateway stopped with an error");
            ExitCode::FAILURE
        }
    };
    wazap_shared::telemetry::shutdown();
    code
}

/// Cancel `token` on the first SIGINT or SIGTERM.
async fn cancel_on_signal(token: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutdown requested; draining");
    token.cancel();
}
