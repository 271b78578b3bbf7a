//! The newest matches of whole words through the keys of migration 0025 (docs/search.md):
//! probes of "these words, in this time bucket (and this chat)", newest bucket first, until the
//! page is full; or, for words with few matches, one probe for all of them.
//!
//! Each probe sits behind `offset 0`, a fence the planner does not look through nor push
//! conditions into: it holds only the words and keys, so it is planned alone, as the index
//! probe it is, whatever else the search filters on and whatever the parameters (seen with
//! the page's limit, the planner walked inside each probe: seconds instead of a millisecond;
//! seeing the chat's id in a generic plan, it read the whole chat through its time index at
//! each probe). The other conditions test the probe's few rows.
//! The probes are the inner side of a nested loop over the buckets, newest first, so the limit
//! stops the loop as soon as the page is full; a bucket's matches are sorted alone.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::wire::search::SearchHit;

use super::plan::Plan;
use super::stats::Range;
use super::{COLS, Filters, JOINS, OUTER, Params, TextQuery, hit_filter};
use crate::viewer::Viewer;

/// [`super::messages`] for whole words, read as `plan` says; bucket probes carry the chat's
/// key when `chat_key` (a whole read always does: it narrows the rows fetched).
#[allow(clippy::too_many_arguments)]
pub(super) async fn messages(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    q: &TextQuery,
    f: &Filters<'_>,
    plan: Plan,
    chat_key: bool,
    limit: u32,
) -> anyhow::Result<Vec<SearchHit>> {
    let mut p = Params::default();
    let (tsq, filter) = hit_filter(viewer, account, q, f, &mut p);
    let chat = f.chat_id.map(|c| p.push(c.to_owned()));
    // Without the key the chat is still filtered on each row (`filter`).
    let chat_key = chat
        .as_ref()
        .filter(|_| chat_key || plan == Plan::Whole)
        .map(|c| format!("quote_literal(search_chat_key({c}))"));
    let limit = p.push_opaque(i64::from(limit));
    let matches = match plan {
        Plan::Whole => {
            let keys = chat_key.map_or(String::new(), |k| {
                format!(" and m.search_keys @@ ({k})::tsquery")
            });
            format!(
                "select m.* from (select {COLS}, m.private from messages m, s
                                   where m.search @@ s.q{keys} offset 0) m
                  where {filter}
                  order by m.ts desc, m.position desc limit {limit}"
            )
        }
        Plan::Buckets(shift) => {
            let shift = p.push(i32::from(shift));
            let bucket = format!("quote_literal(search_bucket_key({shift}, b.n))");
            let keys = chat_key.map_or(bucket.clone(), |k| format!("{bucket} || ' & ' || {k}"));
            let (newest, oldest) = ends(super::range(viewer, f), account, chat.as_deref(), &mut p);
            format!(
                "select x.* from generate_series(search_bucket({shift}, {newest}),
                                                 search_bucket({shift}, {oldest}), -1) b(n),
                   lateral (select m.* from (select {COLS}, m.private from messages m, s
                                              where m.search @@ s.q
                                                and m.search_keys @@ ({keys})::tsquery
                                             offset 0) m
                             where {filter}
                             order by m.ts desc, m.position desc) x
                 limit {limit}"
            )
        }
    };
    let sql = format!(
        "with s as materialized (select {tsq} as q)
         {OUTER} ({matches}) h {JOINS}, (select 0::int8 as count) n
         order by h.ts desc, h.position desc"
    );
    super::hits(db, &sql, &p, q).await
}

/// The SQL of the newest and oldest time a match can have: the archive's (or the chat's)
/// newest and oldest message, narrowed by the search's `range` (its own dates, the scope's,
/// the paging anchor). Each end of the archive is one probe of a time index.
fn ends(range: Range, account: &str, chat: Option<&str>, p: &mut Params) -> (String, String) {
    let whose = match chat {
        Some(c) => format!("chat_id = {c}"),
        None => format!("account_id = {}", p.push(account.to_owned())),
    };
    let end = |agg: &str, pick: &str, bound: Option<DateTime<Utc>>, p: &mut Params| {
        let archive = format!("(select {agg}(ts) from messages where {whose})");
        match bound {
            Some(t) => format!("{pick}({archive}, {})", p.push(t)),
            None => archive,
        }
    };
    (
        end("max", "least", range.until, p),
        end("min", "greatest", range.since, p),
    )
}
