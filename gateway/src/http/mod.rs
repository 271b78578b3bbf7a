//! The MCP listener's HTTP surface: `/mcp` and `/api/send/*` behind their middleware stacks,
//! `/healthz` and `/readyz`.
//!
//! Middleware order on `/mcp` (outermost first): Host/Origin guard → bearer auth (on the headers
//! alone: no byte of the body is read for a request without a valid token) → concurrency limit
//! (the credential's share of the listener's permits) → body limit (the byte budget, the body's
//! clock and the tool's size limit) → [`mcp_endpoint`]: a plain `tools/call` of an enabled tool
//! answered directly, everything else by rmcp's Streamable HTTP service (stateless, JSON
//! responses). `/api/send/*` has the same order, its handlers reading the body themselves.
//! Below all of it, the accept loop (`serve`) times out a request head that does not arrive.

pub(crate) mod api_send;
pub(crate) mod auth;
pub(crate) mod health;
pub(crate) mod host;
pub(crate) mod limit;
pub(crate) mod mcp_endpoint;
pub(crate) mod permits;
pub(crate) mod resource;
pub(crate) mod serve;

use std::sync::Arc;

use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{any, get};

use crate::state::{AppState, ListenerPolicy};

/// All of the MCP listener, admitting what `listener` says.
pub(crate) fn router(state: Arc<AppState>, listener: Arc<ListenerPolicy>) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(Arc::clone(&state))
        .merge(mcp_routes(state, listener))
}

/// `/mcp` and `/api/send/*` with their guards, admitting what `listener` says; the owner listener
/// mounts the same routes under its own policy.
pub(crate) fn mcp_routes(state: Arc<AppState>, listener: Arc<ListenerPolicy>) -> Router {
    let endpoint = Arc::new(mcp_endpoint::Endpoint::new(&state));
    Router::new()
        .route("/mcp", any(mcp_endpoint::serve).with_state(endpoint))
        .layer(from_fn_with_state(Arc::clone(&state), limit::body_limit))
        .layer(from_fn_with_state(
            Arc::clone(&listener),
            limit::concurrency,
        ))
        .layer(from_fn_with_state(Arc::clone(&state), auth::require_grant))
        .layer(from_fn(resource::challenge))
        .layer(from_fn_with_state(Arc::clone(&listener), host::guard))
        .merge(api_send::routes(state, Arc::clone(&listener)))
        .merge(metadata_routes(listener))
}

/// `/mcp`'s Protected Resource Metadata (root and path-suffixed forms), behind the Host guard
/// alone: a client reads it before it has a token.
fn metadata_routes(listener: Arc<ListenerPolicy>) -> Router {
    let path_suffixed = format!("{}/mcp", resource::METADATA_PATH);
    Router::new()
        .route(resource::METADATA_PATH, get(resource::metadata))
        .route(&path_suffixed, get(resource::metadata))
        .with_state(Arc::clone(&listener))
        .layer(from_fn_with_state(listener, host::guard))
}
