//! Wires the worker together and serves until shutdown.

use tokio_util::sync::CancellationToken;

use crate::Config;

/// Run the worker until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    let _ = (config, shutdown);
    todo!("server")
}
