//! Which of this gateway's sends name an object, and whether the gateway may delete it when
//! they end. Identical bytes share one object (it is named by their SHA-256): two requests with
//! the same photo, here or on another gateway, may both rely on it, and deleting it under one of
//! them would cut off the other's worker as it reads. So the gateway deletes an object only
//! when the last of its requests naming it ends, and only when the object is "ours":
//!
//! - this gateway created it (a reused object may be another gateway's request's), and
//! - every later reuse here found it as this gateway last marked it (a reuse renews the
//!   object's description, so a different one means another gateway reused it meanwhile), and
//! - every request naming it failed with a known outcome: a sent one is the worker's to delete
//!   (it still may be reading), as is one cut off after it left (`send_outcome_unknown`, or the
//!   request dropped mid-call).
//!
//! The delete itself checks once more, under the store's writing lock, that no request here
//! has claimed the name since and that the object is still the version recorded here.

use std::collections::HashMap;

/// One version of an object: its `nuid` (new on every write) and its description (renewed on
/// every reuse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version {
    pub(super) nuid: String,
    pub(super) description: Option<String>,
}

/// How a request got its object.
#[derive(Debug)]
pub(super) enum Made {
    /// It wrote the bytes (nothing usable was stored under the name).
    Created,
    /// It reused bytes already stored, found as `found` before marking them.
    Reused { found: Version },
}

/// How a request that named an object ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Refused or failed, and the worker is done with it (or never had it).
    Failed,
    /// Sent, or its outcome is unknown: the worker may still read the bytes.
    Spared,
}

#[derive(Debug)]
struct Entry {
    /// Requests in flight naming the object.
    held: usize,
    /// The object as this gateway last wrote or marked it.
    stored: Version,
    /// See the module doc.
    ours: bool,
}

/// The names this gateway's requests in flight rely on.
#[derive(Debug, Default)]
pub(super) struct ClaimTable {
    names: HashMap<String, Entry>,
}

impl ClaimTable {
    /// A request now relies on `name`, which it made as `made` and is `now`. Called under the
    /// store's writing lock, right after the write or mark.
    pub(super) fn take(&mut self, name: &str, made: Made, now: Version) {
        match self.names.get_mut(name) {
            Some(entry) => {
                entry.held += 1;
                if let Made::Reused { found } = made
                    && found != entry.stored
                {
                    entry.ours = false;
                }
                entry.stored = now;
            }
            None => {
                let ours = matches!(made, Made::Created);
                self.names.insert(
                    name.to_owned(),
                    Entry {
                        held: 1,
                        stored: now,
                        ours,
                    },
                );
            }
        }
    }

    /// A request relying on `name` ended as `ended`. When it was the last and the object is
    /// this gateway's to delete: the version to delete.
    pub(super) fn release(&mut self, name: &str, ended: Ended) -> Option<Version> {
        let entry = self.names.get_mut(name)?;
        if ended == Ended::Spared {
            entry.ours = false;
        }
        entry.held -= 1;
        if entry.held > 0 {
            return None;
        }
        let entry = self.names.remove(name)?;
        entry.ours.then_some(entry.stored)
    }

    /// Whether a request in flight here relies on `name`.
    pub(super) fn is_claimed(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(nuid: &str, description: &str) -> Version {
        Version {
            nuid: nuid.into(),
            description: Some(description.into()),
        }
    }

    #[test]
    fn a_failed_request_s_own_object_is_deleted() {
        let mut t = ClaimTable::default();
        t.take("o", Made::Created, v("n1", "d1"));
        assert!(t.is_claimed("o"));
        assert_eq!(t.release("o", Ended::Failed), Some(v("n1", "d1")));
        assert!(!t.is_claimed("o"));
        // Nothing left to release.
        assert_eq!(t.release("o", Ended::Failed), None);
    }

    #[test]
    fn only_the_last_request_deletes_and_a_spared_one_keeps_it() {
        let mut t = ClaimTable::default();
        t.take("o", Made::Created, v("n1", "d1"));
        t.take(
            "o",
            Made::Reused {
                found: v("n1", "d1"),
            },
            v("n1", "d2"),
        );
        assert_eq!(
            t.release("o", Ended::Failed),
            None,
            "one still relies on it"
        );
        assert_eq!(t.release("o", Ended::Failed), Some(v("n1", "d2")));

        t.take("o", Made::Created, v("n2", "d3"));
        t.take(
            "o",
            Made::Reused {
                found: v("n2", "d3"),
            },
            v("n2", "d4"),
        );
        assert_eq!(t.release("o", Ended::Spared), None);
        assert_eq!(
            t.release("o", Ended::Failed),
            None,
            "a sent or unknown request leaves it to the worker"
        );
    }

    #[test]
    fn an_object_reused_from_elsewhere_is_never_deleted_here() {
        let mut t = ClaimTable::default();
        // Stored before any request here: another gateway's, or an earlier send's.
        t.take(
            "o",
            Made::Reused {
                found: v("n1", "other"),
            },
            v("n1", "d1"),
        );
        assert_eq!(t.release("o", Ended::Failed), None);

        // Created here, then reused by another gateway (a description we did not set) before
        // a second request here reused it.
        t.take("o", Made::Created, v("n2", "d1"));
        t.take(
            "o",
            Made::Reused {
                found: v("n2", "theirs"),
            },
            v("n2", "d2"),
        );
        assert_eq!(t.release("o", Ended::Failed), None);
        assert_eq!(t.release("o", Ended::Failed), None);
    }
}
