//! The worker's shutdown bound (DESIGN §10): once shutdown is asked for, [`crate::run`] returns
//! within [`DRAIN_LIMIT`], whether or not NATS and Postgres still answer. Every step of the
//! drain (the unsubscribe, the server's confirmation of it, requests in flight, the last flush
//! of replies) waits only until one deadline they share, so the steps cannot add up past it;
//! whatever is cut short is logged and abandoned.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long shutdown takes at most, from the moment it is asked for until `run` returns
/// (docs/observability.md promises it; the compose file's `stop_grace_period` is longer).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// A request to shut down and the one deadline its drain keeps.
#[derive(Debug, Clone)]
pub struct Shutdown {
    requested: CancellationToken,
    deadline: Arc<OnceLock<Instant>>,
}

impl Shutdown {
    /// Shutdown is asked for when `requested` is cancelled.
    pub fn new(requested: CancellationToken) -> Self {
        Self {
            requested,
            deadline: Arc::default(),
        }
    }

    /// The token whose cancellation asks for shutdown.
    pub fn token(&self) -> &CancellationToken {
        &self.requested
    }

    /// Wait until shutdown is asked for.
    pub async fn requested(&self) {
        self.requested.cancelled().await;
    }

    /// When the drain must be over: [`DRAIN_LIMIT`] after the first call, which every step
    /// makes once it starts draining (a drain without a request, after NATS ended the
    /// subscription, starts the clock too). Every caller gets the same instant.
    pub fn deadline(&self) -> Instant {
        *self.deadline.get_or_init(|| Instant::now() + DRAIN_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_step_shares_one_deadline() {
        let token = CancellationToken::new();
        let a = Shutdown::new(token.clone());
        let b = a.clone();
        token.cancel();
        a.requested().await;
        let first = a.deadline();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            b.deadline(),
            first,
            "a later step does not get a later deadline"
        );
        assert!(first <= Instant::now() + DRAIN_LIMIT);
    }
}
