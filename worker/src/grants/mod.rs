//! Grants (DESIGN §4): the worker's signing keys and the tokens they sign ([`keys`]), AI
//! connections and their read scopes ([`connections`]), send permissions ([`permission`]),
//! the check of the token every request presents ([`verify`]), and the per-request check that
//! turns a verified grant into a [`crate::viewer::Viewer`] ([`authorize()`]).
//!
//! The worker is the only authority: gateways pre-check signatures against [`jwks`]; the worker
//! verifies the forwarded token itself and re-checks the connection on every request.

pub mod authorize;
pub mod cache;
pub mod connections;
pub mod keys;
pub mod permission;
pub mod verify;

pub use authorize::{authorize, authorize_on};
pub use cache::GrantCache;
pub use connections::{
    ConnectionRow, NewConnection, create_connection, list_connections, revoke_connection,
};
pub use keys::{ensure_signing_key, issue_token, jwks};
pub use permission::{PermissionEdit, PermissionError, set_send_permission};
pub use verify::Tokens;

/// `bytes` random bytes from the operating system, as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(hex::encode(buf))
}
