//! The planner's statistics of the archive, as [`super::plan`] needs them: how many messages
//! hold words, over how much time, and the share of them each common word (and each busy
//! chat's key) is in. Postgres keeps per-lexeme frequencies of a `tsvector` column
//! (`most_common_elems`, refreshed by every `ANALYZE`, see `db::statistics`); they are read
//! again at most every [`MAX_AGE`], in the background, so no search waits for them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;

use super::plan::Estimate;

/// How old the statistics may get before they are read again.
const MAX_AGE: Duration = Duration::from_secs(30);
/// The same while there are none (the archive was never analyzed: it is new, and the
/// statistics refresher analyzes it as soon as it grows).
const MAX_AGE_NONE: Duration = Duration::from_secs(1);

/// The statistics the searches plan with; cheap to clone, shared by every handler.
#[derive(Clone, Default)]
pub(crate) struct SearchStats(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// The latest snapshot, and when to read the next one.
    current: RwLock<Option<(Instant, Arc<Snapshot>)>>,
    loading: AtomicBool,
}

/// One reading of the statistics.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// Messages with words.
    worded: f64,
    /// The oldest and newest message time (Unix seconds), from the time column's histogram.
    oldest: f64,
    newest: f64,
    /// Share of the messages with words that hold each tracked lexeme.
    words: HashMap<String, f64>,
    /// The least tracked share: an untracked lexeme's is smaller.
    words_floor: f64,
    /// Share of all messages in each chat whose key is tracked (the busy ones).
    chats: HashMap<String, f64>,
    /// The least tracked key share: an untracked chat's is smaller.
    chats_floor: f64,
}

impl SearchStats {
    /// The latest snapshot (`None` before the first reading, or while the archive was never
    /// analyzed); starts reading a new one when it is older than [`MAX_AGE`] ([`MAX_AGE_NONE`]
    /// while there is none).
    pub(crate) fn get(&self, pool: &Pool) -> Option<Arc<Snapshot>> {
        let current = self
            .0
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let stale = current
            .as_ref()
            .is_none_or(|(next, _)| Instant::now() >= *next);
        if stale && !self.0.loading.swap(true, Ordering::AcqRel) {
            let (this, pool) = (self.clone(), pool.clone());
            tokio::spawn(async move {
                let read = load(&pool).await;
                let mut current = this.0.current.write().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                *current = match read {
                    Ok(Some(s)) => Some((now + MAX_AGE, Arc::new(s))),
                    Ok(None) => Some((now + MAX_AGE_NONE, Arc::default())),
                    // The last snapshot stays; tried again (and said again) after MAX_AGE.
                    Err(e) => {
                        tracing::warn!(error = %crate::error::redacted(e.as_ref()), "reading search statistics failed");
                        let last = current.take().map(|(_, s)| s).unwrap_or_default();
                        Some((now + MAX_AGE, last))
                    }
                };
                drop(current);
                this.0.loading.store(false, Ordering::Release);
            });
        }
        current.map(|(_, s)| s).filter(|s| s.worded > 0.0)
    }
}

impl Snapshot {
    /// What the statistics say about matches of every one of `lexemes` (in chat `chat` when
    /// given) within `range`.
    pub(crate) fn estimate(&self, lexemes: &[&str], chat: Option<&str>, range: Range) -> Estimate {
        let mut at_most = false;
        let mut share: f64 = 1.0;
        for l in lexemes {
            // Matches of several words are at most those of the rarest.
            share = share.min(self.words.get(*l).copied().unwrap_or_else(|| {
                at_most = true;
                self.words_floor
            }));
        }
        if let Some(chat) = chat {
            share *= self.chats.get(chat).copied().unwrap_or_else(|| {
                at_most = true;
                self.chats_floor
            });
        }
        let span = (self.newest - self.oldest).max(1.0);
        let clamp = |t: Option<DateTime<Utc>>, or: f64| {
            t.map_or(or, |t| {
                (t.timestamp() as f64).clamp(self.oldest, self.newest)
            })
        };
        let range = (clamp(range.until, self.newest) - clamp(range.since, self.oldest)).max(0.0);
        Estimate {
            rate: self.worded * share / span,
            at_most,
            span,
            range,
        }
    }

