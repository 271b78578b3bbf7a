//! Which send keys a call in this process is handling right now: from before its reservation
//! until its outcome is journaled (or it gave up). Only the lease holder transmits, so a key
//! left `transmitting` that no call here handles has been abandoned — its call could not
//! journal an outcome (Postgres went away mid-send, say) — and a retry settles it at once
//! (`outcome_unknown`) instead of waiting for the sweep ([`super::journal::STALE_AFTER`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Key = (String, String);

/// The keys being handled, with how many calls handle each.
#[derive(Debug, Clone, Default)]
pub struct Handling(Arc<Mutex<HashMap<Key, usize>>>);

impl Handling {
    /// Count a call handling `(connection_id, request_id)` until the guard drops.
    pub fn enter(&self, connection_id: &str, request_id: &str) -> Handled {
        let key = (connection_id.to_owned(), request_id.to_owned());
        *self.lock().entry(key.clone()).or_default() += 1;
        Handled {
            handling: self.clone(),
            key,
        }
    }

    /// How many calls handle the key besides the one asking (which entered it).
    pub fn others(&self, connection_id: &str, request_id: &str) -> usize {
        let key = (connection_id.to_owned(), request_id.to_owned());
        self.lock()
            .get(&key)
            .copied()
            .unwrap_or(0)
            .saturating_sub(1)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, usize>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut map = self.handling.lock();
        if let Some(n) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn others_counts_the_calls_besides_the_asker_until_they_drop() {
        let h = Handling::default();
        let a = h.enter("c1", "k");
        assert_eq!(h.others("c1", "k"), 0, "alone");
        let b = h.enter("c1", "k");
        assert_eq!(h.others("c1", "k"), 1);
        assert_eq!(h.others("c2", "k"), 0, "another connection's key");
        drop(a);
        assert_eq!(h.others("c1", "k"), 0);
        drop(b);
        assert!(h.lock().is_empty(), "nothing left behind");
    }
}
