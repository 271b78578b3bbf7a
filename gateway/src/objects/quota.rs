//! The media bytes one credential may have in flight through this gateway: stored for a send
//! whose RPC has not ended yet. The bucket is shared by every credential and every gateway
//! (`wazap_shared::bus::MEDIA_MAX_BYTES`); without a share per credential one agent sending
//! large files in a loop could fill it, and every other credential's media would be refused
//! until the TTL freed it. Over the share a send is `busy` at once, before a byte is stored.
//!
//! Counted in memory, per gateway: the request permits already bound how many sends one
//! credential runs at once, so this is a ceiling on bytes, not a queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// What one credential may hold: eight sends of the largest media (8 MiB) at once, an eighth of
/// the bucket.
pub(crate) const PER_CREDENTIAL_BYTES: u64 = 64 * 1024 * 1024;

/// Media bytes in flight per credential (a connection id).
#[derive(Debug)]
pub(crate) struct Quota {
    limit: u64,
    held: Mutex<HashMap<String, u64>>,
}

impl Quota {
    /// A quota of `limit` bytes per credential.
    pub(crate) fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Take `bytes` for `credential`, or `None` when that would put it over its share.
    pub(crate) fn try_take(self: &Arc<Self>, credential: &str, bytes: u64) -> Option<QuotaHold> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = held.get(credential).copied().unwrap_or(0);
        let after = mine.checked_add(bytes).filter(|n| *n <= self.limit)?;
        held.insert(credential.to_owned(), after);
        Some(QuotaHold {
            quota: Arc::clone(self),
            credential: credential.to_owned(),
            bytes,
        })
    }

    /// Bytes `credential` holds now.
    #[cfg(test)]
    pub(crate) fn held(&self, credential: &str) -> u64 {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(credential)
            .copied()
            .unwrap_or(0)
    }
}

/// One send's bytes on its credential's share, given back when dropped (the send's RPC ended,
/// whichever way, or the request went away).
#[derive(Debug)]
pub(crate) struct QuotaHold {
    quota: Arc<Quota>,
    credential: String,
    bytes: u64,
}

impl Drop for QuotaHold {
    fn drop(&mut self) {
        let mut held = self
            .quota
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(mine) = held.get_mut(&self.credential) {
            *mine = mine.saturating_sub(self.bytes);
            if *mine == 0 {
                held.remove(&self.credential);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_credential_is_held_to_its_share_and_others_are_not_affected() {
        let quota = Quota::new(64 * MIB);
        let mut holds: Vec<_> = (0..8)
            .map(|i| {
                quota
                    .try_take("a", 8 * MIB)
                    .unwrap_or_else(|| panic!("send {i}"))
            })
            .collect();
        assert_eq!(quota.held("a"), 64 * MIB);
        assert!(quota.try_take("a", 1).is_none(), "one byte over the share");
        let b = quota
            .try_take("b", 8 * MIB)
            .expect("another credential has its own");
        drop(holds.pop());
        assert_eq!(quota.held("a"), 56 * MIB);
        assert!(quota.try_take("a", 8 * MIB + 1).is_none(), "still over");
        let a = quota
            .try_take("a", 8 * MIB)
            .expect("exactly the freed bytes fit");
        drop((a, b, holds));
        assert_eq!((quota.held("a"), quota.held("b")), (0, 0));
    }

    #[test]
    fn every_hold_comes_back_and_a_huge_ask_does_not_overflow() {
        let quota = Quota::new(64 * MIB);
        {
            let _x = quota.try_take("a", 10).expect("fits");
            let _y = quota.try_take("a", 20).expect("fits");
            assert_eq!(quota.held("a"), 30);
        }
        assert_eq!(quota.held("a"), 0);
        assert!(quota.held.lock().unwrap().is_empty(), "no entry is left");
        let _x = quota.try_take("a", 10).expect("fits");
        assert!(quota.try_take("a", u64::MAX).is_none());
        assert!(quota.try_take("a", 64 * MIB).is_none());
        assert_eq!(quota.held("a"), 10);
    }
}
