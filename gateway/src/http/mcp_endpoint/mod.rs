//! The `/mcp` endpoint behind its guards: a plain JSON-RPC `tools/call` of any tool this
//! deployment serves is answered here directly, every other request by rmcp's Streamable HTTP
//! service.
//!
//! Why: rmcp's stateless service gives each request three tokio mpsc channels (their first
//! 32-slot blocks of JSON-RPC messages, ≈ 32 KiB together), a service task, a handler task and
//! boxed futures. That cost ≈ 0.7–0.9 ms of gateway time per request on a 2-core machine (the
//! bench's "gateway only" row), most of the DESIGN §11 latency budgets of the read, search and
//! send tools; and a long poll holds it all for up to 55 s (with 1,000 parked waits it was
//! most of the gateway's memory: ≈ 45 KiB of the ≈ 57 KiB per parked call was rmcp's).
//!
//! The direct route takes only requests whose rmcp answer it reproduces exactly ([`request`]:
//! legacy calls with plain headers and no `_meta`, and 2026-07-28 calls as rmcp's own client
//! sends them, each rmcp check passed). The result comes from the same tool code as rmcp's
//! route (each tool's `<tool>_call`, through [`McpServer::call_direct`]) inside the same
//! telemetry span, and is wrapped, shaped and serialised as rmcp does it ([`answer`]).
//! Anything else goes to rmcp unchanged, so rmcp stays the authority on every edge of the
//! protocol; a tool the deployment disables is unknown here and answered by rmcp too.

mod answer;
mod request;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::Method;
use http_body_util::BodyExt as _;
use rmcp::ServerHandler as _;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use tracing::Instrument as _;
use wazap_shared::ErrorCode;
use wazap_shared::grant::VerifiedGrant;

use self::request::{DirectCall, header_route};
use crate::error::{ApiError, internal_error};
use crate::mcp::{CallContext, McpServer};

/// rmcp's service for `/mcp`, as built in [`super::mcp_routes`].
pub(crate) type RmcpService = StreamableHttpService<McpServer, NeverSessionManager>;

/// What the endpoint needs: rmcp's service and the tool server the direct route calls.
pub(crate) struct Endpoint {
    /// Everything the direct route does not take.
    pub(crate) rmcp: RmcpService,
    /// The same server rmcp hands each request.
    pub(crate) server: McpServer,
}

/// Handler of `/mcp` (any method): the direct route for a plain tool call, rmcp for the rest.
pub(crate) async fn serve(State(endpoint): State<Arc<Endpoint>>, req: Request) -> Response {
    // A request without a verified grant (a wiring bug) is rmcp's, which answers it.
    if req.method() != Method::POST
        || header_route(req.headers()).is_none()
        || req.extensions().get::<VerifiedGrant>().is_none()
    {
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
    let server = &endpoint.server;
    let call = header_route(&parts.headers).and_then(|route| {
        DirectCall::parse(
            route,
            &bytes,
            |name| server.direct_tool(name),
            &server.supported_protocol_versions(),
        )
    });
    // The grant (checked above) leaves `parts` only for a call the direct route takes.
    let direct = call.and_then(|call| Some((call, CallContext::take(&mut parts)?)));
    let Some((call, context)) = direct else {
        return to_rmcp(&endpoint, Request::from_parts(parts, Body::from(bytes))).await;
    };
    // Keep only the grant and the trace headers for the call: the headers and URI would
    // otherwise hold hyper's read buffer, which they share, for as long as it runs (a wait:
    // up to 55 s). The tools read nothing else of the request.
    drop(parts);
    drop(bytes);
    let DirectCall {
        id,
        tool,
        arguments,
        peer,
    } = call;
    let result = if tool.cancel_on_disconnect() {
        // A parked wait: hyper drops this future when the client goes away, which ends it.
        server.call_direct(tool, context, arguments).await
    } else {
        // Everything else runs to its end, answered or not, as under rmcp (whose handler task
        // is never aborted): a send the worker has taken is still journaled and counted.
        let server = server.clone();
        let run = async move { server.call_direct(tool, context, arguments).await };
        match tokio::spawn(run.instrument(tracing::Span::current())).await {
            Ok(result) => result,
            Err(e) => return ApiError::from(internal_error(&e)).into_response(),
        }
    };
    answer::respond(peer, id, result)
}

/// Hand `req` to rmcp. Boxed, so that [`serve`]'s own future — which a parked wait keeps for
/// up to 55 s — is sized for the direct route, not for rmcp's larger one.
async fn to_rmcp(endpoint: &Endpoint, req: Request) -> Response {
    Box::pin(endpoint.rmcp.handle(req)).await.map(Body::new)
}
