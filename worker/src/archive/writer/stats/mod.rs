//! Chat statistics (`last_message_at`, `last_position`, `unread_count`, `push_name`) kept on
//! `chats` for the chat list. Updating thousands of chat rows per history chunk would cost more
//! than inserting the messages, so the writer applies live deltas at once and accumulates
//! history deltas, flushing them every [`FLUSH_CHUNKS`] chunks and at the end of each history
//! page. While deltas are pending, `archive_meta.chat_stats_dirty` is set in the same
//! transactions, so a crash is repaired at the next start by [`recompute`].

mod apply;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool};

use self::apply::apply_halves;
pub(crate) use self::apply::{Columns, apply, statement};

/// History chunks between two flushes (~50,000 messages).
pub(crate) const FLUSH_CHUNKS: usize = 25;

/// What a set of messages changes in one chat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChatDelta {
    /// The latest message time.
    pub(crate) ts: Option<DateTime<Utc>>,
    /// The highest position.
    pub(crate) position: Option<i64>,
    /// Unread messages to add (after a reset, the new count).
    pub(crate) unread: i32,
    /// The account wrote in the chat: unread starts over.
    pub(crate) reset: bool,
    /// The person's latest push name.
    pub(crate) push_name: Option<String>,
}

impl ChatDelta {
    /// Fold in a `later` delta.
    pub(crate) fn merge(&mut self, later: ChatDelta) {
        self.ts = self.ts.max(later.ts);
        self.position = self.position.max(later.position);
        if later.reset {
            self.reset = true;
            self.unread = later.unread;
        } else {
            self.unread += later.unread;
        }
        if later.push_name.is_some() {
            self.push_name = later.push_name;
        }
    }
}

/// Chat id → delta.
pub(crate) type Deltas = HashMap<String, ChatDelta>;

/// Fold `later` into `into`.
pub(crate) fn merge_all(into: &mut Deltas, later: Deltas) {
    for (chat, d) in later {
        match into.get_mut(&chat) {
            Some(e) => e.merge(d),
            None => {
                into.insert(chat, d);
            }
        }
    }
}

/// History deltas not yet applied to `chats`.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    per_account: HashMap<String, Deltas>,
    chunks: usize,
    /// `accounts.chat_stats_dirty` is set (committed) for the accounts with deltas.
    marked: bool,
}

/// What a transaction did with a chunk's deltas, recorded in [`Pending`] once it commits.
#[derive(Debug)]
pub(crate) enum Step {
    /// Applied live, together with the pending deltas of these chats.
    Live(Vec<String>),
    /// Applied with every pending delta of the account.
    Flushed,
    /// Kept for later.
    Deferred(Deltas),
}

impl Pending {
    /// Inside `tx`: apply a chunk's `deltas` now (live messages, with any pending deltas of the
    /// same chats; the last chunk of a history page, or every [`FLUSH_CHUNKS`]th, with all
    /// pending ones) or defer them, marking the statistics dirty.
    pub(crate) async fn stage(
        &self,
        tx: &impl GenericClient,
        account: &str,
        live: bool,
        last: bool,
        deltas: Deltas,
    ) -> anyhow::Result<Step> {
        let pending = self.per_account.get(account);
        if live {
            let (now, step) = self.live(account, deltas);
            apply(tx, account, &now).await?;
            return Ok(step);
        }
        if last || self.chunks + 1 >= FLUSH_CHUNKS {
            let mut all = pending.cloned().unwrap_or_default();
            merge_all(&mut all, deltas);
            apply(tx, account, &all).await?;
            let others = self
                .per_account
                .iter()
                .any(|(a, d)| a != account && !d.is_empty());
            if self.marked && !others {
                set_dirty(tx, account, false).await?;
            }
            return Ok(Step::Flushed);
        }
        if !self.marked {
            set_dirty(tx, account, true).await?;
        }
        Ok(Step::Deferred(deltas))
    }

    /// History chunks deferred since the last flush.
    pub(crate) fn chunks(&self) -> usize {
        self.chunks
    }

    /// Set `account`'s `chat_stats_dirty` now (committed on its own) unless it is set: for
    /// chunks whose deltas will be deferred by a transaction that does not [`Pending::stage`]
    /// them (one stored beside others must not write the same row as they do).
    pub(crate) async fn mark_dirty(&mut self, pool: &Pool, account: &str) -> anyhow::Result<()> {
        if !self.marked {
            set_dirty(&pool.get().await?, account, true).await?;
            self.marked = true;
        }
        Ok(())
    }

