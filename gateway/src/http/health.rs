//! `/healthz` (the process is alive) and `/readyz` (NATS is connected and a worker answers
//! `ping` within about a second, and says it is ready: a worker with a supervised task down
//! answers `worker_unavailable` naming it, which `/readyz` passes on).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use wazap_shared::ErrorCode;
use wazap_shared::wire::system::{Ping, PingRequest};

use crate::error::ApiError;
use crate::state::AppState;

/// How long `/readyz` waits for the worker's `ping`.
const READY_DEADLINE: Duration = Duration::from_secs(1);

/// `GET /healthz`: always 200.
pub(crate) async fn healthz() -> Response {
    Json(serde_json::json!({ "status": "ok" })).into_response()
}

/// `GET /readyz`: 200 when a ready worker answers, else 503 `worker_unavailable` (with the
/// worker's reason when it answered not ready).
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.bus.client().connection_state() != async_nats::connection::State::Connected {
        return ApiError::new(ErrorCode::WorkerUnavailable, "not connected to NATS")
            .into_response();
    }
    match state
        .bus
        .call::<Ping>(None, &PingRequest::default(), Some(READY_DEADLINE))
        .await
    {
        Ok(ping) => {
            Json(serde_json::json!({ "status": "ready", "sync": ping.sync })).into_response()
        }
        Err(e) if e.code == ErrorCode::WorkerUnavailable => {
            ApiError::new(ErrorCode::WorkerUnavailable, e.message).into_response()
        }
        Err(_) => ApiError::new(ErrorCode::WorkerUnavailable, "no worker answered").into_response(),
    }
}
