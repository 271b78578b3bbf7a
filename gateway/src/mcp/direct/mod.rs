//! The direct route of `/mcp`: a plain JSON-RPC `tools/call` of any tool this deployment serves,
//! answered here, without rmcp's per-request service, exactly as rmcp would answer it. Its one
//! entry point is [`handle`]; [`crate::http::mcp_endpoint`] hands everything else to rmcp.
//!
//! Why: rmcp's stateless service gives each request three tokio mpsc channels, a service task,
//! a handler task and boxed futures. That took most of the DESIGN §11 latency budgets of the
//! read, search and send tools, and a long poll holds it all for up to 55 s, which made it most
//! of the gateway's memory with many parked waits (figures: bench/README.md).
//!
//! Everything that reproduces rmcp 3.11 lives in this module, so an rmcp upgrade is checked
//! here (and by the `differential` test, which sends the same requests to both routes):
//! - [`request`]: which requests the route takes — only those whose rmcp answer it reproduces
//!   exactly (legacy calls with plain headers and no `_meta`, and 2026-07-28 calls as rmcp's own
//!   client sends them, each rmcp check passed);
//! - [`call`]: the tool's shared `<tool>_call` in the same telemetry span as rmcp's route, with
//!   the tool router's argument-error conversion;
//! - [`answer`]: the result wrapped, shaped and serialised as rmcp does it.
//!
//! Anything else goes to rmcp unchanged, so rmcp stays the authority on every edge of the
//! protocol; a tool the deployment disables is unknown here and answered by rmcp too.

mod answer;
mod arguments;
mod call;
mod request;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::Method;
use http_body_util::BodyExt as _;
use rmcp::ServerHandler as _;
use tracing::Instrument as _;
use wazap_shared::ErrorCode;
use wazap_shared::grant::VerifiedGrant;

pub(crate) use self::call::{DirectFn, DirectTool};
use self::request::{DirectCall, header_route};
use crate::error::{ApiError, internal_error};
use crate::mcp::{CallContext, McpServer};

/// The answer to `req` if the direct route takes it, else `req` back, unchanged, for rmcp.
/// `req` has passed the `/mcp` guards (its body is buffered, its grant verified).
pub(crate) async fn handle(server: &McpServer, req: Request) -> Result<Response, Request> {
    // A request without a verified grant (a wiring bug) is rmcp's, which answers it.
    if req.method() != Method::POST
        || header_route(req.headers()).is_none()
        || req.extensions().get::<VerifiedGrant>().is_none()
    {
        return Err(req);
    }
    let (mut parts, body) = req.into_parts();
    // The body limit middleware has already buffered the body: this is one chunk, no copy.
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Ok(
                ApiError::new(ErrorCode::InvalidArgument, "the request body was cut short")
                    .into_response(),
            );
        }
    };
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
        return Err(Request::from_parts(parts, Body::from(bytes)));
    };
    // Keep only the grant and the trace headers for the call: the headers and URI would
    // otherwise hold hyper's read buffer, which they share, for as long as it runs (a wait:
    // up to 55 s). The tools read nothing else of the request.
    drop(parts);
    let DirectCall {
        id,
        tool,
        arguments,
        data,
        peer,
    } = call;
    // A media tool's base64 left in the body is decoded over it: the body (no copy: its only
    // owner, made from the body limit's `Vec`) becomes the decoding's buffer. Any other body
    // goes now.
    let data = match data {
        Some(place) => Some(place.into_base64(Vec::from(bytes))),
        None => {
            drop(bytes);
            None
        }
    };
    let result = if tool.cancel_on_disconnect() {
        // A parked wait: hyper drops this future when the client goes away, which ends it.
        server.call_direct(tool, context, arguments, data).await
    } else {
        // Everything else runs to its end, answered or not, as under rmcp (whose handler task
        // is never aborted): a send the worker has taken is still journaled and counted.
        let server = server.clone();
        let run = async move { server.call_direct(tool, context, arguments, data).await };
        match tokio::spawn(run.instrument(tracing::Span::current())).await {
            Ok(result) => result,
            Err(e) => return Ok(ApiError::from(internal_error(&e)).into_response()),
        }
    };
    Ok(answer::respond(peer, id, result))
}

/// The `direct_request` fuzz target ([`crate::fuzzing::direct_request`]): `data` is header
/// lines (`name: value`), an empty line, then the body. Any tool the gateway knows counts as
/// served.
pub(crate) fn fuzz_request(data: &[u8]) {
    use http::{HeaderMap, HeaderName, HeaderValue};
    use request::HeaderRoute;
    use rmcp::model::ProtocolVersion;

    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (&data[..0], data),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let value = line[colon + 1..].trim_ascii();
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(name, value);
        }
    }
    let tools = |name: &str| {
        super::TOOLS
            .iter()
            .find(|entry| entry.name == name)
            .map(DirectTool::new)
    };
    let supported = ProtocolVersion::KNOWN_VERSIONS;
    let parse = |route| DirectCall::parse(route, body, tools, supported);
    if let Some(route) = header_route(&headers)
        && let (HeaderRoute::Standard { name }, Some(call)) = (route, parse(route))
    {
        assert_eq!(
            call.tool.name(),
            name,
            "a standard call runs the tool its header names"
        );
    }
    for route in [
        HeaderRoute::Legacy,
        HeaderRoute::Standard { name: "list_chats" },
    ] {
        let _ = parse(route);
    }
}

#[cfg(test)]
mod differential;
