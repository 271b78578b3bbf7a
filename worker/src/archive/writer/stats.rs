//! Chat statistics (`last_message_at`, `last_position`, `unread_count`, `push_name`) kept on
//! `chats` for the chat list. Updating thousands of chat rows per history chunk would cost more
//! than inserting the messages, so the writer applies live deltas at once and accumulates
//! history deltas, flushing them every [`FLUSH_CHUNKS`] chunks and at the end of each history
//! page. While deltas are pending, `archive_meta.chat_stats_dirty` is set in the same
//! transactions, so a crash is repaired at the next start by [`recompute`].

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::types::ToSql;

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
    /// `archive_meta.chat_stats_dirty` is set (committed).
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
                set_dirty(tx, false).await?;
            }
            return Ok(Step::Flushed);
        }
        if !self.marked {
            set_dirty(tx, true).await?;
        }
        Ok(Step::Deferred(deltas))
    }

    /// History chunks deferred since the last flush.
    pub(crate) fn chunks(&self) -> usize {
        self.chunks
    }

    /// Set `archive_meta.chat_stats_dirty` now (committed on its own) unless it is set: for
    /// chunks whose deltas will be deferred by a transaction that does not [`Pending::stage`]
    /// them (one stored beside others must not write the same row as they do).
    pub(crate) async fn mark_dirty(&mut self, pool: &Pool) -> anyhow::Result<()> {
        if !self.marked {
            set_dirty(&pool.get().await?, true).await?;
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
        set_dirty(&pool.get().await?, false).await?;
        *self = Self::default();
        Ok(())
    }
}

/// Deltas below this many chats are applied in one statement.
const HALVES_FROM: usize = 256;

/// Apply history `deltas` in two halves on two connections at once: a history page can touch
/// thousands of chats, and this is the one step of its ingest nothing else runs beside. The
/// halves share no chat, and history deltas can be applied twice (they carry no unread
/// count), so a half that fails leaves the whole to be applied again.
async fn apply_halves(pool: &Pool, account: &str, deltas: &Deltas) -> anyhow::Result<()> {
    if deltas.len() < HALVES_FROM {
        return apply(&pool.get().await?, account, deltas).await;
    }
    let (a, b) = (pool.get().await?, pool.get().await?);
    let (sa, sb) = (
        a.prepare_cached(APPLY).await?,
        b.prepare_cached(APPLY).await?,
    );
    let (ca, cb) = (
        Columns::of(deltas.iter().step_by(2)),
        Columns::of(deltas.iter().skip(1).step_by(2)),
    );
    let (pa, pb) = (ca.params(&account), cb.params(&account));
    let (ra, rb) = tokio::join!(a.execute(&sa, &pa), b.execute(&sb, &pb));
    ra?;
    rb?;
    Ok(())
}

/// Apply `deltas` to the chats of `account`, touching only rows that change.
pub(crate) async fn apply(
    tx: &impl GenericClient,
    account: &str,
    deltas: &Deltas,
) -> anyhow::Result<()> {
    if deltas.is_empty() {
        return Ok(());
    }
    let stmt = tx.prepare_cached(statement(deltas)).await?;
    let cols = Columns::of(deltas);
    tx.execute(&stmt, &cols.params(&account)).await?;
    Ok(())
}

/// The update of the chat statistics, reading the deltas from `$from` (`u`: chat_id, ts, pos,
/// unread, reset, push_name), touching only rows that change.
macro_rules! apply_sql {
    ($from:literal) => {
        concat!(
            "update chats c set
     last_message_at = greatest(c.last_message_at, u.ts),
     last_position = greatest(c.last_position, u.pos),
     unread_count = case when u.reset then u.unread else c.unread_count + u.unread end,
     push_name = coalesce(u.push_name, c.push_name)
   from ",
            $from,
            "
  where c.account_id = $1 and c.chat_id = u.chat_id
    and ((u.ts is not null and (c.last_message_at is null or u.ts > c.last_message_at))
      or (u.pos is not null and (c.last_position is null or u.pos > c.last_position))
      or u.unread <> 0
      or (u.reset and c.unread_count <> 0)
      or (u.push_name is not null and u.push_name is distinct from c.push_name))"
        )
    };
}

