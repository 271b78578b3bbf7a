//! The JSON send API of DESIGN §5: `POST /api/send/message|media|voice|status` take the bodies
//! of the four send tools and answer the same result objects, behind the same Host/Origin
//! guard, bearer auth (credentials in the URL refused), concurrency limit, body budget and
//! clock, and deadlines as `/mcp`, in the same order. Errors are an HTTP status plus `{"error":{"code","message"}}` from the one error
//! edge. With `WAZAP_OUTBOUND=off` none of these routes exist (404).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use http::{StatusCode, header};
use serde::de::DeserializeOwned;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{
    GetSendStatusRequest, SendMediaRequest, SendMessageRequest, SendResult, SendVoiceNoteRequest,
};
use wazap_shared::{ErrorCode, RpcError};

use crate::error::ApiError;
use crate::http::permits::BodyHold;
use crate::http::{auth, host, limit};
use crate::mcp::{DEFAULT_BODY_LIMIT, SEND_BODY_LIMIT, describe_args_error};
use crate::metrics;
use crate::state::{AppState, ListenerPolicy};

/// The `/api/send/*` routes with their guards (`listener`'s Host rule and permits); empty when
/// outbound sending is off.
pub(crate) fn routes(state: Arc<AppState>, listener: Arc<ListenerPolicy>) -> Router {
    if !state.outbound {
        return Router::new();
    }
    Router::new()
        .route("/api/send/message", post(message))
        .route("/api/send/media", post(media))
        .route("/api/send/voice", post(voice))
        .route("/api/send/status", post(status))
        .with_state(Arc::clone(&state))
        .layer(from_fn_with_state(
            Arc::clone(&listener),
            limit::concurrency,
        ))
        .layer(from_fn_with_state(state, auth::require_grant))
        .layer(from_fn_with_state(listener, host::guard))
}

async fn message(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<SendMessageRequest>(&state, req, SEND_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("send_message", state.sender.message(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

async fn media(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<SendMediaRequest>(&state, req, SEND_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("send_media", state.sender.media(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

async fn voice(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<SendVoiceNoteRequest>(&state, req, SEND_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("send_voice_note", state.sender.voice(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

async fn status(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<GetSendStatusRequest>(&state, req, DEFAULT_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("get_send_status", state.sender.status(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

/// 200 with the result, or the error's status and body.
fn answer(result: Result<SendResult, RpcError>) -> Response {
    match result {
        Ok(r) => (StatusCode::OK, Json(r)).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The body as `T`: `Content-Type: application/json` (else 415), at most `max` bytes (else 413)
/// read within the body budget and clock ([`limit::read_body`]), JSON of the right shape (else 400
/// naming the field, never the value). The hold on the budget comes back with it, for the handler
/// to keep until it has answered.
async fn read_json<T: DeserializeOwned>(
    state: &AppState,
    req: Request,
    max: usize,
) -> Result<(T, BodyHold), ApiError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            "Content-Type must be application/json",
        )
        .with_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let (parts, body) = req.into_parts();
    let (bytes, hold) = limit::read_body(&parts.headers, body, max, &state.body_budget).await?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let message = if e.inner().is_syntax() || e.inner().is_eof() {
            "the body is not valid JSON".to_owned()
        } else {
            describe_args_error(&e)
        };
        ApiError::new(ErrorCode::InvalidArgument, message)
    })?;
    de.end()
        .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "the body is not valid JSON"))?;
    Ok((value, hold))
}
