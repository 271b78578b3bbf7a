//! The owner listener (DESIGN §6): the owner dashboard (server-rendered pages with a little JS) and
//! the owner API, plus `/mcp` and `/api/send/*` exactly as on the MCP listener but under the owner
//! listener's own Host rule (the host:port of `WAZAP_OWNER_ORIGIN`).
//!
//! The owner's state (password, sessions, CSRF tokens, connections, policy) lives in the worker;
//! this module only carries the session cookie and the `X-CSRF-Token` header to it
//! ([`OwnerState::call`]) after [`guard`] has checked Host, Origin, `Sec-Fetch-Site`, Content-Type
//! and the absence of bearer tokens.

mod guard;
mod html;
mod routes;

use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wazap_shared::bus::Rpc;
use wazap_shared::wire::owner::{OwnerAnswer, OwnerCall};
use wazap_shared::{ErrorCode, RpcError};

use crate::bus::Bus;
use crate::config::{Config, TrustedProxies};
use crate::error::ApiError;
use crate::http::resource::resource_url;
use crate::state::{AppState, ListenerPolicy};

/// The header a page's script sends with every write.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long the browser keeps the session cookie (the worker ends it earlier when idle).
const COOKIE_MAX_AGE_SECS: u32 = 8 * 3600;

/// What the owner routes share.
#[derive(Debug)]
pub(crate) struct OwnerState {
    /// The way to the worker.
    bus: Bus,
    /// `WAZAP_OWNER_ORIGIN`, exact and lower-cased: the only `Origin` a write may carry.
    origin: String,
    /// Its host[:port]: the only `Host` accepted.
    host: String,
    /// Whether the origin is https (cookies get `Secure` and the `__Host-` prefix).
    secure: bool,
    /// `WAZAP_TRUSTED_PROXIES`: whose `X-Forwarded-For` names a login's source.
    trusted_proxies: TrustedProxies,
    /// The `/mcp` URLs of this deployment, one per accepted `Host` of either listener: what an
    /// authorization request's `resource` may name (only the gateway knows its hosts).
    resources: Vec<String>,
    /// The fetcher of OAuth client metadata documents (`oauth::document`).
    documents: Arc<crate::oauth::document::Documents>,
}

/// The owner listener's app: the owner routes, the OAuth authorization server's public
/// endpoints ([`crate::oauth`], behind B's Host rule alone), and `/mcp` and `/api/send/*` on the
/// process's `state` under B's own Host rule and permits ([`ListenerPolicy`]). `mcp` is the MCP
/// listener's policy: its hosts name `/mcp` URLs a token may be asked for.
pub(crate) fn owner_listener(
    config: &Config,
    state: Arc<AppState>,
    bound_port: u16,
    mcp: &ListenerPolicy,
) -> Router {
    let origin = config.owner_origin.clone();
    let (scheme, host) = origin.split_once("://").unwrap_or(("http", &origin));
    let listener = ListenerPolicy::new(config, &[host.to_owned()], bound_port);
    let owner = Arc::new(OwnerState {
        bus: state.bus.clone(),
        host: host.to_owned(),
        secure: scheme == "https",
        origin: origin.clone(),
        trusted_proxies: config.trusted_proxies.clone(),
        resources: resources(mcp, &listener),
        documents: crate::oauth::document::Documents::new(
            config.oauth_private_documents,
            &config.oauth_document_roots,
        ),
    });
    let oauth = crate::oauth::routes(&origin, state.bus.clone(), Arc::clone(&listener));
    routes::router(owner)
        .merge(oauth)
        .merge(crate::http::mcp_routes(state, listener))
}

