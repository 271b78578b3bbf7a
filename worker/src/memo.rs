//! A small bounded map of what the worker last saw Postgres accept (a connection's viewer, a
//! chat's send target), so a request can act on it *while* Postgres checks it again in the same
//! round trip. Nothing is ever decided from a memo alone: every user re-checks what it took.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Bounded by entry count only: when full it starts over (deployments hold a handful of
/// connections and the chats they send to; the bound only caps memory).
#[derive(Debug)]
pub struct Memo<V> {
    entries: Arc<Mutex<HashMap<String, Arc<V>>>>,
    max: usize,
}

impl<V> Clone for Memo<V> {
    fn clone(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
            max: self.max,
        }
    }
}

impl<V: Clone> Memo<V> {
    /// An empty memo of at most `max` entries.
    pub fn new(max: usize) -> Self {
        Self {
            entries: Arc::default(),
            max,
        }
    }

    /// What was last remembered under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        self.lock().get(key).cloned()
    }

    /// Remember `value` under `key`.
    pub fn put(&self, key: &str, value: &V) {
        let value = Arc::new(value.clone());
        let mut entries = self.lock();
        if entries.len() >= self.max && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(key.to_owned(), value);
    }

    /// Forget `key` (Postgres disagreed with what was remembered).
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<V>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_latest_value_within_its_bound_until_forgotten() {
        let memo = Memo::new(2);
        assert!(memo.get("a").is_none());
        memo.put("a", &1);
        memo.put("a", &2);
        assert_eq!(memo.get("a").as_deref(), Some(&2));
        memo.forget("a");
        assert!(memo.get("a").is_none());
        memo.put("a", &1);
        memo.put("b", &2);
        memo.put("c", &3);
        assert!(
            memo.get("a").is_none() && memo.get("b").is_none(),
            "full: started over"
        );
        assert_eq!(memo.get("c").as_deref(), Some(&3));
    }
}
