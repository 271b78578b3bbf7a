//! Worker housekeeping ops: liveness for `/readyz` and the public keys gateways verify with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::message::SyncState;
use crate::bus::Rpc;
use crate::subjects::op;

/// Request of `ping` (empty).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PingRequest {}

/// Result of `ping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingResponse {
    /// The archive's identity (changes when the database is re-created).
    pub archive_id: String,
    /// The default account's session state.
    pub sync: SyncState,
    /// True when the worker can reach Postgres.
    pub database: bool,
}

/// RPC `ping`.
#[derive(Debug)]
pub struct Ping;
impl Rpc for Ping {
    const OP: &'static str = op::PING;
    const DEADLINE: Duration = Duration::from_secs(2);
    type Request = PingRequest;
    type Response = PingResponse;
}

/// Request of `jwks` (empty).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JwksRequest {}

/// One public signing key (RFC 8037 OKP, Ed25519).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Always `OKP`.
    pub kty: String,
    /// Always `Ed25519`.
    pub crv: String,
    /// The public key, base64url without padding.
    pub x: String,
    /// The key id tokens name in their header.
    pub kid: String,
    /// Always `EdDSA`.
    pub alg: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    pub use_: String,
}

/// Result of `jwks`: every key a current token may be signed with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JwksResponse {
    /// The keys.
    pub keys: Vec<Jwk>,
}

/// RPC `jwks`.
#[derive(Debug)]
pub struct Jwks;
impl Rpc for Jwks {
    const OP: &'static str = op::JWKS;
    const DEADLINE: Duration = Duration::from_secs(5);
    type Request = JwksRequest;
    type Response = JwksResponse;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwks_round_trips_with_rfc_names() {
        let r = JwksResponse {
            keys: vec![Jwk {
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: "abc".into(),
                kid: "k1".into(),
                alg: "EdDSA".into(),
                use_: "sig".into(),
            }],
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"use\":\"sig\""));
        assert_eq!(serde_json::from_str::<JwksResponse>(&json).unwrap(), r);
        let p = PingResponse {
            archive_id: "a".into(),
            sync: SyncState::Demo,
            database: true,
        };
        assert_eq!(
            serde_json::from_str::<PingResponse>(&serde_json::to_string(&p).unwrap()).unwrap(),
            p
        );
    }
}