/// The canonical `/mcp` URL of every `Host` either listener accepts (RFC 8707 resources).
fn resources(mcp: &ListenerPolicy, owner: &ListenerPolicy) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for host in mcp.hosts.hosts().iter().chain(owner.hosts.hosts()) {
        let url = resource_url(host);
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

impl OwnerState {
    /// The session cookie's name.
    fn cookie_name(&self) -> &'static str {
        cookie_name(self.secure)
    }

    /// The session id from the request's cookie, if any.
    fn session(&self, headers: &HeaderMap) -> Option<String> {
        session_cookie(headers, self.cookie_name())
    }

    /// `Set-Cookie` for a new session id.
    fn set_cookie(&self, session: &str) -> HeaderValue {
        cookie(self.secure, session, COOKIE_MAX_AGE_SECS)
    }

    /// `Set-Cookie` that removes the session cookie.
    fn clear_cookie(&self) -> HeaderValue {
        cookie(self.secure, "", 0)
    }

    /// Call owner op `R` with the request's session and CSRF header.
    async fn call<R, B, T>(&self, headers: &HeaderMap, body: B) -> Result<T, OwnerError>
    where
        R: Rpc<Request = OwnerCall<B>, Response = OwnerAnswer<T>>,
        B: Serialize + DeserializeOwned + Send + Sync,
        T: Serialize + DeserializeOwned + Send + Sync,
    {
        let call = OwnerCall {
            session: self.session(headers),
            csrf: headers
                .get(CSRF_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body,
        };
        match self.bus.call::<R>(None, &call, None).await? {
            OwnerAnswer::Done(value) => Ok(value),
            OwnerAnswer::CsrfRejected => Err(OwnerError::Csrf),
            OwnerAnswer::Stale => Err(OwnerError::Stale),
        }
    }
}

/// `__Host-` (no Domain, Path=/, Secure: sibling hosts cannot set it) behind https.
fn cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-wazap_owner"
    } else {
        "wazap_owner"
    }
}

/// The `Set-Cookie` value for `value`.
fn cookie(secure: bool, value: &str, max_age: u32) -> HeaderValue {
    let flag = if secure { "; Secure" } else { "" };
    HeaderValue::try_from(format!(
        "{}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{flag}",
        cookie_name(secure)
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The value of cookie `name` in `headers` (ids only ever come from cookies, never URLs).
fn session_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// Why an owner request failed.
#[derive(Debug)]
pub(crate) enum OwnerError {
    /// The worker's answer (e.g. `unauthenticated` without a session, `rate_limited` logins).
    Rpc(RpcError),
    /// A write without the session's CSRF token: HTTP 403.
    Csrf,
    /// A revision the editor saw is no longer current, nothing changed: HTTP 409.
    Stale,
}

impl From<RpcError> for OwnerError {
    fn from(e: RpcError) -> Self {
        Self::Rpc(e)
    }
}

impl IntoResponse for OwnerError {
    /// CSRF and stale answers use `invalid_argument` with their own status (DESIGN §7 has no
    /// other code for them).
    fn into_response(self) -> Response {
        match self {
            Self::Rpc(e) => ApiError::from(e).into_response(),
            Self::Csrf => ApiError::new(
                ErrorCode::InvalidArgument,
                "x-csrf-token: missing or not this session's",
            )
            .with_status(StatusCode::FORBIDDEN)
            .into_response(),
            Self::Stale => ApiError::new(
                ErrorCode::InvalidArgument,
                "revision: changed elsewhere — reopen and edit again",
            )
            .with_status(StatusCode::CONFLICT)
            .into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resources_are_every_accepted_hosts_mcp_url_once() {
        let config =
            Config::from_source(&std::collections::HashMap::<&str, &str>::new()).expect("config");
        let hosts = |h: &[&str]| h.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>();
        let mcp = ListenerPolicy::new(&config, &hosts(&["localhost", "wazap.example.com"]), 8080);
        let owner =
            ListenerPolicy::new(&config, &hosts(&["localhost:8080", "127.0.0.1:8081"]), 8081);
        assert_eq!(
            resources(&mcp, &owner),
            [
                "http://localhost/mcp",
                "http://localhost:8080/mcp",
                "https://wazap.example.com/mcp",
                "https://wazap.example.com:8080/mcp",
                "http://127.0.0.1:8081/mcp",
            ]
        );
    }

    #[test]
    fn cookies_are_host_only_and_secure_behind_https() {
        let https = cookie(true, "abc", 60);
        assert_eq!(
            https,
            "__Host-wazap_owner=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=60; Secure"
        );
        let http = cookie(false, "abc", 0);
        assert_eq!(
            http,
            "wazap_owner=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("other=1; __Host-wazap_owner=s1; wazap_owner=s2"),
        );
        assert_eq!(session_cookie(&h, cookie_name(true)).as_deref(), Some("s1"));
        assert_eq!(
            session_cookie(&h, cookie_name(false)).as_deref(),
            Some("s2")
        );
        assert_eq!(session_cookie(&HeaderMap::new(), "wazap_owner"), None);
    }
}
