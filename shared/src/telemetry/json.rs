//! JSON log lines with the OpenTelemetry ids of the span they were written in: the standard
//! JSON format of `tracing-subscriber`, with `"trace_id"` and `"span_id"` put first, so a log
//! line leads to its trace (and an `internal` error's answer to its log line).

use opentelemetry::trace::TraceContextExt as _;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON event format with the current trace and span ids.
pub(super) struct WithTraceIds {
    inner: Format<Json>,
}

impl WithTraceIds {
    /// The JSON format with the current span's fields and no span list.
    pub(super) fn new() -> Self {
        Self {
            inner: tracing_subscriber::fmt::format()
                .json()
                .with_current_span(true)
                .with_span_list(false),
        }
    }
}

impl<S, N> FormatEvent<S, N> for WithTraceIds
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut line = String::with_capacity(256);
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match (current_ids(), line.strip_prefix('{')) {
            (Some((trace, span)), Some(rest)) => {
                write!(
                    writer,
                    "{{\"trace_id\":\"{trace}\",\"span_id\":\"{span}\",{rest}"
                )
            }
            _ => writer.write_str(&line),
        }
    }
}

/// The trace and span ids (hex) of the OpenTelemetry context that is active on this thread: the
/// `tracing` span being polled, since `tracing-opentelemetry` activates a span's context when it
/// is entered.
pub(super) fn current_ids() -> Option<(String, String)> {
    opentelemetry::Context::map_current(|cx| {
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::WithTraceIds;

    /// A writer collecting log lines in memory.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_in_a_span_carry_its_trace_and_span_ids() {
        let lines = Lines::default();
        let writer = lines.clone();
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(move || writer.clone())
                    .event_format(WithTraceIds::new()),
            );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("outside");
            let span = tracing::info_span!("rpc", op = "ping");
            let _entered = span.enter();
            tracing::info!(connection.id = "k1", "inside");
        });
        let text = String::from_utf8(lines.0.lock().expect("lock").clone()).expect("utf-8");
        let parsed: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(parsed.len(), 2, "{text}");
        assert!(parsed[0].get("trace_id").is_none(), "{}", parsed[0]);
        let inside = &parsed[1];
        let trace = inside["trace_id"].as_str().expect("trace_id");
        let span = inside["span_id"].as_str().expect("span_id");
        assert_eq!(trace.len(), 32);
        assert_eq!(span.len(), 16);
        assert!(trace.chars().all(|c| c.is_ascii_hexdigit()) && trace != "0".repeat(32));
        assert_eq!(inside["fields"]["message"], "inside");
        assert_eq!(inside["span"]["op"], "ping");
    }
}
