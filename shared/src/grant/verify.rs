//! The one check of a wazap bearer token, run by gateways (to refuse early) and by the worker
//! (which decides): an EdDSA JWT signed by a published key, audience `wazap` (a token of
//! `connection create`) or a resource URL (one an OAuth client got: [`crate::oauth`]), with
//! `exp` and `sub`, `exp` not passed and `nbf` (when present) reached, both within
//! [`LEEWAY_SECS`]. Which resource a request reached only the gateway knows: it compares.
//! Each refusal has one wording, safe to log and to send.
//!
//! Where the keys come from differs (a gateway fetches the JWKS over NATS, the worker reads
//! its own table), so the check is in steps: [`key_id`] names the key, [`decode`] verifies
//! with it. [`Remembered`] keeps tokens already verified, since Ed25519 verification of the
//! token every request carries was a visible share of the CPU on reads.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::{AUDIENCE, GrantClaims};
use crate::wire::system::Jwk;

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 5;

/// A refused token: why, in words safe to log and to send.
pub type Refusal = &'static str;

/// The token has expired.
pub const EXPIRED: Refusal = "the token has expired";
/// The token's audience is neither `wazap` nor a resource URL, or a claim is missing.
pub const NOT_A_GRANT: Refusal = "the token is not a wazap grant";
/// The token's signing key is not published.
pub const UNKNOWN_KEY: Refusal = "the token's signing key is unknown";

static VALIDATION: LazyLock<Validation> = LazyLock::new(|| {
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.leeway = LEEWAY_SECS;
    // Checked in `decode`: `wazap`, or a resource URL, which the library cannot express.
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp", "aud", "sub"]);
    // A token whose `nbf` is still ahead is refused like an expired one (within the leeway).
    validation.validate_nbf = true;
    validation
});

/// The key id a token names in its header, once the header says EdDSA.
pub fn key_id(token: &str) -> Result<String, Refusal> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| "the token is malformed")?;
    if header.alg != Algorithm::EdDSA {
        return Err("the token is not signed with EdDSA");
    }
    header.kid.ok_or("the token names no signing key")
}

/// Verify `token` with `key` (the key its [`key_id`] names): signature, audience, expiry,
/// `nbf`, required claims.
pub fn decode(token: &str, key: &DecodingKey) -> Result<GrantClaims, Refusal> {
    let claims = jsonwebtoken::decode::<GrantClaims>(token, key, &VALIDATION)
        .map(|data| data.claims)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => EXPIRED,
                K::ImmatureSignature => "the token is not valid yet",
                K::InvalidAudience | K::MissingRequiredClaim(_) => NOT_A_GRANT,
                K::InvalidSignature => "the token's signature is invalid",
                _ => "the token is malformed",
            }
        })?;
    if claims.aud != AUDIENCE && !crate::oauth::is_resource_audience(&claims.aud) {
        return Err(NOT_A_GRANT);
    }
    Ok(claims)
}

/// The verification key of one JWK, if it is a well-formed Ed25519 signing key.
pub fn decoding_key(jwk: &Jwk) -> Option<DecodingKey> {
    let usable = jwk.kty == "OKP"
        && jwk.crv == "Ed25519"
        && (jwk.alg.is_empty() || jwk.alg == "EdDSA")
        && (jwk.use_.is_empty() || jwk.use_ == "sig");
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwk.x.trim_end_matches('='))
        .ok();
    match x {
        Some(bytes) if usable && bytes.len() == 32 => Some(DecodingKey::from_ed_der(&bytes)),
        _ => {
            tracing::warn!(kid = %jwk.kid, "ignoring an unusable JWKS key");
            None
        }
    }
}

/// Tokens whose signature was verified, with their key id and claims, up to a bound (the
/// memory is cleared when full). A remembered token still has its expiry checked and its key
/// still published.
#[derive(Debug)]
pub struct Remembered {
    tokens: RwLock<HashMap<String, (String, GrantClaims)>>,
    max: usize,
}

impl Remembered {
    /// An empty memory of at most `max` tokens.
    pub fn new(max: usize) -> Self {
        Self {
            tokens: RwLock::new(HashMap::new()),
            max,
        }
    }

