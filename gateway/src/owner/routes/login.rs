//! Login and logout. A login always starts a new session (the worker deletes the one the
//! browser came with), so a cookie planted before login is worthless; logout deletes the
//! session server-side and clears the cookie.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, header};
use wazap_shared::wire::owner::{Empty, LoginRequest, OwnerLogin, OwnerLogout};

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

/// `POST /api/login` `{"password"}` → `{"csrf", "expires_at"}` and the session cookie.
pub(super) async fn login(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OwnerError> {
    let req: LoginRequest = json(&body)?;
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
