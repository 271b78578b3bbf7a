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
