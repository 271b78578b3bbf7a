//! OTLP/HTTP (protobuf) exporters, built only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or a
//! per-signal `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`) is set: no endpoint, no export,
//! and nothing listens or connects. The exporters read the standard variables themselves
//! (endpoint, headers, timeout), so this module only decides whether to build them.

use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};

/// What [`from_env`] found: the service's resource and the exporters the environment asks for.
pub(super) struct Exporters {
    /// `service.name` (from `OTEL_SERVICE_NAME` when set) and the SDK's attributes.
    pub(super) resource: Resource,
    /// Where spans go, when configured.
    pub(super) spans: Option<SpanExporter>,
    /// A meter provider exporting periodically, when configured.
    pub(super) metrics: Option<SdkMeterProvider>,
}

/// Read the `OTEL_*` environment. A bad endpoint is reported on stderr (logging is not up yet)
/// and disables that signal's export rather than the process.
pub(super) fn from_env(service: &'static str) -> Exporters {
    let resource = resource(service);
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let any = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    if any
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    {
        ensure_tls_provider();
    }
    let spans = (any || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .then(|| {
            SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build()
        })
        .and_then(|r| {
            r.map_err(|e| eprintln!("telemetry: traces will not be exported: {e}"))
                .ok()
        });
    let metrics = (any || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
        .then(|| {
            MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build()
        })
        .and_then(|r| {
            r.map_err(|e| eprintln!("telemetry: metrics will not be exported: {e}"))
                .ok()
        })
        .map(|exporter| {
            SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_resource(resource.clone())
                .build()
        });
    Exporters {
        resource,
        spans,
        metrics,
    }
}

/// The exporters' HTTP client (reqwest) refuses to start when it was built without a TLS crypto
/// provider of its own (as when another crate of the build asks for `rustls-no-provider`):
/// install ring's, the one NATS already uses, unless the process chose one.
fn ensure_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only when another thread installed one first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The resource naming this process: `OTEL_SERVICE_NAME` wins over the binary's own name.
fn resource(service: &'static str) -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty());
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name(service).build()
    }
}
