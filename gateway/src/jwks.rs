//! The worker's public signing keys (JWKS over NATS op `jwks`) and bearer-token verification.
//!
//! Keys are fetched at start, refreshed every 60 s in the background, and re-fetched when a
//! token names an unknown `kid` (at most once per [`MIN_REFETCH_INTERVAL`], one fetch at a
//! time, with a short deadline) so a missing worker never makes requests wait.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio_util::sync::CancellationToken;
use wazap_shared::RpcError;
use wazap_shared::grant::{AUDIENCE, GrantClaims};
use wazap_shared::wire::system::{Jwk, Jwks, JwksRequest};

use crate::bus::Bus;

/// How often the background task refreshes the keys.
pub(crate) const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// The least time between two fetches caused by unknown `kid`s.
pub(crate) const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(1);
/// Deadline of a fetch made while a request waits.
const ON_DEMAND_DEADLINE: Duration = Duration::from_millis(800);
/// Clock skew tolerated on `exp`, in seconds.
const LEEWAY_SECS: u64 = 5;
/// Verified tokens remembered at most (a gateway serves a handful of credentials); the memory
/// is cleared when full.
const VERIFIED_MAX: usize = 256;

/// Why a token was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VerifyError {
    /// The token is malformed, badly signed, expired, for another audience, or names an
    /// unknown key; the reason is safe to log and to send.
    Invalid(&'static str),
    /// The keys could not be fetched from the worker.
    Unavailable,
}

/// Outcome of the latest on-demand fetch, for rate limiting.
#[derive(Debug, Default)]
struct FetchState {
    last_attempt: Option<Instant>,
    last_ok: bool,
}

/// The cached verification keys, by `kid`.
#[derive(Debug)]
pub(crate) struct KeyCache {
    bus: Bus,
    keys: RwLock<HashMap<String, DecodingKey>>,
    fetch: tokio::sync::Mutex<FetchState>,
    validation: Validation,
    verified: Verified,
}

/// Tokens whose signature was verified, with their key id and claims. A token is sent with
/// every request, and its Ed25519 verification was a visible share of the gateway's CPU on
/// reads; a remembered token still has its expiry checked and its key still published.
#[derive(Debug, Default)]
struct Verified {
    tokens: RwLock<HashMap<String, (String, GrantClaims)>>,
}

impl Verified {
    /// The outcome for a remembered `token` at `now` (seconds since the epoch), or `None`
    /// when it must be verified in full: not remembered, or its key is no longer published
    /// (`has_key` says no; then it is forgotten).
    fn check(
        &self,
        token: &str,
        now: i64,
        has_key: impl Fn(&str) -> bool,
    ) -> Option<Result<GrantClaims, VerifyError>> {
        let (kid, claims) = self.tokens.read().ok()?.get(token).cloned()?;
        if !has_key(&kid) {
            if let Ok(mut tokens) = self.tokens.write() {
                tokens.remove(token);
            }
            return None;
        }
        // As jsonwebtoken's check: expired once `exp` is more than the leeway in the past.
        if claims.exp < now - LEEWAY_SECS as i64 {
            return Some(Err(VerifyError::Invalid("the token has expired")));
        }
        Some(Ok(claims))
    }

    /// Remember a token whose signature, audience and expiry were just verified.
    fn remember(&self, token: &str, kid: String, claims: &GrantClaims) {
        if let Ok(mut tokens) = self.tokens.write() {
            if tokens.len() >= VERIFIED_MAX {
                tokens.clear();
            }
            tokens.insert(token.to_owned(), (kid, claims.clone()));
        }
    }
}

