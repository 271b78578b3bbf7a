//! Grants (DESIGN §4): the worker's signing keys and the tokens they sign ([`keys`]), AI
//! connections and their read scopes ([`connections`]), send permissions ([`permission`]),
//! and the per-request check that turns a gateway-verified grant into a
//! [`crate::viewer::Viewer`] ([`authorize()`]).
//!
//! The worker is the only authority: gateways verify signatures against [`jwks`], and the worker
//! re-checks the connection on every request.

pub mod authorize;
pub mod cache;
pub mod connections;
pub mod keys;
pub mod permission;

pub use authorize::{authorize, authorize_on};
pub use cache::GrantCache;
pub use connections::{
    ConnectionRow, NewConnection, create_connection, list_connections, revoke_connection,
};
pub use keys::{ensure_signing_key, issue_token, jwks};
pub use permission::{PermissionEdit, PermissionError, set_send_permission};

/// `bytes` random bytes from the operating system, as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(hex::encode(buf))
}
