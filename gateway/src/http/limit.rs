//! The resource limits in front of `/mcp` and `/api/send/*`: requests in flight (the listener's
//! semaphore, whose permit lives in the response body until it has been sent, so the limit also
//! holds for streamed answers) and
//! request body size (buffered up to the largest limit of any served tool, then checked
//! against the called tool's own limit; a body over the limit is drained a bounded distance so
//! the client sees the 413 rather than a reset connection).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt as _;
use http::header;
use http_body_util::BodyExt as _;
use wazap_shared::ErrorCode;

use crate::error::ApiError;
use crate::mcp::{DEFAULT_BODY_LIMIT, ToolSet};
use crate::state::{AppState, ListenerPolicy};

/// Middleware: take a permit or answer 429 `busy` at once.
pub(crate) async fn concurrency(
    State(listener): State<Arc<ListenerPolicy>>,
    req: Request,
    next: Next,
) -> Response {
    let Ok(permit) = Arc::clone(&listener.permits).try_acquire_owned() else {
        tracing::info!("request shed: the concurrency limit is reached");
        return ApiError::new(
            ErrorCode::Busy,
            "too many requests in flight; retry in a moment",
        )
        .into_response();
    };
    let (parts, body) = next.run(req).await.into_parts();
    // The closure owns the permit: it is released when hyper drops the body, i.e. once the
    // answer has been sent or the client has gone.
    let body = body.map_frame(move |frame| {
        let _held = &permit;
        frame
    });
    Response::from_parts(parts, Body::new(body))
}

/// Middleware: refuse a body over the limit with 413 `request_too_large`.
pub(crate) async fn body_limit(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = match read_body(&parts.headers, body, state.tools.max_body_limit()).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    if bytes.len() > DEFAULT_BODY_LIMIT && bytes.len() > limit_for(&state.tools, &bytes) {
        return too_large();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// How far past its limit a body is still read (and discarded), so that a client that is still
/// sending receives the 413 instead of a reset connection.
const DRAIN_MARGIN: usize = 4 * 1024 * 1024;

/// A request body of at most `max` bytes, else `request_too_large` (413); a body cut short is
/// `invalid_argument`. Past `max` the body is drained up to [`DRAIN_MARGIN`] more.
pub(crate) async fn read_body(
    headers: &http::HeaderMap,
    body: Body,
    max: usize,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let drain_bound = max.saturating_add(DRAIN_MARGIN);
    if declared.is_some_and(|n| n > drain_bound as u64) {
        return Err(too_large_error());
    }
    let mut body = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|_| {
            ApiError::new(ErrorCode::InvalidArgument, "the request body was cut short")
        })?;
        seen = seen.saturating_add(chunk.len());
        if seen > drain_bound {
            return Err(too_large_error());
        }
        if seen <= max {
            bytes.extend_from_slice(&chunk);
        }
    }
    if seen > max {
        return Err(too_large_error());
    }
    Ok(Bytes::from(bytes))
}

/// The limit of the tool a JSON-RPC `tools/call` body names (the default for anything else).
fn limit_for(tools: &ToolSet, body: &[u8]) -> usize {
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<&'a str>,
    }
    let tool = serde_json::from_slice::<Call<'_>>(body)
        .ok()
        .filter(|c| c.method == Some("tools/call"))
        .and_then(|c| c.params?.name);
    tools.body_limit(tool)
}

fn too_large() -> Response {
    too_large_error().into_response()
}

fn too_large_error() -> ApiError {
    ApiError::new(
        ErrorCode::RequestTooLarge,
        "the request body is larger than this tool accepts",
    )
}
