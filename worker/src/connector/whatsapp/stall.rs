//! Whether the archive can commit what WhatsApp delivers, as the user is told (DESIGN §9,
//! "truthful health"). The durability hook and the event drain report every attempt here; the
//! connector says "cannot commit" while one of them last failed and has not committed since, or
//! while an attempt has been waiting longer than [`SLOW`] (a commit held behind a lock or a
//! stalled link fails only at the hook's bound, 20 s later, and the drain never gives up). Reads
//! usually still work then, so `read_messages`' notes and the dashboard can say it; `ping`'s
//! `sync` says `catching_up` even when Postgres is down altogether.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the user is told while the archive cannot commit: the one wording, for the read tools'
/// `notes` and the dashboard. No numbers, names or text from any message.
pub const ARCHIVE_WAITING: &str = "New messages are waiting: the archive cannot be written right \
     now (database unavailable). Nothing is lost: they are archived as soon as it can be written.";

/// How long an attempt may wait before it counts as the archive not committing. A healthy
/// commit takes milliseconds; a large history page a few seconds.
pub const SLOW: Duration = Duration::from_secs(5);

/// Who is committing: each clears only its own failure, so a receipt the drain records does
/// not hide a batch the hook could not commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The inbound durability hook (WhatsApp's ack waits for it).
    Hook,
    /// The drain of hook-bypassing events.
    Drain,
}

/// The archive's commit health, shared by the hook, the drain and the connector.
#[derive(Debug, Default)]
pub struct Stall {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// Attempts in flight, by id: when each began.
    waiting: BTreeMap<u64, Instant>,
    hook_failed: bool,
    drain_failed: bool,
}

impl Inner {
    fn failed(&mut self, source: Source) -> &mut bool {
        match source {
            Source::Hook => &mut self.hook_failed,
            Source::Drain => &mut self.drain_failed,
        }
    }
}

/// One commit attempt in flight; it stops counting as waiting when dropped.
pub struct Attempt<'a> {
    stall: &'a Stall,
    id: u64,
    source: Source,
}

impl Stall {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An attempt by `source` begins now.
    pub fn attempt(&self, source: Source) -> Attempt<'_> {
        let mut s = self.lock();
        let id = s.next;
        s.next += 1;
        s.waiting.insert(id, Instant::now());
        Attempt {
            stall: self,
            id,
            source,
        }
    }

    /// True while the archive cannot commit, as of `now`.
    pub fn blocked(&self, now: Instant) -> bool {
        let s = self.lock();
        s.hook_failed
            || s.drain_failed
            || s.waiting
                .values()
                .next()
                .is_some_and(|t| now.saturating_duration_since(*t) >= SLOW)
    }

    /// The note for the user while the archive cannot commit.
    pub fn note(&self) -> Option<&'static str> {
        self.blocked(Instant::now()).then_some(ARCHIVE_WAITING)
    }
}

impl Attempt<'_> {
    /// The attempt committed: its source's failure, if any, is over.
    pub fn committed(self) {
        let was = std::mem::replace(self.stall.lock().failed(self.source), false);
        if was {
            tracing::info!(source = ?self.source, "the archive commits again");
        }
    }

    /// The attempt failed (or gave up): nothing it carried is committed.
    pub fn failed(self) {
        let was = std::mem::replace(self.stall.lock().failed(self.source), true);
        if !was {
            tracing::warn!(source = ?self.source, "the archive cannot commit; the user is told");
        }
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.stall.lock().waiting.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_attempt_blocks_until_it_ends() {
        let stall = Stall::default();
        let a = stall.attempt(Source::Hook);
        let now = Instant::now();
        assert!(!stall.blocked(now));
        assert!(stall.blocked(now + SLOW));
        a.committed();
        assert!(!stall.blocked(now + SLOW));
    }

    #[test]
    fn a_failure_lasts_until_its_source_commits() {
        let stall = Stall::default();
        stall.attempt(Source::Hook).failed();
        assert_eq!(stall.note(), Some(ARCHIVE_WAITING));
        stall.attempt(Source::Drain).committed();
        assert!(
            stall.note().is_some(),
            "the drain cannot clear the hook's failure"
        );
        stall.attempt(Source::Hook).committed();
        assert_eq!(stall.note(), None);
    }
}
