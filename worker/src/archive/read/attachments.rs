//! The attachment queries: `search_attachments` (files by name or caption, kind, media type
//! and dates) and `get_attachment`'s lookup. Like every read they filter by the [`Viewer`]'s
//! scope and the archive policy, and never show story files or the files of `#private` or
//! deleted messages.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::search::AttachmentHit;

use super::search::{Before, Filters, kind_names, parse_query, push_filters, tsquery_sql};
use super::{Params, contains_pattern};
use crate::viewer::Viewer;

/// Attachment filters beyond [`Filters`].
#[derive(Debug, Clone, Default)]
pub(crate) struct AttachmentFilters<'a> {
    /// Text the file name or caption contains.
    pub(crate) text: Option<&'a str>,
    /// An exact media type, or `family/*`.
    pub(crate) mime_type: Option<&'a str>,
}

/// The paging anchor of attachment `attachment_id` in `account`.
pub(crate) async fn attachment_anchor(
    db: &impl GenericClient,
    account: &str,
    attachment_id: &str,
) -> anyhow::Result<Option<DateTime<Utc>>> {
    let stmt = db
        .prepare_cached(
            "select ts from attachments
              where account_id = $1 and attachment_id = $2 and not story",
        )
        .await?;
    Ok(db
        .query_opt(&stmt, &[&account, &attachment_id])
        .await?
        .map(|r| r.get(0)))
}