    /// Whether bucket probes should carry the key of chat `chat` beside `lexemes`. Not when a
    /// word is rarer than any the statistics track and the chat is one of the busy ones they
    /// do: the word's few matches are quickly tested against the chat in SQL, while each
    /// probe carrying the key also walks the chat's long list in the index (at 5M messages,
    /// 16 probes for a word of 100 matches in the busiest chat took 4.6 ms with the key).
    pub(crate) fn chat_key_helps(&self, lexemes: &[&str], chat: &str) -> bool {
        let rare_word = lexemes.iter().any(|l| !self.words.contains_key(*l));
        !(rare_word && self.chats.contains_key(chat))
    }
}

/// The time a search covers: from `since`, before `until` (either open).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Range {
    pub(crate) since: Option<DateTime<Utc>>,
    pub(crate) until: Option<DateTime<Utc>>,
}

/// Read the statistics; `None` while `messages` was never analyzed.
async fn load(pool: &Pool) -> anyhow::Result<Option<Snapshot>> {
    let db = pool.get().await?;
    let stats = |column: &str| {
        format!(
            "(select s.most_common_elems::text::text[] as elems,
                     s.most_common_elem_freqs::float8[] as freqs, s.null_frac::float8 as nulls
                from pg_stats s where s.schemaname = current_schema()
                 and s.tablename = 'messages' and s.attname = '{column}')"
        )
    };
    let row = db
        .query_opt(
            &format!(
                "select c.reltuples::float8 * (1 - coalesce(w.nulls, 1)), w.elems, w.freqs,
                        k.freqs[coalesce(array_length(k.elems, 1), 0) + 1],
                        extract(epoch from h.b[1])::float8,
                        extract(epoch from h.b[array_upper(h.b, 1)])::float8
                   from pg_class c
                   left join {} w on true
                   left join {} k on true
                   left join lateral (select histogram_bounds::text::timestamptz[] as b
                        from pg_stats where schemaname = current_schema()
                         and tablename = 'messages' and attname = 'ts') h on true
                  where c.oid = 'messages'::regclass",
                stats("search"),
                stats("search_keys"),
            ),
            &[],
        )
        .await?;
    let Some(r) = row else { return Ok(None) };
    let (Some(oldest), Some(newest)) = (r.get::<_, Option<f64>>(4), r.get::<_, Option<f64>>(5))
    else {
        return Ok(None);
    };
    let (words, words_floor) = shares(r.get(1), r.get(2));
    // The busy chats: those whose key the statistics track (the key rule is SQL's, 0025).
    let chats = db
        .query(
            &format!(
                "select c.chat_id, f.share from {} k,
                        unnest(k.elems, k.freqs) f(key, share)
                   join chats c on search_chat_key(c.chat_id) = f.key",
                stats("search_keys")
            ),
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    Ok(Some(Snapshot {
        worded: r.get::<_, Option<f64>>(0).unwrap_or(0.0).max(0.0),
        oldest,
        newest,
        words,
        words_floor,
        chats,
        chats_floor: r.get::<_, Option<f64>>(3).unwrap_or(1.0),
    }))
}

/// Each tracked element's share, and the least share tracked (the frequency list carries it
/// after the per-element ones; 1 when nothing is tracked: an element could be anywhere).
fn shares(elems: Option<Vec<String>>, freqs: Option<Vec<f64>>) -> (HashMap<String, f64>, f64) {
    let (elems, freqs) = (elems.unwrap_or_default(), freqs.unwrap_or_default());
    let floor = freqs.get(elems.len()).copied().unwrap_or(1.0);
    (elems.into_iter().zip(freqs).collect(), floor)
}
