//! Logging set-up shared by every binary: JSON lines on stderr, filtered by `RUST_LOG`.
//!
//! Never log phone numbers, message text or tokens: log ids (`chat.id`, `connection.id`) as fields.
//! stderr, because `wazap-stdio` owns stdout for the MCP protocol.

use tracing::Metadata;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Dependencies whose DEBUG/TRACE events quote whole messages (rmcp logs every JSON-RPC request,
/// tool arguments and so message text included, at DEBUG; async-nats every payload it reads at
/// TRACE): capped at INFO whatever `RUST_LOG` says.
const BODY_QUOTING_TARGETS: [&str; 2] = ["rmcp", "async_nats"];

/// A global filter dropping the DEBUG/TRACE events and spans of [`BODY_QUOTING_TARGETS`].
pub fn body_quoting_filter() -> FilterFn<fn(&Metadata<'_>) -> bool> {
    fn keep(meta: &Metadata<'_>) -> bool {
        let quoting = BODY_QUOTING_TARGETS
            .iter()
            .any(|t| meta.target() == *t || meta.target().starts_with(&format!("{t}::")));
        !(quoting && *meta.level() > tracing::Level::INFO)
    }
    FilterFn::new(keep as fn(&Metadata<'_>) -> bool)
}

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
        .finish()
        .with(body_quoting_filter())
        .try_init();
    tracing::debug!(service, "telemetry initialised");
}