/// The newest `limit` files of `account` (never of stories, private or deleted messages, or
/// outside the viewer's scope) matching the filters; newest first.
///
/// A query matches a file whose name contains it (case-insensitive) or whose caption — the
/// message's text — holds its words as `search_messages` reads them (each word whole, `word*`
/// a prefix). Both sides go through an index, so the cost follows the hits, not the archive:
/// - names through the trigram index `attachments_filename` (migration 0024);
/// - captions through `messages_caption_search`, a word index over the messages of the kinds
///   that carry a file only, so a word common in chat text but rare in captions reads only
///   its captions (the connector attaches files to these kinds alone).
///
/// Each side stops at [`CAP`] candidates before the scope and filters are applied. Under the
/// cap the newest `limit` of the candidates are the answer; a side that reaches it (a name
/// part or caption word in ≥ 1,000 files) makes the search walk the files newest first
/// instead (`attachments_recent`), which reaches `limit` hits after about
/// `limit × files / hits` files — unless the scope or filters leave few of those hits, when
/// the walk can read every file of the account. A query with no run of three letters or
/// digits gives the trigram index nothing to look up: it reads the whole name index (one
/// entry per file, not per message).
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "search.attachments"))]
pub(crate) async fn attachments(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    f: &Filters<'_>,
    af: &AttachmentFilters<'_>,
    limit: u32,
) -> anyhow::Result<Vec<AttachmentHit>> {
    let mut p = Params::default();
    let acc = p.push(account.to_owned());
    let mut cond = push_filters(f, viewer, "a.ts", "m.chat_id", &mut p);
    if let Some(kinds) = f.kinds {
        cond.push_str(&format!(" and a.kind = any({})", p.push(kind_names(kinds))));
    }
    if let Some(mime) = af.mime_type {
        match mime.strip_suffix("/*") {
            Some(family) => cond.push_str(&format!(
                " and a.mime_type like {}",
                p.push(format!("{}/%", family.replace(['%', '_', '\\'], "")))
            )),
            None => cond.push_str(&format!(" and a.mime_type = {}", p.push(mime.to_owned()))),
        }
    }
    if let Some((ts, Before::Attachment(id))) = &f.before {
        let (t, id) = (p.push(*ts), p.push(id.clone()));
        cond.push_str(&format!(" and (a.ts, a.attachment_id) < ({t}, {id})"));
    }
    let Some(text) = af.text else {
        let limit = p.push(i64::from(limit));
        let sql = format!(
            "{SELECT} from attachments a {JOIN} where {} order by a.ts desc, a.attachment_id desc limit {limit}",
            visible(&acc, &cond)
        );
        let stmt = db.prepare_cached(&sql).await?;
        return Ok(db
            .query(&stmt, &p.refs())
            .await?
            .iter()
            .map(to_hit)
            .collect());
    };
    let pat = p.push(contains_pattern(text));
    // No words (only punctuation): the caption side matches nothing.
    let (tsq, caption) = match parse_query(text) {
        Some(q) => (tsquery_sql(&q, &mut p), "m.search @@ s.q"),
        None => ("null::tsquery".to_owned(), "false"),
    };
    let limit = p.push(i64::from(limit));
    let visible = visible(&acc, &cond);
    // The words and the name pattern sit in a materialized CTE and the page size behind a
    // sub-select, so none of them shapes the plan: one generic plan serves every query
    // (planning anew at each call cost more than running a rare query), and it is the plan
    // of every custom call. Each candidate's file and message are looked up one by one
    // (fenced by `offset 0`): guessing ~1,000 candidates, the planner hashed the whole file
    // table for one (17 ms against 2 at 1M files, #29).
    let by_index = format!(
        "with s as materialized (select {tsq} as q, {pat}::text as name),
              n as materialized (
                select a.attachment_id from attachments a, s
                 where a.account_id = {acc} and not a.story and a.filename ilike s.name
                 limit {CAP}),
              c as materialized (
                select m.message_id from messages m, s
                 where m.account_id = {acc} and m.kind in {FILE_MESSAGES} and {caption}
                   and not m.private
                 limit {CAP}),
              ids as (select attachment_id from n
                      union
                      select a.attachment_id from c
                        join attachments a on a.account_id = {acc} and a.message_id = c.message_id)
         select h.*, k.n, k.c
           from (select (select count(*) from n) n, (select count(*) from c) c) k
           left join lateral (
             select x.* from ids, lateral (
               {SELECT} from attachments a {JOIN}
                where a.attachment_id = ids.attachment_id and {visible} offset 0) x
              order by x.ts desc, x.attachment_id desc
              limit (select {limit}::int8)) h on true
          order by h.ts desc, h.attachment_id desc"
    );
    let stmt = db.prepare_cached(&by_index).await?;
    let rows = db.query(&stmt, &p.refs()).await?;
    let capped = rows
        .first()
        .is_some_and(|r| r.get::<_, i64>(9) >= CAP || r.get::<_, i64>(10) >= CAP);
    if !capped {
        return Ok(rows
            .iter()
            .filter(|r| r.get::<_, Option<String>>(0).is_some())
            .map(to_hit)
            .collect());
    }
    // A common name part or caption word: walk the files newest first, testing each. This
    // statement keeps its custom plans (only one that sees the query chooses the walk).
    let by_time = format!(
        "{SELECT} from attachments a {JOIN}, (select {tsq} as q) s
          where {visible}
            and (a.filename ilike {pat} or (m.kind in {FILE_MESSAGES} and {caption}))
          order by a.ts desc, a.attachment_id desc
          limit {limit}"
    );
    let stmt = db.prepare_cached(&by_time).await?;
    Ok(db
        .query(&stmt, &p.refs())
        .await?
        .iter()
        .map(to_hit)
        .collect())
}

/// Candidates one side of an attachment query may return before the search walks by time.
const CAP: i64 = 1_000;

/// The message kinds that carry a file, exactly as migration 0024's `messages_caption_search`
/// names them (the planner uses that partial index only for this very condition).
const FILE_MESSAGES: &str =
    "('image', 'video', 'audio', 'voice', 'document', 'sticker', 'view_once')";

/// The columns of an attachment hit (`a`, its message `m`), as [`to_hit`] reads them.
const SELECT: &str = "select a.attachment_id, a.message_id, m.chat_id, a.kind, a.mime_type,
        a.filename, a.size, a.ts, m.text";

/// The join of attachments `a` to their messages `m`.
const JOIN: &str = "join messages m on m.account_id = a.account_id and m.message_id = a.message_id";

/// The condition every listed file meets: of `acc`, no story's, its message neither private
/// nor deleted, and `cond` (scope and filters).
fn visible(acc: &str, cond: &str) -> String {
    format!(
        "a.account_id = {acc} and not a.story and not m.private and m.kind <> 'deleted' and {cond}"
    )
}

