//! The gateway's tool edge in telemetry: every tool call (MCP `tools/call` and `/api/send/*`)
//! runs inside one `tool` span — the parent of the NATS request, whose trace context the worker
//! continues — and is counted by tool and outcome code with its latency. The NATS connection's
//! health is a gauge read at export time.
//!
//! Attributes are tool names and outcome codes only: never arguments, chat ids, text or tokens.
//! Without `OTEL_EXPORTER_OTLP_ENDPOINT` the global meter is a no-op.

use std::sync::LazyLock;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult};
use tracing::Instrument as _;
use wazap_shared::{ErrorCode, RpcError};

/// The instruments, created on first use (after `telemetry::init` installed the provider).
struct Instruments {
    calls: Counter<u64>,
    duration: Histogram<f64>,
}

static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| {
    let m = opentelemetry::global::meter("wazap-gateway");
    Instruments {
        calls: m
            .u64_counter("wazap.gateway.tool.calls")
            .with_description("Tool calls answered, by tool and outcome (ok or an error code)")
            .build(),
        duration: m
            .f64_histogram("wazap.gateway.tool.duration")
            .with_unit("s")
            .with_description("Time to answer a tool call, by tool and outcome")
            .build(),
    }
});

/// The W3C trace context an HTTP request came with, if any.
#[derive(Debug, Default)]
pub(crate) struct TraceHeaders {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl TraceHeaders {
    /// `traceparent` and `tracestate` of `headers`.
    pub(crate) fn of(headers: Option<&http::HeaderMap>) -> Self {
        let field = |name: &str| Some(headers?.get(name)?.to_str().ok()?.to_owned());
        Self {
            traceparent: field("traceparent"),
            tracestate: field("tracestate"),
        }
    }
}

/// Run one MCP tool call of `tool` inside its span, then count and time it. A W3C
/// `traceparent` on the HTTP request (`trace`) makes the span part of the caller's trace.
pub(crate) async fn mcp_call(
    tool: &str,
    trace: TraceHeaders,
    call: impl Future<Output = Result<CallToolResponse, ErrorData>>,
) -> Result<CallToolResponse, ErrorData> {
    observe(tool, trace, call, |r| match r {
        Ok(CallToolResponse::Complete(result)) => result_outcome(result),
        Ok(_) => "ok",
        Err(e) => data_outcome(e),
    })
    .await
}

/// Run one `/api/send/*` call (named after its tool) inside its span, then count and time it.
pub(crate) async fn api_call<T>(
    tool: &str,
    call: impl Future<Output = Result<T, RpcError>>,
) -> Result<T, RpcError> {
    observe(tool, TraceHeaders::default(), call, |r| match r {
        Ok(_) => "ok",
        Err(e) => e.code.as_str(),
    })
    .await
}

async fn observe<T>(
    tool: &str,
    trace: TraceHeaders,
    call: impl Future<Output = T>,
    outcome_of: impl FnOnce(&T) -> &'static str,
) -> T {
    let span = tracing::info_span!("tool", tool, outcome = tracing::field::Empty);
    wazap_shared::telemetry::propagation::set_parent_w3c(
        &span,
        trace.traceparent.as_deref(),
        trace.tracestate.as_deref(),
    );
    let started = Instant::now();
    let result = call.instrument(span.clone()).await;
    let outcome = outcome_of(&result);
    span.record("outcome", outcome);
    let attrs = [
        KeyValue::new("tool", tool.to_owned()),
        KeyValue::new("outcome", outcome),
    ];
    INSTRUMENTS.calls.add(1, &attrs);
    INSTRUMENTS
        .duration
        .record(started.elapsed().as_secs_f64(), &attrs);
    result
}

/// `ok`, or the code of an `isError` result's `{"error":{"code",…}}` body.
fn result_outcome(result: &CallToolResult) -> &'static str {
    if result.is_error != Some(true) {
        return "ok";
    }
    #[derive(serde::Deserialize)]
    struct Body {
        error: Code,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: ErrorCode,
    }
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .and_then(|t| serde_json::from_str::<Body>(&t.text).ok())
        .map_or(ErrorCode::Internal.as_str(), |b| b.error.code.as_str())
}

/// The code a JSON-RPC error carries in its data (`invalid_argument` for bad arguments).
fn data_outcome(e: &ErrorData) -> &'static str {
    e.data
        .as_ref()
        .and_then(|d| d.get("code"))
        .and_then(|c| serde_json::from_value::<ErrorCode>(c.clone()).ok())
        .map_or(
            if e.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                ErrorCode::InvalidArgument.as_str()
            } else {
                ErrorCode::Internal.as_str()
            },
            ErrorCode::as_str,
        )
}

/// Register the gauge reporting whether this gateway's NATS connection is up.
pub(crate) fn register_nats_gauge(nats: &async_nats::Client) {
    let nats = nats.clone();
    opentelemetry::global::meter("wazap-gateway")
        .u64_observable_gauge("wazap.gateway.nats.connected")
        .with_description("1 while the NATS connection is up")
        .with_callback(move |o| {
            let up = nats.connection_state() == async_nats::connection::State::Connected;
            o.observe(u64::from(up), &[]);
        })
        .build();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn outcomes_are_codes_never_text() {
        let ok = CallToolResult::structured(serde_json::json!({"a": 1}));
        assert_eq!(result_outcome(&ok), "ok");
        let body = serde_json::json!({"error": {"code": "send_not_permitted", "message": "x"}});
        let err = CallToolResult::error(vec![ContentBlock::text(body.to_string())]);
        assert_eq!(result_outcome(&err), "send_not_permitted");
        let odd = CallToolResult::error(vec![ContentBlock::text("not json")]);
        assert_eq!(result_outcome(&odd), "internal");
        let params = ErrorData::invalid_params("bad", None);
        assert_eq!(data_outcome(&params), "invalid_argument");
        let coded = ErrorData::internal_error("x", Some(serde_json::json!({"code": "busy"})));
        assert_eq!(data_outcome(&coded), "busy");
    }
}
