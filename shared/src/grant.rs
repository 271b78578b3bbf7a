//! The bearer grant: JWT claims the worker signs and gateways verify, and the NATS headers that
//! carry a verified grant from gateway to worker.

use serde::{Deserialize, Serialize};

/// The JWT audience every wazap token carries.
pub const AUDIENCE: &str = "wazap";

/// Header: the verified connection id.
pub const HEADER_CONNECTION: &str = "Wazap-Connection";
/// Header: the token's credential revision.
pub const HEADER_REVISION: &str = "Wazap-Revision";
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

/// A grant the gateway verified, as the worker receives it in NATS headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedGrant {
    /// The connection id.
    pub connection_id: String,
    /// The credential revision of the token.
    pub revision: u32,
    /// Whether the HTTP client was on a loopback address.
    pub loopback: bool,
}

impl VerifiedGrant {
    /// Write this grant into NATS headers.
    pub fn to_headers(&self, headers: &mut async_nats::HeaderMap) {
        headers.insert(HEADER_CONNECTION, self.connection_id.as_str());
        headers.insert(HEADER_REVISION, self.revision.to_string().as_str());
        headers.insert(HEADER_LOOPBACK, if self.loopback { "1" } else { "0" });
    }

    /// Read a grant from NATS headers; `None` when absent or malformed.
    pub fn from_headers(headers: Option<&async_nats::HeaderMap>) -> Option<Self> {
        let h = headers?;
        let connection_id = h.get(HEADER_CONNECTION)?.as_str().to_owned();
        let revision = h.get(HEADER_REVISION)?.as_str().parse().ok()?;
        let loopback = h
            .get(HEADER_LOOPBACK)
            .map(|v| v.as_str() == "1")
            .unwrap_or(false);
        (!connection_id.is_empty()).then_some(Self {
            connection_id,
            revision,
            loopback,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_round_trips_through_headers() {
        let g = VerifiedGrant {
            connection_id: "conn_1".into(),
            revision: 3,
            loopback: true,
        };
        let mut h = async_nats::HeaderMap::new();
        g.to_headers(&mut h);
        assert_eq!(VerifiedGrant::from_headers(Some(&h)), Some(g));
        assert_eq!(VerifiedGrant::from_headers(None), None);
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
