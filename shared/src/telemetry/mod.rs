//! Telemetry shared by every binary: JSON log lines on stderr that carry the trace and span ids,
//! OpenTelemetry traces and metrics exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set ([`export`]), and W3C trace context carried through NATS headers ([`propagation`]).
//!
//! Never log phone numbers, message text or tokens: log ids (`chat.id`, `connection.id`) as fields;
//! span attributes follow the same rule, since every span field becomes an exported attribute.
//! stderr, because `wazap-stdio` owns stdout for the MCP protocol.
//!
//! With `WAZAP_LEAK_DIR` set (the leak scan of `scripts/test`), everything is also written to a
//! file there, at a verbose level of its own ([`capture`]).

pub mod capture;
mod export;
mod json;
pub mod propagation;

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Metadata;
use tracing_subscriber::filter::FilterFn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

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

/// The providers installed by the first successful [`init`], kept so [`shutdown`] can flush
/// them.
struct Installed {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Install the global subscriber for `service`: JSON logs filtered by `RUST_LOG`, spans turned
/// into OpenTelemetry spans (so log lines carry `trace_id` even without an exporter), and OTLP
/// export of traces and metrics when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME`,
/// when set, names the service instead of `service`). Safe to call more than once (later calls
/// are ignored), which keeps in-process tests simple.
pub fn init(service: &'static str) {
    let exporters = export::from_env(service);
    let mut tracer = SdkTracerProvider::builder().with_resource(exporters.resource.clone());
    if let Some(spans) = exporters.spans {
        tracer = tracer.with_batch_exporter(spans);
    }
    install(service, tracer.build(), exporters.metrics, true);
}

/// [`init`] with a tracer provider of the caller's choosing and no metrics export: tests install
/// one with an in-memory exporter to see the spans of gateway and worker. Returns whether this
/// call installed the subscriber (false when one was already installed).
pub fn init_with(service: &'static str, tracer: SdkTracerProvider) -> bool {
    install(service, tracer, None, true)
}

/// The subscriber of an in-process test: logs on stderr only when `logs` (the test's own
/// switch, e.g. `TEST_LOG`), the leak scan's capture whenever `WAZAP_LEAK_DIR` is set, nothing
/// at all when neither. Later calls are ignored; returns whether this one installed it.
pub fn init_for_tests(service: &'static str, logs: bool) -> bool {
    if logs {
        let before = INSTALLED.get().is_some();
        init(service);
        return !before && INSTALLED.get().is_some();
    }
    if crate::leak::dir().is_none() {
        return false;
    }
    install(service, SdkTracerProvider::builder().build(), None, false)
}

/// `RUST_LOG`, or INFO. A filter per layer (not a global one), so the capture sees more than
/// `RUST_LOG` lets through to stderr and the exporter.
fn env_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

fn install(
    service: &'static str,
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
    stderr: bool,
) -> bool {
    if tracing::dispatcher::has_been_set() {
        return false;
    }
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer(service))
        .with_location(false)
        .with_threads(false)
        .with_filter(env_filter());
    let logs = stderr.then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .event_format(json::WithTraceIds::new())
            .with_filter(env_filter())
    });
    let installed = tracing_subscriber::registry()
        .with(body_quoting_filter())
        .with(otel)
        .with(logs)
        .with(capture::layer(service))
        .try_init()
        .is_ok();
    if !installed {
        return false;
    }
    if let Some(m) = &meter {
        opentelemetry::global::set_meter_provider(m.clone());
    }
    opentelemetry::global::set_tracer_provider(tracer.clone());
    let exporting = meter.is_some();
    let _ = INSTALLED.set(Installed { tracer, meter });
    tracing::debug!(service, exporting, "telemetry initialised");
    true
}

/// Flush and stop the exporters [`init`] started (spans still buffered are sent). Call once, as
/// the process ends; a no-op when nothing was installed.
pub fn shutdown() {
    if let Some(installed) = INSTALLED.get() {
        if let Err(e) = installed.tracer.shutdown() {
            eprintln!("telemetry: flushing traces failed: {e}");
        }
        if let Some(meter) = &installed.meter
            && let Err(e) = meter.shutdown()
        {
            eprintln!("telemetry: flushing metrics failed: {e}");
        }
    }
}

/// The trace id of the current span (32 hex digits), for answers that point at the logs (an
/// `internal` error carries it); `None` outside any traced span.
pub fn current_trace_id() -> Option<String> {
    json::current_ids().map(|(trace, _)| trace)
}
