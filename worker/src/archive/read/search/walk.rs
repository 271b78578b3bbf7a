//! A search with a prefix (`amanh*`): the word index's partial match ORs the posting lists of
//! every word with that prefix before it can intersect them with a key, so buckets do not bound
//! its cost (docs/search.md). It reads at most [`CAP`] matches from the word index; past that it
//! walks the archive newest first and tests every message on the way.

use deadpool_postgres::GenericClient;
use wazap_shared::wire::search::SearchHit;

use super::{COLS, Filters, JOINS, OUTER, Params, TextQuery, hit_filter, to_hit};
use crate::viewer::Viewer;

/// Hits the word index may return before a search walks by time instead. Hits lie scattered
/// over the heap (a page each), the newest messages lie together: 1,000 hits cost ~1,000 page
/// reads; a walk for 20 of ≥ 1,000 hits in 1M messages tests ≤ 20,000 clustered rows.
const CAP: i64 = 1_000;

/// [`super::messages`] for a query with a prefix.
pub(super) async fn messages(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    q: &TextQuery,
    f: &Filters<'_>,
    limit: u32,
) -> anyhow::Result<Vec<SearchHit>> {
    let mut p = Params::default();
    let (tsq, filter) = hit_filter(viewer, account, q, f, &mut p);
    let limit = p.push(i64::from(limit));
    // First the word index alone: at most CAP hits, then the newest of them. A rare word ends
    // here (its few heap rows are all that is read). The query sits in its own materialized
    // CTE so the planner cannot see the words: seeing a prefix, it over-estimates the hits and
    // reads the table in order until CAP of them turn up.
    // The page size is read through a sub-select, as `Params::push_opaque` does (the walk
    // below shares the parameter and must see it): the words, hidden in `s`, never shape
    // this plan, and a visible limit made Postgres plan every search anew (dearer than a
    // rare word's execution).
    let by_word = format!(
        "with s as materialized (select {tsq} as q),
              w as materialized (select {COLS} from messages m, s
                                 where m.search @@ s.q and {filter} limit {CAP})
         {OUTER} (select * from w order by ts desc, position desc limit (select {limit}::int8)) h {JOINS},
         (select count(*) from w) n
         order by h.ts desc, h.position desc"
    );
    let stmt = db.prepare_cached(&by_word).await?;
    let rows = db.query(&stmt, &p.refs()).await?;
    if rows.first().is_none_or(|r| r.get::<_, i64>(15) < CAP) {
        return Ok(rows.iter().map(|r| to_hit(r, q)).collect());
    }
    // A common prefix (CAP hits or more): walking the archive newest first (messages_recent,
    // or messages_chat_ts in one chat) reaches `limit` hits after about limit × N / hits
    // rows, instead of sorting every hit's heap row. This statement keeps its custom plans:
    // only one that sees the words chooses the walk (a generic plan guesses few hits and
    // reads them all through the word index, many times slower for a common word).
    let by_time = format!(
        "{OUTER} (select {COLS} from messages m, (select {tsq} as q) s
                   where m.search @@ s.q and {filter}
                   order by m.ts desc, m.position desc limit {limit}) h {JOINS},
         (select {CAP}::int8 as count) n
         order by h.ts desc, h.position desc"
    );
    super::hits(db, &by_time, &p, q).await
}