    /// What a live transaction applies: its `deltas` with the pending deltas of the same
    /// chats folded in, and the step to record once it commits.
    pub(crate) fn live(&self, account: &str, deltas: Deltas) -> (Deltas, Step) {
        let pending = self.per_account.get(account);
        let mut now = Deltas::new();
        for chat in deltas.keys() {
            if let Some(p) = pending.and_then(|p| p.get(chat)) {
                now.insert(chat.clone(), p.clone());
            }
        }
        let merged_in: Vec<String> = now.keys().cloned().collect();
        merge_all(&mut now, deltas);
        (now, Step::Live(merged_in))
    }

    /// Fold the pending deltas of chats merged away into the chats that absorbed them
    /// (`merged`: kept chat → chats merged into it).
    pub(crate) fn repoint(&mut self, account: &str, merged: &HashMap<String, Vec<String>>) {
        let Some(pending) = self.per_account.get_mut(account) else {
            return;
        };
        for (keep, gone) in merged {
            for g in gone {
                if let Some(d) = pending.remove(g) {
                    match pending.get_mut(keep) {
                        Some(e) => e.merge(d),
                        None => {
                            pending.insert(keep.clone(), d);
                        }
                    }
                }
            }
        }
    }

    /// The transaction that staged `step` committed.
    pub(crate) fn committed(&mut self, account: &str, step: Step) {
        match step {
            Step::Live(chats) => {
                if let Some(p) = self.per_account.get_mut(account) {
                    for chat in chats {
                        p.remove(&chat);
                    }
                }
            }
            Step::Flushed => {
                self.per_account.remove(account);
                self.chunks = 0;
                if self.per_account.values().all(Deltas::is_empty) {
                    self.marked = false;
                }
            }
            Step::Deferred(deltas) => {
                self.marked = true;
                self.chunks += 1;
                merge_all(
                    self.per_account.entry(account.to_owned()).or_default(),
                    deltas,
                );
            }
        }
    }

    /// Apply every pending delta and clear the dirty mark (after history pages stored in
    /// lanes, and at shutdown).
    pub(crate) async fn flush_all(&mut self, pool: &Pool) -> anyhow::Result<()> {
        if !self.marked && self.per_account.values().all(Deltas::is_empty) {
            return Ok(());
        }
        for (account, deltas) in &self.per_account {
            apply_halves(pool, account, deltas).await?;
        }
        // Cleared only after every half committed: a crash in between leaves it set, and the
        // next start recomputes.
        let db = pool.get().await?;
        for account in self.per_account.keys() {
            set_dirty(&db, account, false).await?;
        }
        *self = Self::default();
        Ok(())
    }
}

/// Mark (or clear) that `account`'s chats' statistics lag their messages.
pub(crate) async fn set_dirty(
    tx: &impl GenericClient,
    account: &str,
    dirty: bool,
) -> anyhow::Result<()> {
    let stmt = tx
        .prepare_cached("update accounts set chat_stats_dirty = $2 where account_id = $1")
        .await?;
    tx.execute(&stmt, &[&account, &dirty]).await?;
    Ok(())
}

/// After a crash with deltas pending: recompute every chat of `account`'s latest message time
/// and position from its messages, and clear the mark. Returns whether a repair was needed.
pub(crate) async fn recompute(db: &impl GenericClient, account: &str) -> anyhow::Result<bool> {
    let dirty = db
        .query_opt(
            "select chat_stats_dirty from accounts where account_id = $1",
            &[&account],
        )
        .await?
        .is_some_and(|r| r.get::<_, bool>(0));
    if !dirty {
        return Ok(false);
    }
    db.execute(
        "update chats c set last_message_at = s.ts, last_position = s.pos
           from (select chat_id, max(ts) as ts, max(position) as pos
                   from messages where account_id = $1 group by chat_id) s
          where c.account_id = $1 and c.chat_id = s.chat_id
            and (c.last_message_at is distinct from s.ts or c.last_position is distinct from s.pos)",
        &[&account],
    )
    .await?;
    set_dirty(db, account, false).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_merge_in_order() {
        let t1: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        let t2: DateTime<Utc> = "2026-01-02T00:00:00Z".parse().unwrap();
        let mut d = ChatDelta {
            ts: Some(t2),
            position: Some(5),
            unread: 2,
            ..Default::default()
        };
        d.merge(ChatDelta {
            ts: Some(t1),
            position: Some(9),
            unread: 1,
            push_name: Some("Ana".into()),
            ..Default::default()
        });
        assert_eq!((d.ts, d.position, d.unread), (Some(t2), Some(9), 3));
        d.merge(ChatDelta {
            reset: true,
            ..Default::default()
        });
        assert_eq!(
            (d.unread, d.reset, d.push_name.as_deref()),
            (0, true, Some("Ana"))
        );
    }
}
