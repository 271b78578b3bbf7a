//! The owner routes' edge checks, before anything reaches the worker: the exact `Host` of
//! `WAZAP_OWNER_ORIGIN` (DNS rebinding); no `Authorization` header at all (MCP credentials never
//! call the owner API); for every method but GET/HEAD the exact `Origin` (missing or `null` is
//! refused), no `Sec-Fetch-Site: cross-site` and a JSON body. Every answer gets no-store,
//! anti-framing and a strict Content-Security-Policy. Refused values are never echoed or logged.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, header};
use wazap_shared::ErrorCode;

use super::OwnerState;
use crate::error::ApiError;

/// Scripts and styles only from this origin; images also as `data:`; no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Middleware over every owner route.
pub(crate) async fn guard(
    State(state): State<Arc<OwnerState>>,
    req: Request,
    next: Next,
) -> Response {
    let mut response = match refusal(&state, &req) {
        None => next.run(req).await,
        Some(refusal) => refusal,
    };
    let h = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::VARY, "Origin, Sec-Fetch-Site, Cookie"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Why `req` is refused, if it is.
fn refusal(state: &OwnerState, req: &Request) -> Option<Response> {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(|h| h.trim().to_ascii_lowercase());
    if host.as_deref() != Some(state.host.as_str()) {
        tracing::warn!("owner route: refused a Host that is not WAZAP_OWNER_ORIGIN's");
        return Some(refused(
            StatusCode::FORBIDDEN,
            "the Host header is not this dashboard's",
        ));
    }
    if headers.contains_key(header::AUTHORIZATION) {
        tracing::warn!("owner route: refused a request carrying an Authorization header");
        return Some(
            ApiError::new(
                ErrorCode::Unauthenticated,
                "owner routes take the owner's session, never a bearer token",
            )
            .into_response(),
        );
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        return None;
    }
    let origin_ok = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|o| o.trim().eq_ignore_ascii_case(&state.origin));
    if !origin_ok {
        tracing::warn!("owner write refused: Origin missing or not WAZAP_OWNER_ORIGIN");
        return Some(refused(
            StatusCode::FORBIDDEN,
            "writes need this dashboard's exact Origin",
        ));
    }
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
    {
        tracing::warn!("owner write refused: cross-site fetch");
        return Some(refused(
            StatusCode::FORBIDDEN,
            "cross-site writes are refused",
        ));
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Some(refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content-type: must be application/json",
        ));
    }
    None
}

fn refused(status: StatusCode, message: &str) -> Response {
    ApiError::new(ErrorCode::InvalidArgument, message)
        .with_status(status)
        .into_response()
}
