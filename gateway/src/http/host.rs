//! The DNS-rebinding guard in front of `/mcp` and `/api/send/*`: an exact `Host` of the listener's
//! own (the MCP listener: `WAZAP_PUBLIC_HOSTS`; the owner listener: its origin's), and no browser
//! `Origin` other than those hosts' own `http(s)://` origins. Refused values are never echoed or
//! logged.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use wazap_shared::ErrorCode;

use crate::error::ApiError;
use crate::state::ListenerPolicy;

/// The accepted `Host` and `Origin` values, lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPolicy {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl HostPolicy {
    /// Accept each entry of `public_hosts` exactly, and each entry without a port also as
    /// `entry:<bound_port>`.
    pub(crate) fn new(public_hosts: &[String], bound_port: u16) -> Self {
        let mut hosts: Vec<String> = Vec::new();
        for entry in public_hosts {
            let entry = entry.to_ascii_lowercase();
            let has_port = http::uri::Authority::try_from(entry.as_str())
                .ok()
                .and_then(|a| a.port_u16())
                .is_some();
            let with_port = (!has_port).then(|| format!("{entry}:{bound_port}"));
            for h in std::iter::once(entry).chain(with_port) {
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
        }
        let origins = hosts
            .iter()
            .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
            .collect();
        Self { hosts, origins }
    }

    /// The accepted `Host` values (lower-cased, each entry with and without the bound port).
    pub(crate) fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether `host` (a `Host` header value) is accepted.
    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    /// Whether a browser `Origin` value is accepted.
    pub(crate) fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        self.origins.contains(&origin)
    }
}

/// Middleware: refuse a `Host` or `Origin` that is not allowed with 403.
pub(crate) async fn guard(
    State(listener): State<Arc<ListenerPolicy>>,
    req: Request,
    next: Next,
) -> Response {
    let host = request_host(&req);
    if !host.is_some_and(|h| listener.hosts.host_allowed(&h)) {
        tracing::warn!("refused a request with a Host that is not in WAZAP_PUBLIC_HOSTS");
        return refused("the Host header is not one of this server's public hosts");
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| listener.hosts.origin_allowed(o));
        if !ok {
            tracing::warn!("refused a cross-origin browser request");
            return refused("requests from this browser origin are not allowed");
        }
    }
    next.run(req).await
}

/// The request's `Host` (HTTP/1.1), else its URI's authority (HTTP/2), as sent: what [`guard`]
/// checks, and behind it the name this server was reached by.
pub(crate) fn request_host(req: &Request) -> Option<String> {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
}

fn refused(message: &str) -> Response {
    ApiError::new(ErrorCode::InvalidArgument, message)
        .with_status(StatusCode::FORBIDDEN)
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(hosts: &[&str]) -> HostPolicy {
        let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        HostPolicy::new(&hosts, 8080)
    }

    #[test]
    fn hosts_match_exactly_with_the_bound_port() {
        let p = policy(&["localhost", "127.0.0.1", "wazap.example.com:443"]);
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:8080",
            "127.0.0.1:8080",
            "wazap.example.com:443",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in [
            "localhost:8081",
            "evil.example.com",
            "localhost.evil.com:8080",
            "wazap.example.com",
            "127.0.0.1:80",
            "",
        ] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins_are_the_hosts_own() {
        let p = policy(&["localhost"]);
        assert!(p.origin_allowed("http://localhost:8080"));
        assert!(p.origin_allowed("https://localhost"));
        assert!(!p.origin_allowed("http://evil.example.com"));
        assert!(!p.origin_allowed("null"));
        assert!(!p.origin_allowed("http://localhost:9999"));
    }
}
