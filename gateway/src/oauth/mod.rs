//! wazap's OAuth 2.1 authorization server at the edge (#28): the endpoints a remote MCP client
//! (claude.ai, ChatGPT, VS Code, Cursor) calls on the owner listener without a browser — the
//! server's metadata (RFC 8414), Dynamic Client Registration (RFC 7591), the token endpoint and
//! revocation (RFC 7009). The worker keeps the clients, codes and refresh tokens and decides
//! every request (`wire::oauth`); this module checks the form of what arrives, forwards it, and
//! writes the answer in OAuth's own terms (`{"error","error_description"}`).
//!
//! They sit behind the owner listener's `Host` rule alone, not the owner guard: their callers
//! carry no cookie and no `Origin`, and prove themselves with PKCE and the tokens they hold, so
//! the guard's session, Origin and CSRF rules have nothing to check. Every answer is `no-store`.
//! A worker that cannot be reached is `503 temporarily_unavailable`, never a 500 with details.
//!
//! The browser half (the authorization endpoint and the consent page) is an owner page, behind
//! the guard: `owner/routes/consent`.

pub(crate) mod document;
mod endpoints;
pub(crate) mod form;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;
use wazap_shared::wire::oauth::OAuthRefusal;

use crate::bus::Bus;
use crate::http::host::request_host;
use crate::state::ListenerPolicy;

/// The authorization server's metadata (RFC 8414 §3: the issuer has no path).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// The authorization endpoint (an owner page: `owner/routes/consent`).
pub(crate) const AUTHORIZE_PATH: &str = "/oauth/authorize";
/// The consent page an authorization request waits on.
pub(crate) const CONSENT_PATH: &str = "/oauth/consent";
const TOKEN_PATH: &str = "/oauth/token";
const REGISTER_PATH: &str = "/oauth/register";
const REVOKE_PATH: &str = "/oauth/revoke";

/// The largest body of a registration, token or revocation request: metadata of ten 2,000-byte
/// redirect URIs fits; nothing legitimate is larger.
const BODY_LIMIT: usize = 16 * 1024;

/// What the endpoints share.
#[derive(Debug)]
struct Server {
    /// The way to the worker.
    bus: Bus,
    /// The metadata document, the same for every request.
    metadata: Metadata,
}

/// The public endpoints, admitting the `Host` values `listener` (the owner listener's) admits.
pub(crate) fn routes(issuer: &str, bus: Bus, listener: Arc<ListenerPolicy>) -> Router {
    let server = Arc::new(Server {
        bus,
        metadata: Metadata::new(issuer),
    });
    Router::new()
        .route(METADATA_PATH, get(metadata))
        .route(REGISTER_PATH, post(endpoints::register))
        .route(TOKEN_PATH, post(endpoints::token))
        .route(REVOKE_PATH, post(endpoints::revoke))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(from_fn_with_state(listener, host_only))
        .with_state(server)
}

/// RFC 8414 §2: what a client needs to know of this authorization server. Public clients only
/// (PKCE S256, no secret), registered by DCR or by a client id metadata document; one scope.
#[derive(Debug, Serialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: String,
    revocation_endpoint: String,
    response_types_supported: [&'static str; 1],
    grant_types_supported: [&'static str; 2],
    code_challenge_methods_supported: [&'static str; 1],
    token_endpoint_auth_methods_supported: [&'static str; 1],
    revocation_endpoint_auth_methods_supported: [&'static str; 1],
    scopes_supported: [&'static str; 1],
    client_id_metadata_document_supported: bool,
    authorization_response_iss_parameter_supported: bool,
}

impl Metadata {
    /// The document of the server at `issuer` (`WAZAP_OWNER_ORIGIN`).
    fn new(issuer: &str) -> Self {
        let at = |path: &str| format!("{issuer}{path}");
        Self {
            issuer: issuer.to_owned(),
            authorization_endpoint: at(AUTHORIZE_PATH),
            token_endpoint: at(TOKEN_PATH),
            registration_endpoint: at(REGISTER_PATH),
            revocation_endpoint: at(REVOKE_PATH),
            response_types_supported: ["code"],
            grant_types_supported: ["authorization_code", "refresh_token"],
            code_challenge_methods_supported: ["S256"],
            token_endpoint_auth_methods_supported: ["none"],
            revocation_endpoint_auth_methods_supported: ["none"],
            scopes_supported: ["mcp"],
            client_id_metadata_document_supported: true,
            authorization_response_iss_parameter_supported: true,
        }
    }
}

/// `GET /.well-known/oauth-authorization-server`.
async fn metadata(State(server): State<Arc<Server>>) -> Response {
    Json(&server.metadata).into_response()
}

/// Middleware: only the listener's own `Host` (DNS rebinding); every answer `no-store`.
async fn host_only(
    State(listener): State<Arc<ListenerPolicy>>,
    req: Request,
    next: Next,
) -> Response {
    let allowed = request_host(&req).is_some_and(|h| listener.hosts.host_allowed(&h));
    let mut response = if allowed {
        next.run(req).await
    } else {
        tracing::warn!("oauth endpoint: refused a Host that is not WAZAP_OWNER_ORIGIN's");
        error(
            StatusCode::FORBIDDEN,
            "invalid_request",
            "the Host header is not this server's",
        )
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An OAuth error answer: `{"error","error_description"}` with `status`.
fn error(status: StatusCode, code: &str, description: &str) -> Response {
    let body = OAuthRefusal {
        error: code.to_owned(),
        error_description: description.to_owned(),
    };
    (status, Json(body)).into_response()
}

/// The worker's refusal: 401 for `invalid_client` (RFC 6749 §5.2), else 400.
fn refused(endpoint: &'static str, refusal: OAuthRefusal) -> Response {
    tracing::info!(
        endpoint,
        error = refusal.error.as_str(),
        "oauth request refused"
    );
    let status = if refusal.error == "invalid_client" {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::BAD_REQUEST
    };
    (status, Json(refusal)).into_response()
}

/// The worker could not answer (unreachable, timed out, or failed): one fixed answer.
fn unavailable(endpoint: &'static str, e: &wazap_shared::RpcError) -> Response {
    tracing::warn!(
        endpoint,
        code = e.code.as_str(),
        "oauth request: worker unavailable"
    );
    let mut response = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the authorization server cannot answer right now; try again shortly",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Whether the request's `Content-Type` is `media_type` (parameters such as `charset` aside).
fn content_type_is(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_names_the_owner_origins_endpoints_and_public_clients_only() {
        let doc = serde_json::to_value(Metadata::new("http://127.0.0.1:8081")).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({
                "issuer": "http://127.0.0.1:8081",
                "authorization_endpoint": "http://127.0.0.1:8081/oauth/authorize",
                "token_endpoint": "http://127.0.0.1:8081/oauth/token",
                "registration_endpoint": "http://127.0.0.1:8081/oauth/register",
                "revocation_endpoint": "http://127.0.0.1:8081/oauth/revoke",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "revocation_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp"],
                "client_id_metadata_document_supported": true,
                "authorization_response_iss_parameter_supported": true,
            })
        );
    }

    #[test]
    fn content_types_match_without_parameters_or_case() {
        let mut h = HeaderMap::new();
        assert!(!content_type_is(&h, "application/json"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/X-WWW-Form-Urlencoded; charset=UTF-8"),
        );
        assert!(content_type_is(&h, "application/x-www-form-urlencoded"));
        assert!(!content_type_is(&h, "application/json"));
    }
}
