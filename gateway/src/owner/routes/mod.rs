//! The owner routes, one module per group: [`login`] (login, logout, `/`), [`connections`]
//! (list, create, rotate, revoke, read scope), [`permissions`] (the send-permission and
//! read-scope editors and DESIGN §6 body, the chat list they search), [`account`] (state,
//! pairing with an SVG QR, pause/resume/unlink), [`policy`] (excluded chats, `#private`),
//! [`sends`] (journal rows and refused attempts), [`consent`] (OAuth's authorization endpoint
//! and the consent page that turns an approved client into an AI connection), and the static
//! script and stylesheet.
//!
//! Pages are GETs and never change anything; every write is a JSON `POST` sent by the page's
//! script with the `X-CSRF-Token` header.

mod account;
mod accounts;
mod connections;
mod consent;
mod login;
mod permissions;
mod policy;
mod sends;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::{HeaderMap, header};
use serde::de::DeserializeOwned;
use wazap_shared::wire::owner::{Empty, OwnerSession};
use wazap_shared::{ErrorCode, RpcError};

use super::{OwnerError, OwnerState, guard};

/// Largest owner API body (a read scope of 10,000 chat ids fits).
const BODY_LIMIT: usize = 512 * 1024;

/// Every owner route behind [`guard::guard`].
pub(crate) fn router(state: Arc<OwnerState>) -> Router {
    Router::new()
        .route("/", get(login::home))
        .route("/login", get(login::page))
        .route(
            "/api/login",
            post(login::login).layer(DefaultBodyLimit::max(login::BODY_LIMIT)),
        )
        .route("/api/logout", post(login::logout))
        .route("/connections", get(connections::page))
        .route("/connections/{id}", get(permissions::page))
        .route(
            "/api/connections",
            get(connections::list).post(connections::create),
        )
        .route("/api/connections/rotate", post(connections::rotate))
        .route("/api/connections/revoke", post(connections::revoke))
        .route("/api/connections/read-scope", post(connections::read_scope))
        .route(
            "/api/connections/send-permission",
            post(permissions::set_send_permission),
        )
        .route("/api/chats", get(permissions::chats))
        .route("/account", get(account::page))
        .route("/api/account", get(account::get).post(account::act))
        .route("/api/accounts", get(accounts::list).post(accounts::add))
        .route("/api/accounts/remove", post(accounts::remove))
        .route("/policy", get(policy::page))
        .route("/api/policy", get(policy::get).post(policy::set))
        .route(crate::oauth::AUTHORIZE_PATH, get(consent::authorize))
        .route(crate::oauth::CONSENT_PATH, get(consent::page))
        .route("/api/oauth/decide", post(consent::decide))
        .route("/sends", get(sends::page))
        .route("/api/sends", get(sends::list))
        .route("/static/app.js", get(script))
        .route("/static/app.css", get(stylesheet))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(from_fn_with_state(Arc::clone(&state), guard::guard))
        .with_state(state)
}

/// Decode a JSON body (the guard already required `application/json`); a bad one is
/// `invalid_argument` naming the field, never echoing a value.
fn json<T: DeserializeOwned>(body: &[u8]) -> Result<T, OwnerError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "body" } else { path.as_str() };
        OwnerError::Rpc(RpcError::invalid(
            field,
            "missing or not valid for this route",
        ))
    })
}

/// A page's session: its CSRF token, or a redirect to `/login`.
async fn page_session(state: &OwnerState, headers: &HeaderMap) -> Result<String, Response> {
    session_or_login(state, headers, None).await
}

/// A page's session: its CSRF token, or a redirect to `/login`, with `?next=` when `next` is
/// given: the login page goes there afterwards if it is a consent page's path (its script's
/// rule, which allows nothing else: no open redirect).
async fn session_or_login(
    state: &OwnerState,
    headers: &HeaderMap,
    next: Option<&str>,
) -> Result<String, Response> {
    match state.call::<OwnerSession, _, _>(headers, Empty {}).await {
        Ok(s) => Ok(s.csrf),
        Err(OwnerError::Rpc(e)) if e.code == ErrorCode::Unauthenticated => {
            let to = next.map_or_else(
                || "/login".to_owned(),
                |n| format!("/login?next={}", crate::oauth::form::encode(n)),
            );
            Err(Redirect::to(&to).into_response())
        }
        Err(e) => Err(e.into_response()),
    }
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/app.js"),
    )
        .into_response()
}

async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../assets/app.css"),
    )
        .into_response()
}
