//! The worker's own check of the token every request presents (DESIGN §4: the worker decides,
//! gateways only pre-check). The rules are the gateway's ([`wazap_shared::grant::verify`]); the
//! keys are the worker's own, read from its table. A request whose headers name a connection
//! without a token signed for it is refused like any other bad grant.
//!
//! The loopback fact is the one thing the worker takes from a gateway on trust, and only when
//! the NATS it serves on lets nobody else publish requests ([`loopback_trusted`]).

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use jsonwebtoken::DecodingKey;
use wazap_shared::grant::verify::{self, Refusal, Remembered};
use wazap_shared::grant::{Presented, VerifiedGrant};

/// Verified tokens remembered at most (a deployment has a handful of credentials).
const REMEMBERED_MAX: usize = 1024;
/// The least time between two reads of the key table caused by unknown `kid`s.
const MIN_RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The verification keys, the tokens already verified, and whether loopback claims count.
#[derive(Debug)]
pub struct Tokens {
    pool: Pool,
    keys: RwLock<HashMap<String, DecodingKey>>,
    last_load: tokio::sync::Mutex<Option<Instant>>,
    remembered: Remembered,
    trust_loopback: bool,
}

impl Tokens {
    /// Keys read from `pool` on first need; the `Wazap-Loopback` header believed only when
    /// `trust_loopback`.
    pub fn new(pool: Pool, trust_loopback: bool) -> Self {
        Self {
            pool,
            keys: RwLock::new(HashMap::new()),
            last_load: tokio::sync::Mutex::new(None),
            remembered: Remembered::new(REMEMBERED_MAX),
            trust_loopback,
        }
    }

    /// Whether only gateways can publish requests ([`loopback_trusted`]), so what a gateway
    /// reports about its HTTP client (loopback, an owner login's peer address) is believed.
    pub fn trusts_gateways(&self) -> bool {
        self.trust_loopback
    }

    /// The grant `presented` carries, once its token passes the check; `None` (logged at debug
    /// with the reason, never the token) otherwise.
    pub async fn verify(&self, presented: Presented) -> Option<VerifiedGrant> {
        match self.claims(&presented.token).await {
            Ok(claims) => Some(VerifiedGrant {
                connection_id: claims.sub,
                revision: claims.rev,
                loopback: presented.loopback && self.trust_loopback,
                token: presented.token,
            }),
            Err(reason) => {
                tracing::debug!(reason, "rejected: the presented token");
                None
            }
        }
    }

    async fn claims(&self, token: &str) -> Result<wazap_shared::grant::GrantClaims, Refusal> {
        let now = chrono::Utc::now().timestamp();
        if let Some(outcome) = self.remembered.check(token, now, |kid| self.has_key(kid)) {
            return outcome;
        }
        let kid = verify::key_id(token)?;
        let key = match self.key(&kid) {
            Some(key) => key,
            None => {
                self.reload().await;
                self.key(&kid).ok_or(verify::UNKNOWN_KEY)?
            }
        };
        let claims = verify::decode(token, &key)?;
        self.remembered.remember(token, kid, &claims);
        Ok(claims)
    }

    fn has_key(&self, kid: &str) -> bool {
        self.keys.read().is_ok_and(|keys| keys.contains_key(kid))
    }

    fn key(&self, kid: &str) -> Option<DecodingKey> {
        self.keys.read().ok()?.get(kid).cloned()
    }

    /// Read the published keys again, unless that happened within [`MIN_RELOAD_INTERVAL`] (a
    /// stream of tokens naming made-up keys costs one query a second).
    pub async fn reload(&self) {
        let mut last = self.last_load.lock().await;
        if last.is_some_and(|at| at.elapsed() < MIN_RELOAD_INTERVAL) {
            return;
        }
        *last = Some(Instant::now());
        match super::jwks(&self.pool).await {
            Ok(set) => {
                let keys = set
                    .keys
                    .iter()
                    .filter_map(|jwk| verify::decoding_key(jwk).map(|k| (jwk.kid.clone(), k)))
                    .collect();
                if let Ok(mut cache) = self.keys.write() {
                    *cache = keys;
                }
            }
            Err(e) => {
                tracing::warn!(error = %crate::error::redacted(&e), "signing keys could not be read; keeping the last");
            }
        }
    }
}

/// Whether a gateway's `Wazap-Loopback` header can be believed: only gateways may publish
/// requests on NATS. True when the worker connects with credentials (the shipped NATS
/// configuration lets only the gateway's user publish `<prefix>.rpc.>`), or when every server
/// in `nats_url` is on this machine's loopback (then a publisher is a local process, which could
/// reach the gateway's loopback listener as well).
pub fn loopback_trusted(nats_url: &str, authenticated: bool) -> bool {
    authenticated || nats_url.split(',').all(|url| is_loopback_url(url.trim()))
}

fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    wazap_shared::grant::is_loopback_host(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_trusted_only_on_a_local_or_authenticated_nats() {
        for url in [
            "nats://127.0.0.1:4222",
            "127.0.0.1",
            "localhost:4222",
            "nats://[::1]:4222",
            "tls://user:pw@127.0.0.2:4222",
            "nats://127.0.0.1:4222, nats://localhost:4223",
        ] {
            assert!(loopback_trusted(url, false), "{url}");
        }
        for url in [
            "nats://nats:4222",
            "nats://10.0.0.5:4222",
            "nats://127.0.0.1:4222,nats://nats:4222",
            "nats://localhost.evil.example:4222",
            "",
        ] {
            assert!(!loopback_trusted(url, false), "{url}");
            assert!(loopback_trusted(url, true), "{url}");
        }
    }
}