    /// The outcome for a remembered `token` at `now` (seconds since the epoch), or `None`
    /// when it must be verified in full: not remembered, or its key is no longer published
    /// (`has_key` says no; then it is forgotten).
    pub fn check(
        &self,
        token: &str,
        now: i64,
        has_key: impl Fn(&str) -> bool,
    ) -> Option<Result<GrantClaims, Refusal>> {
        let (kid, claims) = self.tokens.read().ok()?.get(token).cloned()?;
        if !has_key(&kid) {
            if let Ok(mut tokens) = self.tokens.write() {
                tokens.remove(token);
            }
            return None;
        }
        // As jsonwebtoken's check: expired once `exp` is more than the leeway in the past.
        if claims.exp < now - LEEWAY_SECS as i64 {
            return Some(Err(EXPIRED));
        }
        Some(Ok(claims))
    }

    /// Remember a token whose signature, audience and expiry were just verified.
    pub fn remember(&self, token: &str, kid: String, claims: &GrantClaims) {
        if let Ok(mut tokens) = self.tokens.write() {
            if tokens.len() >= self.max {
                tokens.clear();
            }
            tokens.insert(token.to_owned(), (kid, claims.clone()));
        }
    }

    /// How many tokens are remembered.
    pub fn len(&self) -> usize {
        self.tokens.read().map_or(0, |t| t.len())
    }

    /// Whether no token is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::ConnectionKind;

    fn jwk(x: &str) -> Jwk {
        Jwk {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            x: x.into(),
            kid: "k".into(),
            alg: "EdDSA".into(),
            use_: "sig".into(),
        }
    }

    fn claims(exp: i64) -> GrantClaims {
        GrantClaims {
            sub: "conn_a".into(),
            rev: 0,
            aud: AUDIENCE.into(),
            exp,
            iat: exp - 3600,
            kind: ConnectionKind::Remote,
        }
    }

    #[test]
    fn a_remembered_token_still_expires_and_needs_its_key() {
        let v = Remembered::new(8);
        let now = 1_000_000;
        assert!(v.check("t", now, |_| true).is_none(), "not remembered yet");
        v.remember("t", "k1".into(), &claims(now + 60));
        assert_eq!(v.check("t", now, |_| true), Some(Ok(claims(now + 60))));
        // Within the leeway, then past it.
        assert!(matches!(v.check("t", now + 64, |_| true), Some(Ok(_))));
        assert_eq!(v.check("t", now + 66, |_| true), Some(Err(EXPIRED)));
        // A key no longer published sends the token back to full verification, for good.
        assert!(v.check("t", now, |kid| kid != "k1").is_none());
        assert!(v.check("t", now, |_| true).is_none());
    }

    #[test]
    fn the_memory_of_tokens_is_bounded() {
        let max = 16;
        let v = Remembered::new(max);
        for i in 0..=max {
            v.remember(&format!("t{i}"), "k".into(), &claims(i64::MAX));
        }
        assert!(v.len() <= max);
        assert!(v.check(&format!("t{max}"), 0, |_| true).is_some());
    }

    #[test]
    fn only_well_formed_ed25519_keys_are_used() {
        let good = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32]);
        assert!(decoding_key(&jwk(&good)).is_some());
        let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 31]);
        assert!(decoding_key(&jwk(&short)).is_none());
        assert!(decoding_key(&jwk("!!not base64!!")).is_none());
        let mut rsa = jwk(&good);
        rsa.kty = "RSA".into();
        assert!(decoding_key(&rsa).is_none());
    }

    #[test]
    fn headers_other_than_eddsa_with_a_kid_are_refused() {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
        let token = |header: &str| format!("{}.e30.sig", B64.encode(header));
        assert_eq!(
            key_id(&token(r#"{"alg":"EdDSA","kid":"k1"}"#)),
            Ok("k1".into())
        );
        assert_eq!(
            key_id(&token(r#"{"alg":"HS256","kid":"k1"}"#)),
            Err("the token is not signed with EdDSA")
        );
        assert_eq!(
            key_id(&token(r#"{"alg":"EdDSA"}"#)),
            Err("the token names no signing key")
        );
        assert_eq!(key_id("not a token"), Err("the token is malformed"));
    }
}