/// A row of [`SELECT`] → a hit.
fn to_hit(r: &tokio_postgres::Row) -> AttachmentHit {
    AttachmentHit {
        attachment_id: r.get(0),
        message_id: r.get(1),
        chat_id: r.get(2),
        kind: MessageType::parse(r.get(3)).unwrap_or(MessageType::Document),
        mime_type: r.get(4),
        filename: r.get(5),
        size: r
            .get::<_, Option<i64>>(6)
            .and_then(|s| u64::try_from(s).ok()),
        timestamp: r.get(7),
        caption: Some(r.get::<_, String>(8)).filter(|t| !t.is_empty()),
    }
}

/// An attachment as `get_attachment` sees it, before its bytes.
#[derive(Debug, Clone)]
pub(crate) struct StoredAttachment {
    /// Its account.
    pub(crate) account_id: String,
    /// Its id.
    pub(crate) attachment_id: String,
    /// Its message.
    pub(crate) message_id: String,
    /// The message's chat.
    pub(crate) chat_id: String,
    /// Its kind.
    pub(crate) kind: MessageType,
    /// Its media type.
    pub(crate) mime_type: String,
    /// Its file name.
    pub(crate) filename: Option<String>,
    /// The size WhatsApp announced, where known.
    pub(crate) size: Option<u64>,
    /// When it was sent.
    pub(crate) ts: DateTime<Utc>,
    /// The size of the cached bytes, when they are cached.
    pub(crate) cached: Option<u64>,
    /// The cached bytes, when they are cached and no larger than the lookup's limit.
    pub(crate) bytes: Option<Vec<u8>>,
}

/// The attachment `attachment_id` in `account` (the one its id names), when the viewer may
/// read its message and that message is neither private nor deleted, and the file is not a
/// story's; with its cached bytes when they are at most `max` bytes long — one round trip for a
/// cached file. The scope is applied in the query (so no bytes are read for a file the viewer
/// may not see) and again here.
pub(crate) async fn attachment(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    attachment_id: &str,
    max: u64,
) -> anyhow::Result<Option<StoredAttachment>> {
    let mut p = Params::default();
    let id = p.push(attachment_id.to_owned());
    let max = p.push(i64::try_from(max).unwrap_or(i64::MAX));
    let account = p.push(account.to_owned());
    let cond = push_filters(&Filters::default(), viewer, "m.ts", "m.chat_id", &mut p);
    let sql = format!(
        "select a.account_id, a.attachment_id, a.message_id, m.chat_id, a.kind, a.mime_type,
                a.filename, a.size, m.ts, octet_length(a.data),
                case when octet_length(a.data) <= {max}::int8 then a.data end
           from attachments a
           join messages m on m.account_id = a.account_id and m.message_id = a.message_id
          where a.account_id = {account}
            and a.attachment_id = {id} and not a.story and not m.private
            and m.kind <> 'deleted' and {cond}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    let found = db.query_opt(&stmt, &p.refs()).await?.map(|r| {
        let size = |i| {
            r.get::<_, Option<i64>>(i)
                .and_then(|s| u64::try_from(s).ok())
        };
        let cached = r
            .get::<_, Option<i32>>(9)
            .and_then(|s| u64::try_from(s).ok());
        StoredAttachment {
            account_id: r.get(0),
            attachment_id: r.get(1),
            message_id: r.get(2),
            chat_id: r.get(3),
            kind: MessageType::parse(r.get(4)).unwrap_or(MessageType::Document),
            mime_type: r.get(5),
            filename: r.get(6),
            size: size(7),
            ts: r.get(8),
            cached,
            bytes: r.get(10),
        }
    });
    Ok(found.filter(|a| viewer.can_read(&a.chat_id, a.ts)))
}

/// Keep downloaded bytes, so the next `get_attachment` needs no download.
pub(crate) async fn cache_bytes(
    db: &impl GenericClient,
    account: &str,
    attachment_id: &str,
    bytes: &[u8],
) -> anyhow::Result<()> {
    let stmt = db
        .prepare_cached(
            "update attachments set data = $3::bytea, size = coalesce(size, octet_length($3::bytea))
              where account_id = $1 and attachment_id = $2 and data is null",
        )
        .await?;
    db.execute(&stmt, &[&account, &attachment_id, &bytes])
        .await?;
    Ok(())
}
