//! The `/mcp` endpoint behind its guards: a plain JSON-RPC `tools/call` of any tool this
//! deployment serves is answered by the direct route ([`crate::mcp::direct`], which says why),
//! every other request by rmcp's Streamable HTTP service.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::mcp::{McpServer, direct};
use crate::state::AppState;

/// rmcp's service for `/mcp`.
pub(crate) type RmcpService = StreamableHttpService<McpServer, NeverSessionManager>;

/// What the endpoint needs: rmcp's service and the tool server the direct route calls.
pub(crate) struct Endpoint {
    /// Everything the direct route does not take.
    pub(crate) rmcp: RmcpService,
    /// The same server rmcp hands each request.
    pub(crate) server: McpServer,
}

impl Endpoint {
    /// The tool server of `state` behind rmcp's stateless service (JSON responses, bodies up to
    /// the largest tool limit) and the direct route.
    pub(crate) fn new(state: &AppState) -> Self {
        let server = McpServer::new(
            state.bus.clone(),
            Arc::clone(&state.tools),
            state.sender.clone(),
        );
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)))
            // The Host/Origin guard in front does the exact checks; rmcp's would repeat them.
            .disable_allowed_hosts()
            .with_max_request_body_bytes(state.tools.max_body_limit());
        let rmcp = {
            let server = server.clone();
            StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(NeverSessionManager::default()),
                config,
            )
        };
        Self { rmcp, server }
    }
}

/// Handler of `/mcp` (any method): the direct route for a plain tool call, rmcp for the rest.
pub(crate) async fn serve(State(endpoint): State<Arc<Endpoint>>, req: Request) -> Response {
    match direct::handle(&endpoint.server, req).await {
        Ok(response) => response,
        Err(req) => to_rmcp(&endpoint, req).await,
    }
}

/// Hand `req` to rmcp. Boxed, so that [`serve`]'s own future — which a parked wait keeps for
/// up to 55 s — is sized for the direct route, not for rmcp's larger one.
pub(crate) async fn to_rmcp(endpoint: &Endpoint, req: Request) -> Response {
    Box::pin(endpoint.rmcp.handle(req)).await.map(Body::new)
}
