//! Bearer authentication of the MCP listener: verifies the grant JWT and puts a
//! [`VerifiedGrant`] into the request extensions, where `/mcp` takes it for the tools
//! ([`crate::mcp::CallContext`]) and `/api/send/*` extracts it. A token's audience is `wazap`,
//! or the `/mcp` URL an OAuth client asked for, which must be the one this request reached:
//! only the gateway knows which that is. Credentials in the URL are refused and never logged;
//! tokens are never logged.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;
use wazap_shared::ErrorCode;
use wazap_shared::grant::{AUDIENCE, ConnectionKind, VerifiedGrant};

use super::host::request_host;
use super::resource::resource_url;
use crate::error::ApiError;
use crate::jwks::VerifyError;
use crate::state::AppState;

/// Query parameters that would carry a credential in the URL.
const URL_CREDENTIALS: [&str; 3] = ["token", "access_token", "authorization"];

/// Middleware: 401 `unauthenticated` unless a valid bearer grant is presented.
pub(crate) async fn require_grant(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    if req.uri().query().is_some_and(has_url_credential) {
        tracing::warn!("refused a request carrying a credential in its URL");
        return unauthenticated("credentials in the URL are refused; use the Authorization header");
    }
    let token = match bearer(&req) {
        Ok(token) => token.to_owned(),
        Err(why) => return unauthenticated(why),
    };
    let claims = match state.keys.verify(&token).await {
        Ok(claims) => claims,
        Err(VerifyError::Invalid(why)) => {
            tracing::info!(reason = why, "bearer token refused");
            return unauthenticated(why);
        }
        Err(VerifyError::Unavailable) => {
            return ApiError::new(
                ErrorCode::WorkerUnavailable,
                "the worker could not be reached to verify the token",
            )
            .into_response();
        }
    };
    // A token an OAuth client got names the resource it was asked for (RFC 8707): it is good
    // only at that `/mcp`, as reached through this request's `Host` (one of the listener's own,
    // checked in front). `wazap` tokens (`connection create`) are good at every one.
    if claims.aud != AUDIENCE {
        let reached = request_host(&req).map(|host| resource_url(&host));
        if reached.as_deref() != Some(claims.aud.as_str()) {
            tracing::info!(connection.id = %claims.sub, "token for another resource refused");
            return unauthenticated("the token was issued for another resource");
        }
    }
    let loopback = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|ci| ci.0.ip().to_canonical().is_loopback());
    if claims.kind == ConnectionKind::Local && !loopback {
        tracing::info!(connection.id = %claims.sub, "local connection used from a remote client");
        return unauthenticated("this connection only works from the local machine");
    }
    req.extensions_mut().insert(VerifiedGrant {
        connection_id: claims.sub,
        revision: claims.rev,
        loopback,
        // Forwarded: the worker verifies the token again and trusts no identity header.
        token,
    });
    next.run(req).await
}

/// Whether the request carries a credential at all (an `Authorization` header, or one in the
/// URL): a refusal then says the token is invalid, not only that one is needed.
pub(crate) fn carries_credential(req: &Request) -> bool {
    req.headers().contains_key(header::AUTHORIZATION)
        || req.uri().query().is_some_and(has_url_credential)
}

/// The token of the one `Authorization: Bearer …` header (the scheme is case-insensitive, as
/// RFC 7235 has it). Two `Authorization` headers are refused, not picked from: a proxy and the
/// gateway could each read a different one.
fn bearer(req: &Request) -> Result<&str, &'static str> {
    let mut given = req.headers().get_all(header::AUTHORIZATION).iter();
    let value = given.next().ok_or("missing bearer token")?;
    if given.next().is_some() {
        return Err("more than one Authorization header");
    }
    let bearer = value.to_str().ok().and_then(|value| {
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
    });
    bearer.ok_or("missing bearer token")
}

/// Whether a query string names a credential parameter (keys compared case-insensitively,
/// after percent-decoding).
fn has_url_credential(query: &str) -> bool {
    query.split('&').any(|pair| {
        let key = pair.split_once('=').map_or(pair, |(k, _)| k);
        let key = percent_decode(key).to_ascii_lowercase();
        URL_CREDENTIALS.contains(&key.as_str())
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unauthenticated(message: &str) -> Response {
    ApiError::new(ErrorCode::Unauthenticated, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_are_detected() {
        for q in [
            "token=abc",
            "x=1&access_token=abc",
            "Authorization=Bearer%20x",
            "acc%65ss_token=abc",
            "token",
        ] {
            assert!(has_url_credential(q), "{q}");
        }
        for q in ["", "x=token", "tokens=1", "page=2&limit=3", "%zz=1"] {
            assert!(!has_url_credential(q), "{q}");
        }
    }

    #[test]
    fn bearer_header_is_parsed() {
        let req = |v: &str| {
            Request::builder()
                .header(header::AUTHORIZATION, v)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert_eq!(bearer(&req("Bearer abc.def")), Ok("abc.def"));
        assert_eq!(bearer(&req("bearer  abc ")), Ok("abc"));
        assert_eq!(bearer(&req("Basic abc")), Err("missing bearer token"));
        assert_eq!(bearer(&req("Bearer ")), Err("missing bearer token"));
        let twice = Request::builder()
            .header(header::AUTHORIZATION, "Bearer abc")
            .header(header::AUTHORIZATION, "Bearer abc")
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(bearer(&twice), Err("more than one Authorization header"));
    }
}