impl KeyCache {
    /// An empty cache that fetches through `bus`.
    pub(crate) fn new(bus: Bus) -> Self {
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = LEEWAY_SECS;
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "aud", "sub"]);
        // A token whose `nbf` is still ahead is refused like an expired one (within the leeway).
        validation.validate_nbf = true;
        Self {
            bus,
            keys: RwLock::new(HashMap::new()),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
            validation,
            verified: Verified::default(),
        }
    }

    /// Refresh now and then every [`REFRESH_EVERY`] until `stop` is cancelled.
    pub(crate) fn spawn_refresher(
        self: &Arc<Self>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let cache = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REFRESH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if let Err(e) = cache.fetch_and_store(None).await {
                    tracing::warn!(
                        code = e.code.as_str(),
                        "JWKS refresh failed; keeping cached keys"
                    );
                }
            }
        })
    }

    /// Verify `token` (EdDSA signature by a known key, audience `wazap`, expiry).
    pub(crate) async fn verify(&self, token: &str) -> Result<GrantClaims, VerifyError> {
        let now = chrono::Utc::now().timestamp();
        if let Some(outcome) = self.verified.check(token, now, |kid| self.has_key(kid)) {
            return outcome;
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| VerifyError::Invalid("the token is malformed"))?;
        if header.alg != Algorithm::EdDSA {
            return Err(VerifyError::Invalid("the token is not signed with EdDSA"));
        }
        let kid = header
            .kid
            .ok_or(VerifyError::Invalid("the token names no signing key"))?;
        let key = match self.key(&kid) {
            Some(key) => key,
            None => {
                self.refetch_for(&kid).await?;
                self.key(&kid)
                    .ok_or(VerifyError::Invalid("the token's signing key is unknown"))?
            }
        };
        let claims = jsonwebtoken::decode::<GrantClaims>(token, &key, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                VerifyError::Invalid(match e.kind() {
                    K::ExpiredSignature => "the token has expired",
                    K::ImmatureSignature => "the token is not valid yet",
                    K::InvalidAudience | K::MissingRequiredClaim(_) => {
                        "the token is not a wazap grant"
                    }
                    K::InvalidSignature => "the token's signature is invalid",
                    _ => "the token is malformed",
                })
            })?;
        self.verified.remember(token, kid, &claims);
        Ok(claims)
    }

    /// Whether `kid` is published, without copying its key (the remembered-token path).
    fn has_key(&self, kid: &str) -> bool {
        self.keys.read().is_ok_and(|keys| keys.contains_key(kid))
    }

    fn key(&self, kid: &str) -> Option<DecodingKey> {
        self.keys.read().ok()?.get(kid).cloned()
    }

    /// Fetch again for an unknown `kid`, unless a fetch happened very recently.
    async fn refetch_for(&self, kid: &str) -> Result<(), VerifyError> {
        let mut state = self.fetch.lock().await;
        if self.key(kid).is_some() {
            return Ok(()); // another request fetched it meanwhile
        }
        if let Some(at) = state.last_attempt
            && at.elapsed() < MIN_REFETCH_INTERVAL
        {
            return if state.last_ok {
                Ok(())
            } else {
                Err(VerifyError::Unavailable)
            };
        }
        state.last_attempt = Some(Instant::now());
        let outcome = self.fetch_and_store(Some(ON_DEMAND_DEADLINE)).await;
        state.last_ok = outcome.is_ok();
        outcome.map_err(|e| {
            tracing::warn!(
                code = e.code.as_str(),
                "JWKS fetch failed; refusing the request"
            );
            VerifyError::Unavailable
        })
    }

    /// Fetch the key set and replace the cache with it.
    async fn fetch_and_store(&self, deadline: Option<Duration>) -> Result<(), RpcError> {
        let set = self
            .bus
            .call::<Jwks>(None, &JwksRequest::default(), deadline)
            .await?;
        let keys: HashMap<String, DecodingKey> = set
            .keys
            .iter()
            .filter_map(|jwk| decoding_key(jwk).map(|k| (jwk.kid.clone(), k)))
            .collect();
        tracing::debug!(keys = keys.len(), "JWKS refreshed");
        if let Ok(mut cache) = self.keys.write() {
            *cache = keys;
        }
        Ok(())
    }
}

/// The verification key of one JWK, if it is a well-formed Ed25519 signing key.
fn decoding_key(jwk: &Jwk) -> Option<DecodingKey> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            kind: wazap_shared::grant::ConnectionKind::Remote,
        }
    }

    #[test]
    fn a_remembered_token_still_expires_and_needs_its_key() {
        let v = Verified::default();
        let now = 1_000_000;
        assert!(v.check("t", now, |_| true).is_none(), "not remembered yet");
        v.remember("t", "k1".into(), &claims(now + 60));
        assert_eq!(v.check("t", now, |_| true), Some(Ok(claims(now + 60))));
        // Within the leeway, then past it.
        assert!(matches!(v.check("t", now + 64, |_| true), Some(Ok(_))));
        assert_eq!(
            v.check("t", now + 66, |_| true),
            Some(Err(VerifyError::Invalid("the token has expired")))
        );
        // A key no longer published sends the token back to full verification, for good.
        assert!(v.check("t", now, |kid| kid != "k1").is_none());
        assert!(v.check("t", now, |_| true).is_none());
    }

    #[test]
    fn the_memory_of_tokens_is_bounded() {
        let v = Verified::default();
        for i in 0..=VERIFIED_MAX {
            v.remember(&format!("t{i}"), "k".into(), &claims(i64::MAX));
        }
        assert!(v.tokens.read().unwrap().len() <= VERIFIED_MAX);
        let last = format!("t{VERIFIED_MAX}");
        assert!(v.check(&last, 0, |_| true).is_some());
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
}
