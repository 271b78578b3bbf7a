//! The worker's public signing keys (JWKS over NATS op `jwks`) and bearer-token verification.
//!
//! Keys are fetched at start, refreshed every 60 s in the background, and re-fetched when a
//! token names an unknown `kid` (at most once per [`MIN_REFETCH_INTERVAL`], one fetch at a
//! time, with a short deadline) so a missing worker never makes requests wait.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use tokio_util::sync::CancellationToken;
use wazap_shared::RpcError;
use wazap_shared::grant::GrantClaims;
use wazap_shared::grant::verify::{self, Refusal, Remembered};
use wazap_shared::wire::system::{Jwks, JwksRequest};

use crate::bus::Bus;

/// How often the background task refreshes the keys.
pub(crate) const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// The least time between two fetches caused by unknown `kid`s.
pub(crate) const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(1);
/// Deadline of a fetch made while a request waits.
const ON_DEMAND_DEADLINE: Duration = Duration::from_millis(800);
/// Verified tokens remembered at most (a gateway serves a handful of credentials).
const VERIFIED_MAX: usize = 256;

/// Why a token was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VerifyError {
    /// The token is malformed, badly signed, expired, for another audience, or names an
    /// unknown key; the reason is safe to log and to send.
    Invalid(Refusal),
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
    verified: Remembered,
}

impl KeyCache {
    /// An empty cache that fetches through `bus`.
    pub(crate) fn new(bus: Bus) -> Self {
        Self {
            bus,
            keys: RwLock::new(HashMap::new()),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
            verified: Remembered::new(VERIFIED_MAX),
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

    /// Verify `token` ([`verify`]'s check, with the worker's published keys).
    pub(crate) async fn verify(&self, token: &str) -> Result<GrantClaims, VerifyError> {
        let now = chrono::Utc::now().timestamp();
        if let Some(outcome) = self.verified.check(token, now, |kid| self.has_key(kid)) {
            return outcome.map_err(VerifyError::Invalid);
        }
        let kid = verify::key_id(token).map_err(VerifyError::Invalid)?;
        let key = match self.key(&kid) {
            Some(key) => key,
            None => {
                self.refetch_for(&kid).await?;
                self.key(&kid)
                    .ok_or(VerifyError::Invalid(verify::UNKNOWN_KEY))?
            }
        };
        let claims = verify::decode(token, &key).map_err(VerifyError::Invalid)?;
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
            .filter_map(|jwk| verify::decoding_key(jwk).map(|k| (jwk.kid.clone(), k)))
            .collect();
        tracing::debug!(keys = keys.len(), "JWKS refreshed");
        if let Ok(mut cache) = self.keys.write() {
            *cache = keys;
        }
        Ok(())
    }
}
