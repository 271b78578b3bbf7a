//! The client-facing endpoints: registration (JSON), token and revocation (forms). Each checks
//! what it can without the worker — the content type, the body's size and form, a
//! registration's rules (`ClientMetadata::checked`, which the worker applies again) — then asks
//! the worker, which decides. Nothing a client sends is logged or echoed: the logs carry the
//! endpoint, the outcome and an error code.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use wazap_shared::oauth::ClientMetadata;
use wazap_shared::wire::oauth::{
    OAuthAnswer, OAuthRegister, OAuthRevoke, OAuthToken, RevokeTokenRequest, TokenRequest,
};

use super::form::{self, Params};
use super::{Server, content_type_is, error, refused, unavailable};

const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";

/// `POST /oauth/register` (RFC 7591): a public client's metadata → 201 with its client id.
pub(super) async fn register(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    const ENDPOINT: &str = "register";
    const BAD: &str = "invalid_client_metadata";
    if !content_type_is(&headers, JSON) {
        return bad_request(ENDPOINT, BAD, "content-type: must be application/json");
    }
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return unreadable(ENDPOINT, BAD, &rejection),
    };
    let Ok(metadata) = serde_json::from_slice::<ClientMetadata>(&body) else {
        return bad_request(
            ENDPOINT,
            BAD,
            "the body must be a JSON object of client metadata (RFC 7591)",
        );
    };
    let metadata = match metadata.checked() {
        Ok(metadata) => metadata,
        Err(e) => return refused(ENDPOINT, e.into()),
    };
    match server
        .bus
        .call::<OAuthRegister>(None, &metadata, None)
        .await
    {
        Ok(OAuthAnswer::Done(client)) => {
            tracing::info!(endpoint = ENDPOINT, "oauth client registered");
            (StatusCode::CREATED, Json(client)).into_response()
        }
        Ok(OAuthAnswer::Refused(r)) => refused(ENDPOINT, r),
        Err(e) => unavailable(ENDPOINT, &e),
    }
}

/// `POST /oauth/token` (RFC 6749 §4.1.3, §6): a code or a refresh token → tokens.
pub(super) async fn token(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    const ENDPOINT: &str = "token";
    let mut params = match form_body(&headers, body) {
        Ok(params) => params,
        Err(why) => return bad_form(ENDPOINT, why),
    };
    let req = TokenRequest {
        grant_type: params.take("grant_type"),
        code: params.take("code"),
        redirect_uri: params.take("redirect_uri"),
        client_id: params.take("client_id"),
        code_verifier: params.take("code_verifier"),
        refresh_token: params.take("refresh_token"),
        resource: params.take("resource"),
    };
    match server.bus.call::<OAuthToken>(None, &req, None).await {
        Ok(OAuthAnswer::Done(tokens)) => {
            tracing::info!(endpoint = ENDPOINT, "oauth tokens issued");
            let mut response = Json(tokens).into_response();
            // RFC 6749 §5.1 (Cache-Control: no-store comes from the Host middleware).
            response
                .headers_mut()
                .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            response
        }
        Ok(OAuthAnswer::Refused(r)) => refused(ENDPOINT, r),
        Err(e) => unavailable(ENDPOINT, &e),
    }
}

/// `POST /oauth/revoke` (RFC 7009): 200 with an empty body, whether or not the token was known.
pub(super) async fn revoke(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    const ENDPOINT: &str = "revoke";
    let mut params = match form_body(&headers, body) {
        Ok(params) => params,
        Err(why) => return bad_form(ENDPOINT, why),
    };
    let req = RevokeTokenRequest {
        token: params.take("token"),
        token_type_hint: params.take("token_type_hint"),
        client_id: params.take("client_id"),
    };
    match server.bus.call::<OAuthRevoke>(None, &req, None).await {
        Ok(OAuthAnswer::Done(_)) => {
            tracing::info!(endpoint = ENDPOINT, "oauth revocation answered");
            StatusCode::OK.into_response()
        }
        Ok(OAuthAnswer::Refused(r)) => refused(ENDPOINT, r),
        Err(e) => unavailable(ENDPOINT, &e),
    }
}

/// A form body's parameters, or why it is refused: the status and a fixed wording.
fn form_body(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Params, (StatusCode, &'static str)> {
    if !content_type_is(headers, FORM) {
        return Err((
            StatusCode::BAD_REQUEST,
            "content-type: must be application/x-www-form-urlencoded",
        ));
    }
    let body = body.map_err(|rejection| body_refusal(&rejection))?;
    std::str::from_utf8(&body)
        .map_err(|_| form::FormError::Malformed)
        .and_then(form::parse)
        .map_err(|e| (StatusCode::BAD_REQUEST, e.description()))
}

/// A form refused by [`form_body`]: `invalid_request`.
fn bad_form(endpoint: &'static str, (status, description): (StatusCode, &'static str)) -> Response {
    tracing::info!(endpoint, error = "invalid_request", "oauth request refused");
    error(status, "invalid_request", description)
}

/// 400 with `code`, refused here before the worker.
fn bad_request(endpoint: &'static str, code: &str, description: &str) -> Response {
    tracing::info!(endpoint, error = code, "oauth request refused");
    error(StatusCode::BAD_REQUEST, code, description)
}

/// A body over [`super::BODY_LIMIT`] (413) or one that could not be read (400).
fn unreadable(endpoint: &'static str, code: &str, rejection: &BytesRejection) -> Response {
    let (status, description) = body_refusal(rejection);
    tracing::info!(
        endpoint,
        error = code,
        "oauth request refused: body not read"
    );
    error(status, code, description)
}

/// The status and wording for a body that was not read.
fn body_refusal(rejection: &BytesRejection) -> (StatusCode, &'static str) {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is over 16 KiB",
        )
    } else {
        (
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )
    }
}
