//! wazap as an OAuth 2.1 authorization server (#28, `wire::oauth`): the clients that
//! registered ([`clients`]), the authorization requests waiting for the owner and the owner's
//! decision on the consent page ([`consent`]), and the token and revocation endpoints
//! ([`tokens`]). An approved client *is* an AI connection (kind `remote`, marked with its client
//! id): its access tokens are the connection's grants with the resource as audience, so the
//! read scope, send permission, revision, expiry and revocation hold as for any connection.
//!
//! Whatever a client holds (codes, refresh tokens) is stored as its SHA-256 only, and looked up
//! by it; the random part is 32 bytes from the operating system.

pub mod clients;
pub mod consent;
pub mod tokens;

use sha2::{Digest as _, Sha256};

use crate::error::{Context as _, Error};

/// A new secret for a client to hold: `prefix` and 32 random bytes in hex.
fn secret(prefix: &str) -> Result<String, Error> {
    let random = crate::grants::random_hex(32).context("oauth: secret")?;
    Ok(format!("{prefix}{random}"))
}

/// What is stored of a secret: its SHA-256.
fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}
