//! `/mcp` as an OAuth 2.1 protected resource (MCP authorization, #28 item 1): its Protected
//! Resource Metadata (RFC 9728) at `/.well-known/oauth-protected-resource` and the path-suffixed
//! `…/mcp`, naming wazap's own authorization server (the owner listener's origin), and the
//! `WWW-Authenticate` challenge of every 401 from `/mcp` and `/api/send/*`, which points there:
//! that is how a client that only speaks OAuth finds where to get a token.
//!
//! The resource's URL is the one the client reached: the `Host` it sent (already one of the
//! listener's own, [`super::host::guard`]) under `http` for a loopback name and `https` for any
//! other — OAuth 2.1 allows plain http only on loopback, so a public deployment has TLS in front.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use wazap_shared::grant::is_loopback_host;

use super::auth::carries_credential;
use super::host::request_host;
use crate::state::ListenerPolicy;

/// Where the metadata lives; the path-suffixed form (`…/mcp`) is the one the challenge names.
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The path of the protected resource itself.
const RESOURCE_PATH: &str = "/mcp";
/// The one scope: what a token may do is what the owner approved for its connection (its read
/// scope and send permission), not something a client asks for.
const SCOPES: [&str; 1] = ["mcp"];

/// RFC 9728 §2: what a client needs to find the authorization server of this resource.
#[derive(Debug, Serialize)]
struct Metadata<'a> {
    resource: String,
    authorization_servers: [&'a str; 1],
    scopes_supported: [&'static str; 1],
    bearer_methods_supported: [&'static str; 1],
    resource_name: &'static str,
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub(crate) async fn metadata(
    State(listener): State<Arc<ListenerPolicy>>,
    req: Request,
) -> Response {
    let Some(host) = request_host(&req) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let body = Metadata {
        resource: resource_url(&host),
        authorization_servers: [listener.authorization_server.as_str()],
        scopes_supported: SCOPES,
        bearer_methods_supported: ["header"],
        resource_name: "wazap",
    };
    (
        [(header::CACHE_CONTROL, "public, max-age=3600")],
        Json(body),
    )
        .into_response()
}

/// Middleware: a 401 from behind it carries `WWW-Authenticate: Bearer resource_metadata="…"`,
/// with `error="invalid_token"` when the request carried a credential (RFC 6750 §3.1: none
/// when it carried none).
pub(crate) async fn challenge(req: Request, next: Next) -> Response {
    let given = carries_credential(&req);
    let host = request_host(&req);
    let mut response = next.run(req).await;
    if response.status() != StatusCode::UNAUTHORIZED {
        return response;
    }
    let Some(host) = host else {
        return response;
    };
    let mut value = format!(
        r#"Bearer resource_metadata="{}{METADATA_PATH}{RESOURCE_PATH}""#,
        origin(&host)
    );
    if given {
        value.push_str(r#", error="invalid_token""#);
    }
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The canonical URL of `/mcp` as reached through `host` (RFC 8707: a token's audience).
pub(crate) fn resource_url(host: &str) -> String {
    format!("{}{RESOURCE_PATH}", origin(host))
}

/// `http://host` for a loopback name, `https://host` for any other, lower-cased and without the
/// scheme's default port.
fn origin(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => (name, Some(port)),
        _ => (host.as_str(), None),
    };
    let scheme = if is_loopback_host(name) {
        "http"
    } else {
        "https"
    };
    let default = if scheme == "http" { "80" } else { "443" };
    match port {
        Some(p) if p != default => format!("{scheme}://{name}:{p}"),
        _ => format!("{scheme}://{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_is_named_by_the_host_reached_https_unless_loopback() {
        for (host, url) in [
            ("localhost:8080", "http://localhost:8080/mcp"),
            ("LOCALHOST", "http://localhost/mcp"),
            ("127.0.0.1:8080", "http://127.0.0.1:8080/mcp"),
            ("127.0.0.2", "http://127.0.0.2/mcp"),
            ("[::1]:9000", "http://[::1]:9000/mcp"),
            ("[::1]", "http://[::1]/mcp"),
            ("wazap.example.com", "https://wazap.example.com/mcp"),
            ("wazap.example.com:443", "https://wazap.example.com/mcp"),
            (
                "wazap.example.com:8443",
                "https://wazap.example.com:8443/mcp",
            ),
            ("localhost:80", "http://localhost/mcp"),
            ("192.168.1.5:8080", "https://192.168.1.5:8080/mcp"),
            ("localhost.evil.com", "https://localhost.evil.com/mcp"),
        ] {
            assert_eq!(resource_url(host), url, "{host}");
        }
    }
}
