//! The bearer grant: JWT claims the worker signs, the one check of a token both sides run
//! ([`verify`]), and the NATS headers that carry a presented token from gateway to worker.
//!
//! The worker trusts nothing a header says about the caller: the gateway forwards the token it
//! verified, and the worker verifies it again. Only the loopback fact travels as a plain
//! header, because only the gateway sees the HTTP client (ARCHITECTURE.md, "Who the caller is").

use serde::{Deserialize, Serialize};

pub mod verify;

/// The JWT audience every wazap token carries.
pub const AUDIENCE: &str = "wazap";

/// Header: the bearer token the gateway verified, which the worker verifies again.
pub const HEADER_TOKEN: &str = "Wazap-Token";
/// Header: `1` when the HTTP client connected from a loopback address (for `local` connections).
pub const HEADER_LOOPBACK: &str = "Wazap-Loopback";

/// Where a connection may be used from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionKind {
    /// Accepted only from loopback clients.
    Local,
    /// Accepted through the public hosts.
    Remote,
}

impl ConnectionKind {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Remote => "remote",
        }
    }
}

impl std::str::FromStr for ConnectionKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(Self::Local),
            "remote" => Ok(Self::Remote),
            _ => Err("expected local or remote".into()),
        }
    }
}

/// The claims of a wazap bearer token (EdDSA JWT).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantClaims {
    /// The connection id.
    pub sub: String,
    /// The credential revision; a rotation makes older tokens stale.
    pub rev: u32,
    /// Always [`AUDIENCE`].
    pub aud: String,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// `local` or `remote`.
    pub kind: ConnectionKind,
}

/// A grant whose token was verified (by the gateway, and again by the worker), with the token,
/// which travels on to the worker. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifiedGrant {
    /// The connection id (the token's `sub`).
    pub connection_id: String,
    /// The credential revision of the token.
    pub revision: u32,
    /// Whether the HTTP client was on a loopback address.
    pub loopback: bool,
    /// The bearer token itself.
    pub token: String,
}

impl std::fmt::Debug for VerifiedGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedGrant")
            .field("connection_id", &self.connection_id)
            .field("revision", &self.revision)
            .field("loopback", &self.loopback)
            .finish_non_exhaustive()
    }
}

impl VerifiedGrant {
    /// Write what the worker needs into NATS headers: the token and the loopback fact. The
    /// connection id and revision are not sent: the worker reads them from the token.
    pub fn to_headers(&self, headers: &mut async_nats::HeaderMap) {
        headers.insert(HEADER_TOKEN, self.token.as_str());
        headers.insert(HEADER_LOOPBACK, if self.loopback { "1" } else { "0" });
    }
}

/// What a request to the worker presents: a token still to be verified, and whether the
/// gateway saw a loopback client. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Presented {
    /// The bearer token.
    pub token: String,
    /// The gateway's `Wazap-Loopback` header.
    pub loopback: bool,
}

impl std::fmt::Debug for Presented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presented")
            .field("loopback", &self.loopback)
            .finish_non_exhaustive()
    }
}

impl Presented {
    /// Read a presented token from NATS headers; `None` when there is none.
    pub fn from_headers(headers: Option<&async_nats::HeaderMap>) -> Option<Self> {
        let h = headers?;
        let token = h.get(HEADER_TOKEN)?.as_str();
        let loopback = h.get(HEADER_LOOPBACK).is_some_and(|v| v.as_str() == "1");
        (!token.is_empty()).then(|| Self {
            token: token.to_owned(),
            loopback,
        })
    }
}

/// Whether `host` (a name or an IP address, IPv6 with or without its brackets, no port) is this
/// machine's loopback: `localhost`, `127.0.0.0/8` or `::1`. The one rule wherever a host name is
/// judged local (the NATS servers a worker trusts, the scheme of `/mcp`'s resource URL, an OAuth
/// redirect URI allowed over plain http).
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let host = bare.unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_localhost_and_loopback_addresses() {
        for yes in [
            "localhost",
            "LocalHost",
            "127.0.0.1",
            "127.9.8.7",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(yes), "{yes}");
        }
        for no in [
            "localhost.evil.com",
            "app.localhost",
            "10.0.0.1",
            "0.0.0.0",
            "[::2]",
            "[::1",
            "example.com",
            "",
        ] {
            assert!(!is_loopback_host(no), "{no}");
        }
    }

    #[test]
    fn the_token_and_the_loopback_fact_travel_in_headers() {
        let g = VerifiedGrant {
            connection_id: "conn_1".into(),
            revision: 3,
            loopback: true,
            token: "a.b.c".into(),
        };
        let mut h = async_nats::HeaderMap::new();
        g.to_headers(&mut h);
        let presented = Presented::from_headers(Some(&h)).unwrap();
        assert_eq!(presented.token, "a.b.c");
        assert!(presented.loopback);
        // Identity travels only inside the signed token.
        assert_eq!(h.iter().count(), 2);
        assert_eq!(Presented::from_headers(None), None);
        assert_eq!(
            Presented::from_headers(Some(&async_nats::HeaderMap::new())),
            None
        );
        assert!(
            !format!("{g:?}{presented:?}").contains("a.b.c"),
            "Debug shows no token"
        );
    }

    #[test]
    fn claims_round_trip() {
        let c = GrantClaims {
            sub: "conn_1".into(),
            rev: 0,
            aud: AUDIENCE.into(),
            exp: 10,
            iat: 1,
            kind: ConnectionKind::Local,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"kind\":\"local\""));
        assert_eq!(serde_json::from_str::<GrantClaims>(&json).unwrap(), c);
    }
}
