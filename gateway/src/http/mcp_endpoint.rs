//! The `/mcp` endpoint behind its guards: a plain JSON-RPC `tools/call` of `wait_for_messages`
//! is answered here directly, every other request by rmcp's Streamable HTTP service.
//!
//! Why: rmcp's stateless service gives each request three tokio mpsc channels (their first
//! 32-slot blocks of JSON-RPC messages, ≈ 32 KiB together), a service task, a handler task and
//! a boxed future. For a call answered in milliseconds that is nothing; a long poll holds it for
//! up to 55 s, and with 1,000 parked waits it was most of the gateway's memory (heaptrack of
//! `wazap-bench --only wait`: ≈ 45 KiB of the ≈ 57 KiB per parked call was rmcp's).
//!
//! The direct route takes only requests whose rmcp answer it reproduces exactly: headers rmcp
//! accepts without a second look, a body that is a single request with exactly `jsonrpc`, `id`,
//! `method` and `params: {name, arguments}` (no `_meta`, no batch, no task). The result comes
//! from the same tool code ([`McpServer::wait_for_messages_call`]) inside the same telemetry
//! span, wrapped in rmcp's own JSON-RPC message type and serialised the same way. Anything
//! else goes to rmcp unchanged, so rmcp stays the authority on every edge of the protocol.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::BodyExt as _;
use rmcp::model::{
    CallToolResponse, JsonObject, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use wazap_shared::ErrorCode;

use crate::error::{ApiError, internal_error};
use crate::mcp::McpServer;
use crate::metrics::{TraceHeaders, mcp_call};

/// The tool answered on the direct route.
const DIRECT_TOOL: &str = "wait_for_messages";

/// rmcp's service for `/mcp`, as built in [`super::mcp_routes`].
pub(crate) type RmcpService = StreamableHttpService<McpServer, NeverSessionManager>;

/// What the endpoint needs: rmcp's service and the tool server the direct route calls.
pub(crate) struct Endpoint {
    /// Everything the direct route does not take.
    pub(crate) rmcp: RmcpService,
    /// The same server rmcp hands each request.
    pub(crate) server: McpServer,
}

/// Handler of `/mcp` (any method): the direct route for a plain `wait_for_messages` call, rmcp
/// for the rest.
pub(crate) async fn serve(State(endpoint): State<Arc<Endpoint>>, req: Request) -> Response {
    if req.method() != Method::POST || !headers_fit(req.headers()) {
        return to_rmcp(&endpoint, req).await;
    }
    let (mut parts, body) = req.into_parts();
    // The body limit middleware has already buffered the body: this is one chunk, no copy.
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return ApiError::new(ErrorCode::InvalidArgument, "the request body was cut short")
                .into_response();
        }
    };
    let Some(call) = DirectCall::parse(&bytes) else {
        return to_rmcp(&endpoint, Request::from_parts(parts, Body::from(bytes))).await;
    };
    let trace = TraceHeaders::of(Some(&parts.headers));
    // Keep only the extensions (the verified grant) for the wait: the headers and URI would
    // otherwise hold hyper's read buffer, which they share, for the whole wait.
    let mut slim = http::Request::new(()).into_parts().0;
    slim.extensions = std::mem::take(&mut parts.extensions);
    drop(parts);
    drop(bytes);
    let server = &endpoint.server;
    let result = mcp_call(DIRECT_TOOL, trace, async {
        server
            .wait_for_messages_call(&slim, call.arguments)
            .await
            .map(CallToolResponse::from)
    })
    .await;
    let message = match result {
        Ok(response) => {
            // What rmcp's handler does for a peer older than 2026-07-28, which every call on
            // this route is (`headers_fit`, no `_meta`).
            let mut result = ServerResult::from(response);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, call.id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(call.id)),
    };
    json_response(&message)
}

/// Hand `req` to rmcp. Boxed, so that [`serve`]'s own future — which a parked wait keeps for
/// up to 55 s — is sized for the direct route, not for rmcp's larger one.
async fn to_rmcp(endpoint: &Endpoint, req: Request) -> Response {
    Box::pin(endpoint.rmcp.handle(req)).await.map(Body::new)
}

