//! Which send keys a call in this process is handling right now: from before its reservation
//! until its outcome is journaled (or it gave up). Only the lease holder transmits, so a key
//! left `transmitting` that no call here may still transmit has been abandoned — its call could
//! not journal an outcome (Postgres went away mid-send, say) — and a retry settles it at once
//! (`outcome_unknown`) instead of waiting for the sweep ([`super::journal::STALE_AFTER`]).
//!
//! A call that found the key journaled and is replaying its outcome will never transmit it, so
//! it does not count as one that may: two retries of an abandoned key arriving together each
//! see the other only replaying, and settle it, rather than wait for each other until their
//! deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Key = (String, String);

/// How many calls handle a key, and how many of them are replaying its journaled outcome.
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    calls: usize,
    replaying: usize,
}

/// The keys being handled, with how many calls handle each.
#[derive(Debug, Clone, Default)]
pub struct Handling(Arc<Mutex<HashMap<Key, Count>>>);

impl Handling {
    /// Count a call handling `(connection_id, request_id)` until the guard drops.
    pub fn enter(&self, connection_id: &str, request_id: &str) -> Handled {
        let key = (connection_id.to_owned(), request_id.to_owned());
        self.lock().entry(key.clone()).or_default().calls += 1;
        Handled {
            handling: self.clone(),
            key,
        }
    }

    /// Count the asking call (which entered the key) as replaying the key's journaled outcome
    /// — it will not transmit it — until the guard drops.
    pub fn replaying(&self, connection_id: &str, request_id: &str) -> Replaying {
        let key = (connection_id.to_owned(), request_id.to_owned());
        self.lock().entry(key.clone()).or_default().replaying += 1;
        Replaying {
            handling: self.clone(),
            key,
        }
    }

    /// How many calls handling the key may still transmit it: those not replaying its
    /// journaled outcome. Zero for a key in flight means no call here will finish it.
    pub fn may_transmit(&self, connection_id: &str, request_id: &str) -> usize {
        let n = self.count(connection_id, request_id);
        n.calls.saturating_sub(n.replaying)
    }

    fn count(&self, connection_id: &str, request_id: &str) -> Count {
        let key = (connection_id.to_owned(), request_id.to_owned());
        self.lock().get(&key).copied().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Count>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Let go of one of `key`'s counts.
    fn leave(&self, key: &Key, count: fn(&mut Count) -> &mut usize) {
        let mut map = self.lock();
        if let Some(n) = map.get_mut(key) {
            let c = count(n);
            *c = c.saturating_sub(1);
            if n.calls == 0 && n.replaying == 0 {
                map.remove(key);
            }
        }
    }
}

/// One call's hold on a key; dropping it (the call ended, however) lets go.
#[derive(Debug)]
pub struct Handled {
    handling: Handling,
    key: Key,
}

impl Drop for Handled {
    fn drop(&mut self) {
        self.handling.leave(&self.key, |n| &mut n.calls);
    }
}

/// One call's mark that it only replays the key's outcome; dropping it lets go.
#[derive(Debug)]
pub struct Replaying {
    handling: Handling,
    key: Key,
}

impl Drop for Replaying {
    fn drop(&mut self) {
        self.handling.leave(&self.key, |n| &mut n.replaying);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_calls_handling_a_key_until_they_drop() {
        let h = Handling::default();
        let a = h.enter("c1", "k");
        assert_eq!(h.may_transmit("c1", "k"), 1, "alone");
        let b = h.enter("c1", "k");
        assert_eq!(h.may_transmit("c1", "k"), 2);
        assert_eq!(h.may_transmit("c2", "k"), 0, "another connection's key");
        drop(a);
        assert_eq!(h.may_transmit("c1", "k"), 1);
        drop(b);
        assert!(h.lock().is_empty(), "nothing left behind");
    }

    #[test]
    fn calls_replaying_a_key_may_not_transmit_it() {
        let h = Handling::default();
        let a = h.enter("c1", "k");
        let b = h.enter("c1", "k");
        assert_eq!(h.may_transmit("c1", "k"), 2);
        let a_replays = h.replaying("c1", "k");
        assert_eq!(h.may_transmit("c1", "k"), 1, "b may still reserve and send");
        let b_replays = h.replaying("c1", "k");
        assert_eq!(
            h.may_transmit("c1", "k"),
            0,
            "both only replay: nobody sends"
        );
        drop((a_replays, a));
        assert_eq!(h.may_transmit("c1", "k"), 0);
        drop((b, b_replays));
        assert!(h.lock().is_empty(), "nothing left behind");
    }
}
