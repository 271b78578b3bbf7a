//! Listener A's HTTP surface: `/mcp` and `/api/send/*` behind their middleware stacks,
//! `/healthz` and `/readyz`.
//!
//! Middleware order on `/mcp` (outermost first): Host/Origin guard → concurrency limit → body
//! limit → bearer auth → [`mcp_endpoint`]: a plain `tools/call` of an enabled tool answered
//! directly, everything else by rmcp's Streamable HTTP service (stateless, JSON responses).

pub(crate) mod api_send;
pub(crate) mod auth;
pub(crate) mod health;
pub(crate) mod host;
pub(crate) mod limit;
pub(crate) mod mcp_endpoint;
pub(crate) mod serve;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{any, get};

use crate::state::AppState;

/// All of listener A.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(Arc::clone(&state))
        .merge(mcp_routes(state))
}

/// `/mcp` and `/api/send/*` with their guards; listener B will mount the same routes.
pub(crate) fn mcp_routes(state: Arc<AppState>) -> Router {
    let endpoint = Arc::new(mcp_endpoint::Endpoint::new(&state));
    Router::new()
        .route("/mcp", any(mcp_endpoint::serve).with_state(endpoint))
        .layer(from_fn_with_state(Arc::clone(&state), auth::require_grant))
        .layer(from_fn_with_state(Arc::clone(&state), limit::body_limit))
        .layer(from_fn_with_state(Arc::clone(&state), limit::concurrency))
        .layer(from_fn_with_state(Arc::clone(&state), host::guard))
        .merge(api_send::routes(state))
}