/// The statement [`apply`] runs for several chats, with [`Columns`] as `$2..$7` (arrays).
pub(crate) const APPLY: &str = apply_sql!(
    "unnest($2::text[], $3::timestamptz[], $4::int8[], $5::int4[], $6::bool[],
               $7::text[]) as u(chat_id, ts, pos, unread, reset, push_name)"
);

/// The statement for one chat (a live delivery's usual case), with [`Columns`] as `$2..$7`
/// (scalars). Why a second statement: Postgres plans [`APPLY`] anew at every call, as its
/// custom plan counts the arrays' elements while a generic one guesses 100 rows, and that
/// planning cost twice the update itself; this one keeps its generic plan.
pub(crate) const APPLY_ONE: &str = apply_sql!(
    "(select $2::text as chat_id, $3::timestamptz as ts, $4::int8 as pos,
                $5::int4 as unread, $6::bool as reset, $7::text as push_name) u"
);

/// The statement applying `deltas` (not empty): [`APPLY_ONE`] or [`APPLY`].
pub(crate) fn statement(deltas: &Deltas) -> &'static str {
    if deltas.len() == 1 { APPLY_ONE } else { APPLY }
}

/// Deltas as the parameters of [`statement`]: one element per chat.
pub(crate) struct Columns<'a> {
    chat: Vec<&'a str>,
    ts: Vec<Option<DateTime<Utc>>>,
    pos: Vec<Option<i64>>,
    unread: Vec<i32>,
    reset: Vec<bool>,
    push: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    /// The arrays of `deltas`, one element per chat.
    pub(crate) fn of(deltas: impl IntoIterator<Item = (&'a String, &'a ChatDelta)>) -> Self {
        let deltas = deltas.into_iter();
        let n = deltas.size_hint().0;
        let mut c = Columns {
            chat: Vec::with_capacity(n),
            ts: Vec::with_capacity(n),
            pos: Vec::with_capacity(n),
            unread: Vec::with_capacity(n),
            reset: Vec::with_capacity(n),
            push: Vec::with_capacity(n),
        };
        for (chat, d) in deltas {
            c.chat.push(chat.as_str());
            c.ts.push(d.ts);
            c.pos.push(d.position);
            c.unread.push(d.unread);
            c.reset.push(d.reset);
            c.push.push(d.push_name.as_deref());
        }
        c
    }

    /// The parameters of [`statement`] for `account`: scalars for one chat, else arrays.
    pub(crate) fn params<'p>(&'p self, account: &'p &'p str) -> [&'p (dyn ToSql + Sync); 7] {
        if self.chat.len() == 1 {
            return [
                account,
                &self.chat[0],
                &self.ts[0],
                &self.pos[0],
                &self.unread[0],
                &self.reset[0],
                &self.push[0],
            ];
        }
        [
            account,
            &self.chat,
            &self.ts,
            &self.pos,
            &self.unread,
            &self.reset,
            &self.push,
        ]
    }
}

/// Mark (or clear) that chats' statistics lag their messages.
pub(crate) async fn set_dirty(tx: &impl GenericClient, dirty: bool) -> anyhow::Result<()> {
    let stmt = tx
        .prepare_cached("update archive_meta set chat_stats_dirty = $1")
        .await?;
    tx.execute(&stmt, &[&dirty]).await?;
    Ok(())
}

/// After a crash with deltas pending: recompute every chat's latest message time and position
/// from its messages, and clear the mark. Returns whether a repair was needed.
pub(crate) async fn recompute(db: &impl GenericClient) -> anyhow::Result<bool> {
    let dirty: bool = db
        .query_one("select chat_stats_dirty from archive_meta", &[])
        .await?
        .get(0);
    if !dirty {
        return Ok(false);
    }
    db.execute(
        "update chats c set last_message_at = s.ts, last_position = s.pos
           from (select account_id, chat_id, max(ts) as ts, max(position) as pos
                   from messages group by account_id, chat_id) s
          where c.account_id = s.account_id and c.chat_id = s.chat_id
            and (c.last_message_at is distinct from s.ts or c.last_position is distinct from s.pos)",
        &[],
    )
    .await?;
    db.execute("update archive_meta set chat_stats_dirty = false", &[])
        .await?;
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
