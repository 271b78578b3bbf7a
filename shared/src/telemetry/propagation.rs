//! W3C trace context (`traceparent`, `tracestate`) through NATS headers, so the worker's spans
//! for a request join the trace of the gateway span that sent it (DESIGN §8, §10).
//!
//! The propagator is used directly rather than through the global one, so a process that never
//! called [`super::init`] (a test, a tool) still injects and extracts the same headers.

use async_nats::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Writes propagation fields into NATS headers.
struct NatsInjector<'a>(&'a mut HeaderMap);

impl Injector for NatsInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key, value.as_str());
    }
}

/// Reads propagation fields from NATS headers.
struct NatsExtractor<'a>(&'a HeaderMap);

impl Extractor for NatsExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_ref()).collect()
    }
}

/// Put the current `tracing` span's trace context into `headers` (nothing when the span is
/// not traced).
pub fn inject_current(headers: &mut HeaderMap) {
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut NatsInjector(headers));
}

/// Make the remote span described by `headers` the parent of `span`, when the headers carry a
/// valid `traceparent`; otherwise `span` stays a root.
pub fn set_parent(span: &tracing::Span, headers: Option<&HeaderMap>) {
    let Some(headers) = headers else { return };
    let cx = TraceContextPropagator::new().extract(&NatsExtractor(headers));
    if cx.span().span_context().is_valid() {
        // Fails only when the span is disabled, i.e. not traced at all.
        let _ = span.set_parent(cx);
    }
}
