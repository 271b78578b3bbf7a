//! Logging set-up shared by every binary: JSON lines on stderr, filtered by `RUST_LOG`.
//!
//! Never log phone numbers, message text or tokens: log ids (`chat.id`, `connection.id`) as fields.
//! stderr, because `wazap-stdio` owns stdout for the MCP protocol.

use tracing_subscriber::EnvFilter;

/// Install the global subscriber for `service`. Safe to call more than once (later calls are
/// ignored), which keeps in-process tests simple.
pub fn init(service: &'static str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    tracing::debug!(service, "telemetry initialised");
}
