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

/// Make the remote span of a W3C `traceparent` (and `tracestate`) received some other way —
/// an HTTP request's headers — the parent of `span`; an absent or invalid value changes nothing.
pub fn set_parent_w3c(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    let mut fields = std::collections::HashMap::with_capacity(2);
    fields.insert("traceparent".to_owned(), traceparent.to_owned());
    if let Some(state) = tracestate {
        fields.insert("tracestate".to_owned(), state.to_owned());
    }
    let cx = TraceContextPropagator::new().extract(&fields);
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    #[test]
    fn the_worker_span_continues_the_trace_of_the_headers() {
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let mut headers = HeaderMap::new();
            let gateway = tracing::info_span!("tool");
            let sent = gateway.context().span().span_context().clone();
            gateway.in_scope(|| inject_current(&mut headers));
            let traceparent = headers.get("traceparent").expect("traceparent").as_str();
            assert_eq!(
                traceparent,
                format!("00-{}-{}-01", sent.trace_id(), sent.span_id())
            );

            let worker = tracing::info_span!("rpc");
            set_parent(&worker, Some(&headers));
            let got = worker.context().span().span_context().clone();
            assert_eq!(got.trace_id(), sent.trace_id());
            assert_ne!(got.span_id(), sent.span_id());

            // No headers, or none of ours: a new root.
            let alone = tracing::info_span!("rpc");
            set_parent(&alone, Some(&HeaderMap::new()));
            assert_ne!(
                alone.context().span().span_context().trace_id(),
                sent.trace_id()
            );
            // A traceparent from elsewhere (an HTTP request) is honoured; garbage is not.
            let edge = tracing::info_span!("tool");
            set_parent_w3c(&edge, Some(traceparent), None);
            assert_eq!(
                edge.context().span().span_context().trace_id(),
                sent.trace_id()
            );
            let odd = tracing::info_span!("tool");
            set_parent_w3c(&odd, Some("00-zz-zz-01"), None);
            assert_ne!(
                odd.context().span().span_context().trace_id(),
                sent.trace_id()
            );
            // Outside any span nothing is injected.
            let mut empty = HeaderMap::new();
            inject_current(&mut empty);
            assert!(empty.get("traceparent").is_none());
        });
    }
}
