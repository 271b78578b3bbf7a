//! `wazap-stdio`: an MCP server on stdin/stdout for clients that only start local servers. It
//! forwards to a wazap `/mcp` URL with the connection's bearer token, after checking that every
//! wazap tool the server lists carries wazap's read/write annotations (a server that announces
//! a send tool as read-only could have a client send without asking). stdout carries only the
//! protocol; logs go to stderr.

mod config;
mod proxy;
mod tools;
mod upstream;

pub use config::{Config, ConfigError};
pub use tools::Refusal;
pub use upstream::ConnectError;

use rmcp::ServiceExt as _;
use rmcp::service::ServerInitializeError;

/// Why the adapter stopped.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// No usable configuration.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The upstream could not be reached or refused the token.
    #[error(transparent)]
    Connect(#[from] upstream::ConnectError),
    /// The upstream is not a wazap this adapter can vouch for.
    #[error(transparent)]
    Refused(#[from] tools::Refusal),
    /// Listing the upstream's tools failed.
    #[error("listing the wazap server's tools failed: {0}")]
    List(String),
    /// The stdio side failed.
    #[error("stdio: {0}")]
    Serve(String),
}

impl StdioError {
    /// The process exit code: 78 (`EX_CONFIG`) for configuration and refusals, 69
    /// (`EX_UNAVAILABLE`) when the server cannot be used.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Refused(_) => 78,
            Self::Connect(_) | Self::List(_) | Self::Serve(_) => 69,
        }
    }
}

/// Connect to the upstream, check its tools, then serve stdin/stdout until the client closes
/// them.
pub async fn run(config: Config) -> Result<(), StdioError> {
    if config.cleartext_remote() {
        tracing::warn!(
            url = %config.url,
            "WAZAP_URL is plain http to another machine: the token crosses the network unencrypted"
        );
    }
    let upstream = upstream::connect(&config).await?;
    let listed = upstream
        .list_all_tools()
        .await
        .map_err(|e| StdioError::List(e.to_string()))?;
    let checked = tools::check(listed)?;
    proxy::log_unknown(&checked);
    tracing::info!(
        url = %config.url,
        tools = checked.tools.len(),
        "upstream checked; serving MCP on stdio"
    );
    let proxy = proxy::Proxy::new(upstream, &checked);
    let running = match proxy.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(_)) => {
            // The client went away before its first request: nothing failed.
            tracing::info!("stdin closed before the first request; stopping");
            return Ok(());
        }
        Err(e) => return Err(StdioError::Serve(e.to_string())),
    };
    running
        .waiting()
        .await
        .map_err(|e| StdioError::Serve(e.to_string()))?;
    tracing::info!("stdin closed; stopping");
    Ok(())
}