/// The JSON-RPC answer as rmcp sends it in JSON-response mode: 200, `application/json`.
fn json_response(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => ApiError::from(internal_error(&e)).into_response(),
    }
}

/// Whether the headers are ones rmcp accepts for a stateless `tools/call` with no further
/// checks: `Accept` lists both `application/json` and `text/event-stream` (plain entries,
/// no parameters), `Content-Type` is `application/json`, and `MCP-Protocol-Version` is absent
/// or a known version older than the one that adds header and `_meta` rules.
fn headers_fit(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        if value.contains('"') {
            return false;
        }
        for entry in value.split(',').map(str::trim) {
            json |= entry.eq_ignore_ascii_case("application/json");
            sse |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    let content_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    let version_fits = match headers.get_all("mcp-protocol-version").iter().count() {
        0 => true,
        1 => headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v < ProtocolVersion::STANDARD_HEADERS.as_str()
                    && ProtocolVersion::KNOWN_VERSIONS
                        .iter()
                        .any(|known| known.as_str() == v)
            }),
        _ => false,
    };
    json && sse && content_json && version_fits && !headers.contains_key("mcp-session-id")
}

/// A body the direct route answers: one `tools/call` of [`DIRECT_TOOL`] with arguments and
/// nothing else.
#[derive(Debug)]
struct DirectCall {
    id: RequestId,
    arguments: JsonObject,
}

impl DirectCall {
    /// The call in `body`, or `None` when rmcp should answer it.
    fn parse(body: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: &'a str,
            id: RequestId,
            #[serde(borrow)]
            method: &'a str,
            #[serde(borrow)]
            params: Params<'a>,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Params<'a> {
            #[serde(borrow)]
            name: &'a str,
            arguments: JsonObject,
        }
        let e: Envelope<'_> = serde_json::from_slice(body).ok()?;
        let direct = e.jsonrpc == "2.0" && e.method == "tools/call" && e.params.name == DIRECT_TOOL;
        direct.then_some(Self {
            id: e.id,
            arguments: e.params.arguments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, http::HeaderValue::from_static(v));
        }
        h
    }

    const PLAIN: [(&str, &str); 2] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];

    #[test]
    fn only_plain_headers_take_the_direct_route() {
        assert!(headers_fit(&headers(&PLAIN)));
        let with = |extra: (&'static str, &'static str)| {
            let mut pairs = PLAIN.to_vec();
            pairs.push(extra);
            headers_fit(&headers(&pairs))
        };
        assert!(with(("mcp-protocol-version", "2025-06-18")));
        assert!(with(("mcp-protocol-version", "2025-11-25")));
        // The version with header and `_meta` rules, unknown versions, sessions: rmcp decides.
        assert!(!with(("mcp-protocol-version", "2026-07-28")));
        assert!(!with(("mcp-protocol-version", "2099-01-01")));
        assert!(!with(("mcp-session-id", "abc")));
        assert!(!headers_fit(&headers(&[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ])));
        assert!(!headers_fit(&headers(&[
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "application/json"),
        ])));
        assert!(!headers_fit(&headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "text/plain"),
        ])));
    }

    #[test]
    fn only_a_plain_wait_call_takes_the_direct_route() {
        let parse = |v: serde_json::Value| DirectCall::parse(&serde_json::to_vec(&v).unwrap());
        let call = parse(serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "wait_for_messages", "arguments": {"timeout_seconds": 1}}
        }))
        .expect("direct");
        assert_eq!(call.id, RequestId::Number(7));
        assert_eq!(call.arguments["timeout_seconds"], 1);
        assert!(
            parse(serde_json::json!({
                "jsonrpc": "2.0", "id": "a", "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": {}}
            }))
            .is_some()
        );
        for other in [
            // Another tool, another method, `_meta`, no arguments, null arguments, a batch,
            // a notification, a wrong version.
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_chats", "arguments": {}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": {}, "_meta": {}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait_for_messages"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": null}}),
            serde_json::json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": {}}}]),
            serde_json::json!({"jsonrpc": "2.0", "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": {}}}),
            serde_json::json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait_for_messages", "arguments": {}}}),
        ] {
            assert!(parse(other.clone()).is_none(), "{other}");
        }
    }
}
