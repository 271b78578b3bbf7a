//! The adapter's upstream: rmcp's Streamable HTTP client to a wazap `/mcp` URL with the bearer
//! token, and what its failures mean to an agent (the gateway's §7 codes).

use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use wazap_shared::{ErrorCode, RpcError};

use super::config::Config;

/// A connected upstream.
pub(crate) type Upstream = RunningService<RoleClient, ()>;

/// The transport error of rmcp's reqwest client.
type HttpError = StreamableHttpError<rmcp_reqwest::Error>;

/// Why the upstream could not be reached at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The server answered 401/403: the token is wrong, expired, revoked or rotated.
    #[error("{url} refused WAZAP_TOKEN (wrong, expired, revoked or rotated token)")]
    Refused {
        /// The upstream URL.
        url: String,
    },
    /// Anything else (no server there, not an MCP server, TLS, protocol).
    #[error("cannot reach the wazap server at {url}: {reason}")]
    Unreachable {
        /// The upstream URL.
        url: String,
        /// rmcp's description (it never holds the token, which travels in a header).
        reason: String,
    },
}

/// Connect to the upstream: `server/discover` (protocol 2026-07-28, stateless), falling back
/// to the legacy `initialize` handshake for older servers.
pub(crate) async fn connect(config: &Config) -> Result<Upstream, ConnectError> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(config.url.clone())
            .auth_header(config.token.clone()),
    );
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    ().serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|e| startup_error(&config.url, &e))
}

fn startup_error(url: &str, e: &ClientInitializeError) -> ConnectError {
    if e.auth_challenge().is_some() {
        return ConnectError::Refused {
            url: url.to_owned(),
        };
    }
    if let ClientInitializeError::TransportError { error, .. } = e
        && let Some(HttpError::InsufficientScope(_) | HttpError::AuthRequired(_)) =
            error.error.downcast_ref::<HttpError>()
    {
        return ConnectError::Refused {
            url: url.to_owned(),
        };
    }
    ConnectError::Unreachable {
        url: url.to_owned(),
        reason: root_cause(e),
    }
}

/// The innermost cause ("Connection refused (os error 111)"), which is what a user can act on;
/// rmcp's outer layers name its internal types.
fn root_cause(e: &ClientInitializeError) -> String {
    let mut cause: &dyn std::error::Error = e;
    if let ClientInitializeError::TransportError { error, .. } = e {
        cause = match error.error.downcast_ref::<HttpError>() {
            // rmcp does not chain the HTTP client's error as a source.
            Some(HttpError::Client(client)) => client,
            _ => error.error.as_ref(),
        };
    }
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// What an agent is told when a forwarded request failed below MCP (HTTP status, connection):
/// the gateway's own code where the status carries one. `None` for a JSON-RPC error, which is
/// passed through as it came.
pub(crate) fn call_error(e: &ServiceError) -> Option<RpcError> {
    let transport = match e {
        ServiceError::McpError(_) => return None,
        ServiceError::Timeout { .. } => return Some(deadline_exceeded()),
        ServiceError::TransportSend(t) => t,
        _ => return Some(unreachable()),
    };
    if e.is_authorization_required() {
        return Some(RpcError::new(
            ErrorCode::Unauthenticated,
            "the wazap server refused the token (expired, revoked or rotated)",
        ));
    }
    let status = match transport.error.downcast_ref::<HttpError>() {
        Some(HttpError::HttpStatus(s)) => s.status,
        Some(HttpError::AuthRequired(_) | HttpError::InsufficientScope(_)) => 401,
        _ => return Some(unreachable()),
    };
    Some(match status {
        401 | 403 => RpcError::new(
            ErrorCode::Unauthenticated,
            "the wazap server refused the token",
        ),
        408 => body_too_slow(),
        429 => RpcError::new(
            ErrorCode::Busy,
            "the wazap server is busy with other requests; retry in a moment",
        ),
        503 => RpcError::new(
            ErrorCode::WorkerUnavailable,
            "the wazap worker is unavailable",
        ),
        504 => deadline_exceeded(),
        _ => RpcError::new(
            ErrorCode::Internal,
            format!("the wazap server answered HTTP {status}"),
        ),
    })
}

/// What a call that failed below MCP tells the agent, given whether its tool may transmit. A
/// send cut off by a deadline, a lost connection or a server error may have gone out: it
/// answers `send_outcome_unknown` (what to do next, in the shared wording). Refusals that
/// happen before the gateway takes the call — a bad token, the concurrency limit — stay as
/// they are, and so does everything for the tools that send nothing.
pub(crate) fn for_tool(error: RpcError, may_transmit: bool) -> RpcError {
    let refused = matches!(error.code, ErrorCode::Unauthenticated | ErrorCode::Busy)
        || error == body_too_slow();
    if may_transmit && !refused {
        RpcError::send_outcome_unknown()
    } else {
        error
    }
}

/// The gateway's 408: it stopped waiting for the request body and never took the call.
fn body_too_slow() -> RpcError {
    RpcError::new(
        ErrorCode::DeadlineExceeded,
        "the wazap server stopped waiting for the request body, so nothing was sent; retry",
    )
}

/// The adapter's own deadline passed.
pub(crate) fn deadline_exceeded() -> RpcError {
    RpcError::new(
        ErrorCode::DeadlineExceeded,
        "the wazap server did not answer within the deadline",
    )
}

fn unreachable() -> RpcError {
    RpcError::new(
        ErrorCode::WorkerUnavailable,
        "the wazap server could not be reached",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_cut_off_below_mcp_is_outcome_unknown() {
        for cut in [
            deadline_exceeded(),
            unreachable(),
            RpcError::new(ErrorCode::Internal, "x"),
        ] {
            assert_eq!(
                for_tool(cut.clone(), true),
                RpcError::send_outcome_unknown()
            );
            assert_eq!(for_tool(cut.clone(), false), cut, "a read keeps its error");
        }
        // Refused before the gateway took it: nothing was sent, and the agent is told why.
        for refused in [ErrorCode::Unauthenticated, ErrorCode::Busy] {
            let e = RpcError::new(refused, "refused");
            assert_eq!(for_tool(e.clone(), true), e);
        }
        assert_eq!(for_tool(body_too_slow(), true), body_too_slow());
    }

    #[test]
    fn the_send_tools_are_the_ones_that_may_transmit() {
        let transmitting: Vec<_> = crate::tools::KNOWN
            .iter()
            .filter(|t| t.may_transmit)
            .map(|t| t.name)
            .collect();
        assert_eq!(
            transmitting,
            ["send_message", "send_media", "send_voice_note"]
        );
    }
}
