//! Login and logout. A login always starts a new session (the worker deletes the one the
//! browser came with), so a cookie planted before login is worthless; logout deletes the
//! session server-side and clears the cookie.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use wazap_shared::wire::owner::{Empty, LoginRequest, OwnerLogin, OwnerLogout};
use wazap_shared::{ErrorCode, RpcError};

use super::{OwnerError, json};
use crate::owner::OwnerState;
use crate::owner::html::page as frame;

/// `GET /`: the connections page (which sends a stranger to `/login`).
pub(super) async fn home() -> Redirect {
    Redirect::to("/connections")
}

/// `GET /login`.
pub(super) async fn page() -> Html<String> {
    frame(
        "Log in",
        "/login",
        None,
        r#"<form id="login-form" class="card narrow">
<label for="password">Owner password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required minlength="8" autofocus>
<button type="submit">Log in</button>
</form>"#,
    )
}

/// The largest login body: the worker's longest password (1,024 bytes) fits even written
/// entirely as `\uXXXX` escapes; anything larger is answered 413 `request_too_large` before it
/// reaches the worker, let alone a hash.
pub(super) const BODY_LIMIT: usize = 8 * 1024;

/// What the login page sends. The peer address is never taken from the body or a header.
#[derive(Debug, Deserialize)]
struct LoginBody {
    password: String,
}

/// `POST /api/login` `{"password"}` → `{"csrf", "expires_at"}` and the session cookie.
///
/// The worker throttles failures per source: the peer address of this connection, as the
/// socket saw it. Never `X-Forwarded-For` or `Forwarded`, which any client can write: behind a
/// reverse proxy every login therefore comes from the proxy's address, and counts as one
/// source (still bounded, by the per-source and the global locks).
pub(super) async fn login(
    State(state): State<Arc<OwnerState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OwnerError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            tracing::warn!("owner login refused: body over the limit");
            OwnerError::Rpc(RpcError::new(
                ErrorCode::RequestTooLarge,
                "the login body is too large",
            ))
        } else {
            OwnerError::Rpc(RpcError::invalid("body", "could not be read"))
        }
    })?;
    let LoginBody { password } = json(&body)?;
    let req = LoginRequest {
        password,
        peer: peer.map(|Extension(ConnectInfo(addr))| addr.ip()),
    };
    let mut info = state.call::<OwnerLogin, _, _>(&headers, req).await?;
    let session = info.session.take().unwrap_or_default();
    let mut response = Json(info).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, state.set_cookie(&session));
    Ok(response)
}

/// `POST /api/logout` → `{}`; the cookie is cleared.
pub(super) async fn logout(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
) -> Result<Response, OwnerError> {
    state.call::<OwnerLogout, _, _>(&headers, Empty {}).await?;
    let mut response = Json(Empty {}).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, state.clear_cookie());
    Ok(response)
}
