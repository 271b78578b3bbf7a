//! The resource limits in front of `/mcp` and `/api/send/*`, all behind bearer auth, so a
//! client without a valid token holds none of them:
//!
//! - requests in flight: the listener's [`Permits`], per credential (a share, see
//!   `http/permits`), each held in the response body until it has been sent, so the limit also
//!   holds for streamed answers;
//! - request bodies: buffered up to the largest limit of any served tool, then checked against
//!   the called tool's own limit (a body over the limit is drained a bounded distance so the
//!   client sees the 413 rather than a reset connection); their bytes taken from the process's
//!   [`BodyBudget`](crate::http::permits::BodyBudget) before they are read; and read against the
//!   clock ([`read_body`]): a body that stalls or trickles is answered 408 and its connection
//!   closed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use http::{StatusCode, header};
use http_body_util::BodyExt as _;
use tokio::time::Instant;
use wazap_shared::ErrorCode;
use wazap_shared::grant::VerifiedGrant;

use crate::error::ApiError;
use crate::http::permits::{BodyBudget, BodyHold};
use crate::mcp::{DEFAULT_BODY_LIMIT, ToolSet};
use crate::state::{AppState, ListenerPolicy};

/// Middleware (inside bearer auth): take a permit for the request's credential or answer 429
/// `busy` at once.
pub(crate) async fn concurrency(
    State(listener): State<Arc<ListenerPolicy>>,
    req: Request,
    next: Next,
) -> Response {
    // Auth runs first and always leaves a grant; without one (a routing mistake) nothing is
    // admitted rather than everything.
    let permit = req
        .extensions()
        .get::<VerifiedGrant>()
        .and_then(|grant| listener.permits.try_acquire(&grant.connection_id));
    let Some(permit) = permit else {
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

/// Middleware: read the body within the budget and the clock, and refuse a body over the limit
/// with 413 `request_too_large`.
pub(crate) async fn body_limit(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let max = state.tools.max_body_limit();
    let (bytes, _hold) = match read_body(&parts.headers, body, max, &state.body_budget).await {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    if bytes.len() > DEFAULT_BODY_LIMIT && bytes.len() > limit_for(&state.tools, &bytes) {
        return too_large();
    }
    // `_hold` lives until the handler has answered: the body's bytes (and what is parsed from
    // them) count against the budget until then.
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// How far past its limit a body is still read (and discarded), so that a client that is still
/// sending receives the 413 instead of a reset connection.
const DRAIN_MARGIN: usize = 4 * 1024 * 1024;

/// The longest wait for the next piece of a body.
pub(crate) const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a body may take before [`MIN_BODY_RATE`] applies.
pub(crate) const BODY_GRACE: Duration = Duration::from_secs(10);
/// The slowest average a body may arrive at once [`BODY_GRACE`] has passed, in bytes per second:
/// a 12 MiB send body then takes at most 10 s + 6.4 min, which a 1 Mbit/s uplink beats tenfold.
pub(crate) const MIN_BODY_RATE: u64 = 32 * 1024;

/// A request body of at most `max` bytes (a `Vec` the caller may decode in place), with its bytes
/// held in `budget`; else
/// `request_too_large` (413), `busy` (429: the budget is spent), `deadline_exceeded` with 408 (the
/// body stalled for [`BODY_IDLE_TIMEOUT`] or fell below [`MIN_BODY_RATE`] after [`BODY_GRACE`]),
/// or `invalid_argument` (cut short). Past `max` the body is drained up to [`DRAIN_MARGIN`] more
/// (those bytes are not kept, so not held).
pub(crate) async fn read_body(
    headers: &http::HeaderMap,
    body: Body,
    max: usize,
    budget: &BodyBudget,
) -> Result<(Vec<u8>, BodyHold), ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let drain_bound = max.saturating_add(DRAIN_MARGIN);
    if declared.is_some_and(|n| n > drain_bound as u64) {
        return Err(too_large_error());
    }
    let mut hold = budget.hold();
    let mut bytes = Vec::new();
    if let Some(declared) = declared {
        // Known length: take it all up front (the part that will be kept), and allocate once.
        let kept = usize::try_from(declared).unwrap_or(max).min(max);
        hold.grow_to(kept, true)?;
        bytes.reserve_exact(kept);
    }
    let started = Instant::now();
    let mut body = body.into_data_stream();
    let mut seen = 0usize;
    loop {
        let chunk = match tokio::time::timeout_at(next_piece_by(started, seen), body.next()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(_) => return Err(too_slow()),
        };
        let chunk = chunk.map_err(|_| {
            ApiError::new(ErrorCode::InvalidArgument, "the request body was cut short")
        })?;
        seen = seen.saturating_add(chunk.len());
        if seen > drain_bound {
            return Err(too_large_error());
        }
        if seen <= max {
            hold.grow_to(seen, declared.is_some())?;
            bytes.extend_from_slice(&chunk);
        }
    }
    if seen > max {
        return Err(too_large_error());
    }
    Ok((bytes, hold))
}

/// When the next piece of a body must have come, `seen` bytes having come since `started`: within
/// [`BODY_IDLE_TIMEOUT`], and before the average falls below [`MIN_BODY_RATE`] (counted from the
/// end of [`BODY_GRACE`]).
fn next_piece_by(started: Instant, seen: usize) -> Instant {
    let idle = Instant::now() + BODY_IDLE_TIMEOUT;
    let earned = Duration::from_secs_f64(seen as f64 / MIN_BODY_RATE as f64);
    idle.min(started + BODY_GRACE + earned)
}

/// 408 `deadline_exceeded`: the body came too slowly. The body is left unread, so hyper closes
/// the connection after this answer.
fn too_slow() -> ApiError {
    tracing::info!("request refused: its body came too slowly");
    ApiError::new(
        ErrorCode::DeadlineExceeded,
        "the request body arrived too slowly",
    )
    .with_status(StatusCode::REQUEST_TIMEOUT)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gets_its_grace_then_must_keep_the_rate() {
        let now = Instant::now();
        // Nothing yet: the first piece is due within the grace (and the idle timeout).
        assert!(next_piece_by(now, 0) <= now + BODY_GRACE.max(BODY_IDLE_TIMEOUT));
        // Fast so far: earned time is capped by the idle timeout.
        let fast = next_piece_by(now, 10 * 1024 * 1024);
        assert!(fast <= Instant::now() + BODY_IDLE_TIMEOUT);
        assert!(fast > now + BODY_IDLE_TIMEOUT - Duration::from_secs(1));
        // 1 MiB in 100 s is below 32 KiB/s after the grace: overdue at once.
        if let Some(long_ago) = now.checked_sub(Duration::from_secs(100)) {
            assert!(next_piece_by(long_ago, 1024 * 1024) < Instant::now());
        }
    }

    #[tokio::test]
    async fn the_budget_refuses_a_body_it_cannot_hold_before_reading_it() {
        let budget = BodyBudget::new(16 * 1024 * 1024);
        let mut headers = http::HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, (12 * 1024 * 1024).into());
        // The first 12 MiB body holds its bytes while the second is refused: `busy`, unread.
        let (_, held) = read_body(
            &headers,
            Body::from(vec![b' '; 12 * 1024 * 1024]),
            12 << 20,
            &budget,
        )
        .await
        .expect("the first fits");
        let refused = read_body(&headers, Body::empty(), 12 << 20, &budget)
            .await
            .expect_err("over the budget");
        assert_eq!(
            refused.into_response().status(),
            StatusCode::TOO_MANY_REQUESTS
        );
        drop(held);
        assert_eq!(budget.available(), 16 * 1024 * 1024);
    }
}
