//! Login and logout. A login always starts a new session (the worker deletes the one the
//! browser came with), so a cookie planted before login is worthless; logout deletes the
//! session server-side and clears the cookie.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use wazap_shared::wire::owner::{Empty, LoginRequest, OwnerLogin, OwnerLogout};
use wazap_shared::{ErrorCode, RpcError};

use super::{OwnerError, json};
use crate::config::TrustedProxies;
use crate::owner::OwnerState;
use crate::owner::html::page as frame;

/// `GET /`: the connections page (which sends a stranger to `/login`).
pub(super) async fn home() -> Redirect {
    Redirect::to("/connections")
}

/// `GET /login`.
pub(super) async fn page() -> Html<String> {
    frame(
        "Log in",
        "/login",
        None,
        r#"<form id="login-form" class="card narrow">
<label for="password">Owner password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required minlength="8" autofocus>
<button type="submit">Log in</button>
</form>"#,
    )
}

/// The largest login body: the worker's longest password (1,024 bytes) fits even written
/// entirely as `\uXXXX` escapes; anything larger is answered 413 `request_too_large` before it
/// reaches the worker, let alone a hash.
pub(super) const BODY_LIMIT: usize = 8 * 1024;

/// What the login page sends. The source address is never taken from the body, and from a header
/// only as [`source`] allows.
#[derive(Debug, Deserialize)]
struct LoginBody {
    password: String,
}

/// `POST /api/login` `{"password"}` → `{"csrf", "expires_at"}` and the session cookie.
///
/// The worker throttles failures per source: the peer address of this connection, as the
/// socket saw it, unless that peer is one of `WAZAP_TRUSTED_PROXIES` ([`source`]). Without that
/// setting, behind a reverse proxy every login comes from the proxy's address and counts as one
/// source (still bounded, by the per-source and the global locks).
pub(super) async fn login(
    State(state): State<Arc<OwnerState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OwnerError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            tracing::warn!("owner login refused: body over the limit");
            OwnerError::Rpc(RpcError::new(
                ErrorCode::RequestTooLarge,
                "the login body is too large",
            ))
        } else {
            OwnerError::Rpc(RpcError::invalid("body", "could not be read"))
        }
    })?;
    let LoginBody { password } = json(&body)?;
    let req = LoginRequest {
        password,
        peer: peer.map(|Extension(ConnectInfo(addr))| {
            source(addr.ip(), &headers, &state.trusted_proxies)
        }),
    };
    let mut info = state.call::<OwnerLogin, _, _>(&headers, req).await?;
    let session = info.session.take().unwrap_or_default();
    let mut response = Json(info).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, state.set_cookie(&session));
    Ok(response)
}

/// The source a login is throttled by: the connection's `peer`; when that is a trusted proxy,
/// the right-most `X-Forwarded-For` address that is not itself a trusted proxy (each proxy
/// appends the address it was reached from, so everything left of the first untrusted entry,
/// counting from the right, is the client's own say). An entry that is not a bare IP address
/// stops the walk at the proxy that passed it on; with no untrusted entry, the left-most trusted
/// hop is the source. `Forwarded` and `X-Real-IP` are never read.
fn source(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> IpAddr {
    let mut source = peer.to_canonical();
    if !trusted.contains(source) {
        return source;
    }
    let mut hops: Vec<Option<IpAddr>> = Vec::new();
    for value in headers.get_all("x-forwarded-for") {
        match value.to_str() {
            Ok(list) => hops.extend(list.split(',').map(|hop| hop.trim().parse::<IpAddr>().ok())),
            Err(_) => hops.push(None),
        }
    }
    for hop in hops.into_iter().rev() {
        let Some(hop) = hop.map(|ip| ip.to_canonical()) else {
            break;
        };
        if !trusted.contains(hop) {
            return hop;
        }
        source = hop;
    }
    source
}

/// `POST /api/logout` → `{}`; the cookie is cleared.
pub(super) async fn logout(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
) -> Result<Response, OwnerError> {
    state.call::<OwnerLogout, _, _>(&headers, Empty {}).await?;
    let mut response = Json(Empty {}).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, state.clear_cookie());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn proxies(list: &'static str) -> TrustedProxies {
        let env: HashMap<&str, &str> = [(crate::config::TRUSTED_PROXIES, list)].into();
        crate::config::Config::from_source(&env)
            .expect("config")
            .trusted_proxies
    }

    fn from(peer: &str, forwarded: &[&str], trusted: &TrustedProxies) -> String {
        let mut headers = HeaderMap::new();
        for value in forwarded {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers.insert("x-real-ip", "198.51.100.66".parse().unwrap());
        headers.insert("forwarded", "for=198.51.100.77".parse().unwrap());
        source(peer.parse().unwrap(), &headers, trusted).to_string()
    }

    #[test]
    fn without_trusted_proxies_the_source_is_the_peer() {
        let none = TrustedProxies::default();
        assert_eq!(from("10.0.0.2", &["203.0.113.5"], &none), "10.0.0.2");
        // A peer that is not trusted is the source whatever it forwards.
        let some = proxies("10.0.0.2");
        assert_eq!(from("10.0.0.3", &["203.0.113.5"], &some), "10.0.0.3");
        assert_eq!(from("::ffff:10.0.0.3", &[], &some), "10.0.0.3");
    }

    #[test]
    fn behind_trusted_proxies_the_source_is_the_right_most_untrusted_hop() {
        let p = proxies("10.0.0.0/8,fd00::/8");
        // The client wrote its own X-Forwarded-For; the proxy appended what it saw.
        assert_eq!(
            from("10.0.0.2", &["192.0.2.1, 203.0.113.5"], &p),
            "203.0.113.5"
        );
        // Two proxies, in two header lines; IPv4 mapped into IPv6 at the socket.
        assert_eq!(
            from(
                "::ffff:10.0.0.2",
                &["192.0.2.1, 203.0.113.5", "10.9.9.9"],
                &p
            ),
            "203.0.113.5"
        );
        assert_eq!(
            from("fd00::2", &["2001:db8::7", "fd00::9"], &p),
            "2001:db8::7"
        );
        // No header, or only trusted hops: the furthest trusted hop.
        assert_eq!(from("10.0.0.2", &[], &p), "10.0.0.2");
        assert_eq!(from("10.0.0.2", &["10.1.1.1, 10.2.2.2"], &p), "10.1.1.1");
        // Garbage stops the walk at the proxy that passed it on.
        assert_eq!(from("10.0.0.2", &["203.0.113.5, unknown"], &p), "10.0.0.2");
        assert_eq!(
            from(
                "10.0.0.2",
                &["203.0.113.5, 198.51.100.1:4711, 10.3.3.3"],
                &p
            ),
            "10.3.3.3"
        );
        assert_eq!(from("10.0.0.2", &["203.0.113.5,,"], &p), "10.0.0.2");
    }
}
