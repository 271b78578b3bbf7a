//! What a request holds while it is served: one of its listener's request permits, taken per
//! credential ([`Permits`]), and, while its body is buffered and handled, its share of the
//! process's byte budget for request bodies ([`BodyBudget`]).
//!
//! **The credential share.** A listener admits `WAZAP_MCP_MAX_CONCURRENCY` (N) requests of one
//! credential at once, and N + 1 in all: the last permit is held back for a credential that has
//! nothing in flight. So one credential (an agent with N parked `wait_for_messages`, or one
//! streaming N slow bodies) can never take every permit: another credential's call still gets one.
//! Why N of N + 1 rather than a share below N: with the default N = 2 any smaller share is 1, which
//! would take away a lone agent's second call (a parked wait and a read at once) to protect an
//! agent that, on a personal server, mostly does not exist; keeping one permit back costs one
//! request's memory and guards the same thing. What it does not do: with several hungry
//! credentials the reserve goes to whichever asks first, and beyond it they get `busy` like
//! anyone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wazap_shared::ErrorCode;

use crate::error::ApiError;

/// A listener's request permits, counted per credential (see the module doc).
#[derive(Debug)]
pub(crate) struct Permits {
    /// N: what one credential may hold; the listener holds at most N + 1.
    per_credential: usize,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_credential: HashMap<String, usize>,
}

impl Permits {
    /// `per_credential` (N) for each credential, N + 1 on the listener.
    pub(crate) fn new(per_credential: usize) -> Arc<Self> {
        Arc::new(Self {
            per_credential,
            held: Mutex::new(Held::default()),
        })
    }

    /// A permit for `credential` (a connection id), or `None` when the listener is full or the
    /// credential holds its share.
    pub(crate) fn try_acquire(self: &Arc<Self>, credential: &str) -> Option<Permit> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = held.by_credential.get(credential).copied().unwrap_or(0);
        // Below N anyone may take one (and then holds fewer than N); the (N + 1)-th only a
        // credential with none in flight.
        let admitted =
            held.total < self.per_credential || (held.total == self.per_credential && mine == 0);
        if !admitted {
            return None;
        }
        held.total += 1;
        *held.by_credential.entry(credential.to_owned()).or_default() += 1;
        Some(Permit {
            pool: Arc::clone(self),
            credential: credential.to_owned(),
        })
    }

    /// Requests in flight on this listener.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

/// One request's place on its listener, given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    pool: Arc<Permits>,
    credential: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut held = self
            .pool
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.total = held.total.saturating_sub(1);
        if let Some(mine) = held.by_credential.get_mut(&self.credential) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                held.by_credential.remove(&self.credential);
            }
        }
    }
}

/// The process's budget for request bodies being read or handled (both listeners): a body takes
/// its bytes before they are read (its `Content-Length`, or step by step for a chunked body) and
/// gives them back when its handler has answered. Over the budget: `busy`.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    bytes: Arc<Semaphore>,
}

/// How much a chunked body takes from the budget at a time.
const CHUNKED_STEP: usize = 64 * 1024;

impl BodyBudget {
    /// A budget of `bytes` (at most `u32::MAX`; the configuration allows 1 GiB).
    pub(crate) fn new(bytes: usize) -> Self {
        Self {
            bytes: Arc::new(Semaphore::new(bytes.min(u32::MAX as usize))),
        }
    }

    /// An empty hold on this budget, grown with [`BodyHold::grow_to`].
    pub(crate) fn hold(&self) -> BodyHold {
        BodyHold {
            budget: Arc::clone(&self.bytes),
            permit: None,
            bytes: 0,
        }
    }

    /// Bytes not taken now.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.bytes.available_permits()
    }
}

/// Bytes of the [`BodyBudget`] a request holds; given back when dropped.
#[derive(Debug)]
pub(crate) struct BodyHold {
    budget: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl BodyHold {
    /// Hold at least `bytes` (a chunked body rounds up by [`CHUNKED_STEP`] when `exact` is
    /// false), or `busy` when the budget does not have them now.
    pub(crate) fn grow_to(&mut self, bytes: usize, exact: bool) -> Result<(), ApiError> {
        if bytes <= self.bytes {
            return Ok(());
        }
        let target = if exact {
            bytes
        } else {
            bytes.div_ceil(CHUNKED_STEP).saturating_mul(CHUNKED_STEP)
        };
        let more = u32::try_from(target - self.bytes).map_err(|_| over_budget())?;
        let permit = Arc::clone(&self.budget)
            .try_acquire_many_owned(more)
            .map_err(|_| over_budget())?;
        match &mut self.permit {
            Some(held) => held.merge(permit),
            None => self.permit = Some(permit),
        }
        self.bytes = target;
        Ok(())
    }
}

fn over_budget() -> ApiError {
    tracing::info!("request shed: the request body budget is spent");
    ApiError::new(
        ErrorCode::Busy,
        "too many request bodies in flight; retry in a moment",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_credential_leaves_the_last_permit_to_another() {
        let permits = Permits::new(2);
        let a1 = permits.try_acquire("a").expect("first");
        let a2 = permits.try_acquire("a").expect("second: within the share");
        assert!(permits.try_acquire("a").is_none(), "a holds its share");
        let b1 = permits.try_acquire("b").expect("the held-back permit");
        assert!(permits.try_acquire("c").is_none(), "the listener is full");
        assert!(permits.try_acquire("b").is_none());
        drop(a1);
        // 2 in flight: a holds one, b one; a third credential still gets in, b does not.
        assert!(permits.try_acquire("b").is_none(), "b already holds one");
        let c1 = permits.try_acquire("c").expect("c holds none");
        drop((a2, b1, c1));
        assert_eq!(permits.in_flight(), 0, "every permit came back");
        let again: Vec<_> = (0..2).map(|_| permits.try_acquire("a")).collect();
        assert!(again.iter().all(Option::is_some));
    }

    #[test]
    fn a_limit_of_one_still_serves_a_second_credential() {
        let permits = Permits::new(1);
        let _a = permits.try_acquire("a").expect("a");
        assert!(permits.try_acquire("a").is_none());
        let _b = permits.try_acquire("b").expect("held back for b");
        assert!(permits.try_acquire("c").is_none());
    }

    #[test]
    fn the_body_budget_is_shared_and_given_back() {
        let budget = BodyBudget::new(200 * 1024);
        let mut first = budget.hold();
        first.grow_to(100 * 1024, true).expect("fits");
        let mut second = budget.hold();
        second.grow_to(1, false).expect("one step fits");
        assert!(
            second.grow_to(CHUNKED_STEP + 1, false).is_err(),
            "over budget"
        );
        assert_eq!(budget.available(), 200 * 1024 - 100 * 1024 - CHUNKED_STEP);
        drop((first, second));
        assert_eq!(budget.available(), 200 * 1024);
    }
}
