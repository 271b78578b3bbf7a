//! Full-text search over messages (`search_messages`). The agent's words become a tsquery built
//! here from quoted lexemes only (never operators from input), matched against the `search`
//! vector of migration 0010, and read through the word index with the chat and time keys of
//! migration 0025 ([`buckets`], docs/search.md); every query filters by the [`Viewer`]'s scope,
//! the archive policy and `not private`, so `#private` messages and out-of-scope chats never
//! match, count or snippet. The attachment queries (`search_attachments`, `get_attachment`) are in
//! [`super::attachments`].
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::search::SearchHit;
use wazap_shared::wire::{AttachmentInfo, Sender};

use super::snippet::snippet;
use super::{Params, chat_filter, time_filter};
use crate::archive::lexemes::{self, Token};
use crate::viewer::Viewer;
use plan::Plan;
pub(crate) use stats::SearchStats;
use stats::{Range, Snapshot};

mod buckets;
mod plan;
mod stats;
mod walk;

/// Most lexemes one query may hold.
const MAX_TERMS: usize = 16;

/// An agent's query: its terms, and the tsquery text made of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextQuery {
    /// Quoted lexemes cut by [`lexemes::tokens`] (the rule the writer indexes with), `:*` for
    /// prefixes, joined by `&`, cast straight to `tsquery`: e.g. `'reuniao' & 'amanh':* & '🎉'`.
    pub(crate) tsquery: String,
    /// The same terms, for marking them in snippets.
    pub(crate) terms: Vec<Term>,
}

/// One lexeme every hit holds (or, for a prefix, one of its lexemes starts with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Term {
    /// A lexeme as the index holds it.
    pub(crate) lexeme: String,
    /// `word*`: any lexeme starting with it matches.
    pub(crate) prefix: bool,
}

impl Term {
    /// Whether indexed `lexeme` matches this term.
    pub(crate) fn matches(&self, lexeme: &str) -> bool {
        if self.prefix {
            lexeme.starts_with(self.lexeme.as_str())
        } else {
            lexeme == self.lexeme
        }
    }
}

/// Parse the agent's query. Whitespace separates terms; a term ending in `*` is a prefix (its
/// last word); inside a term, punctuation separates words and each emoji is a lexeme of its
/// own. Lexemes never carry a quote, backslash or operator (they are letters, digits or one
/// emoji), so quoting them is enough to keep operators out. `None` when nothing searchable
/// is left.
pub(crate) fn parse_query(query: &str) -> Option<TextQuery> {
    let mut terms: Vec<Term> = Vec::new();
    for word in query.split_whitespace() {
        let prefix = word.ends_with('*');
        let tokens = lexemes::tokens(word.trim_end_matches('*'));
        let last = tokens.len().saturating_sub(1);
        for (i, t) in tokens.iter().enumerate() {
            let term = Term {
                lexeme: t.as_lexeme().into_owned(),
                prefix: matches!(t, Token::Word(_)) && prefix && i == last,
            };
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    terms.truncate(MAX_TERMS);
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| format!("'{}'{}", t.lexeme, if t.prefix { ":*" } else { "" }))
        .collect();
    Some(TextQuery {
        tsquery: quoted.join(" & "),
        terms,
    })
}

/// The SQL tsquery expression of `q`, its parameter pushed onto `p`.
pub(super) fn tsquery_sql(q: &TextQuery, p: &mut Params) -> String {
    format!("({}::text)::tsquery", p.push(q.tsquery.clone()))
}

/// Filters a search takes beside the words.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters<'a> {
    /// Only this chat (already resolved and checked against the scope).
    pub(crate) chat_id: Option<&'a str>,
    /// At or after.
    pub(crate) since: Option<DateTime<Utc>>,
    /// Before.
    pub(crate) until: Option<DateTime<Utc>>,
    /// Only these message types / attachment kinds.
    pub(crate) kinds: Option<&'a [MessageType]>,
    /// Older than this `(ts, tiebreak)` (paging).
    pub(crate) before: Option<(DateTime<Utc>, Before)>,
}

/// The tiebreak of a paging anchor.
#[derive(Debug, Clone)]
pub(crate) enum Before {
    /// A message's archive position.
    Position(i64),
    /// An attachment's id.
    Attachment(String),
}

/// Push the common filters on `alias` (`ts`, `chat_id` columns) onto `cond`.
pub(super) fn push_filters(
    f: &Filters<'_>,
    viewer: &Viewer,
    ts: &str,
    chat: &str,
    p: &mut Params,
) -> String {
    let mut cond = format!(
        "{} and {}",
        chat_filter(viewer, chat, p),
        time_filter(viewer, ts, p)
    );
    if let Some(c) = f.chat_id {
        cond.push_str(&format!(" and {chat} = {}", p.push(c.to_owned())));
    }
    if let Some(s) = f.since {
        cond.push_str(&format!(" and {ts} >= {}", p.push(s)));
    }
    if let Some(u) = f.until {
        cond.push_str(&format!(" and {ts} < {}", p.push(u)));
    }
    cond
}

/// The `types` filter's kinds as strings.
pub(super) fn kind_names(kinds: &[MessageType]) -> Vec<String> {
    kinds.iter().map(|t| t.as_str().to_owned()).collect()
}

/// The paging anchor of message `message_id` in `account`, when the viewer may read it.
pub(crate) async fn message_anchor(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    message_id: &str,
) -> anyhow::Result<Option<(DateTime<Utc>, i64)>> {
    let mut p = Params::default();
    let (acc, id) = (p.push(account.to_owned()), p.push(message_id.to_owned()));
    let cond = push_filters(&Filters::default(), viewer, "ts", "chat_id", &mut p);
    let sql = format!(
        "select ts, position from messages
          where account_id = {acc} and message_id = {id} and {cond}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db
        .query_opt(&stmt, &p.refs())
        .await?
        .map(|r| (r.get(0), r.get(1))))
}

/// The newest `limit` messages of `account` matching `q` and `f` that the viewer may read,
/// never private ones; newest first, each with a snippet. `stats` (none on an archive never
/// analyzed) choose how the word index is read ([`plan`]); a prefix walks ([`walk`]).
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "search.messages"))]
pub(crate) async fn messages(
    db: &impl GenericClient,
    stats: Option<&Snapshot>,
    viewer: &Viewer,
    account: &str,
    q: &TextQuery,
    f: &Filters<'_>,
    limit: u32,
) -> anyhow::Result<Vec<SearchHit>> {
    if q.terms.iter().any(|t| t.prefix) {
        return walk::messages(db, viewer, account, q, f, limit).await;
    }
    let lexemes: Vec<&str> = q.terms.iter().map(|t| t.lexeme.as_str()).collect();
    let (plan, chat_key) = match stats {
        Some(s) => (
            plan::choose(&s.estimate(&lexemes, f.chat_id, range(viewer, f)), limit),
            f.chat_id.is_some_and(|c| s.chat_key_helps(&lexemes, c)),
        ),
        // A new archive: its buckets are few, and so are its matches.
        None => (Plan::Buckets(plan::SHIFTS[2]), f.chat_id.is_some()),
    };
    tracing::debug!(?plan, chat_key, "search plan");
    buckets::messages(db, viewer, account, q, f, plan, chat_key, limit).await
}

/// The time a search of `f` by `viewer` covers: the later start, the earlier end (of its own
/// dates, the scope's and the paging anchor's); the plan is costed and the buckets bounded by it.
fn range(viewer: &Viewer, f: &Filters<'_>) -> Range {
    let anchor = f.before.as_ref().map(|(ts, _)| *ts);
    Range {
        since: f.since.max(viewer.scope.since),
        until: [f.until, viewer.scope.until, anchor]
            .into_iter()
            .flatten()
            .min(),
    }
}

/// The words' tsquery, and the condition every search statement puts on a hit `m` beside the
/// words (pushing their parameters onto `p`): the account, never private, the filters of `f`,
/// the paging anchor.
fn hit_filter(
    viewer: &Viewer,
    account: &str,
    q: &TextQuery,
    f: &Filters<'_>,
    p: &mut Params,
) -> (String, String) {
    let acc = p.push(account.to_owned());
    let tsq = tsquery_sql(q, p);
    let mut cond = push_filters(f, viewer, "m.ts", "m.chat_id", p);
    if let Some(kinds) = f.kinds {
        cond.push_str(&format!(" and m.kind = any({})", p.push(kind_names(kinds))));
    }
    if let Some((ts, Before::Position(pos))) = &f.before {
        let (t, pos) = (p.push(*ts), p.push(*pos));
        cond.push_str(&format!(" and (m.ts, m.position) < ({t}, {pos})"));
    }
    let filter = format!("m.account_id = {acc} and not m.private and {cond}");
    (tsq, filter)
}

/// The hits of search statement `sql` with parameters `p`, for query `q`.
async fn hits(
    db: &impl GenericClient,
    sql: &str,
    p: &Params,
    q: &TextQuery,
) -> anyhow::Result<Vec<SearchHit>> {
    let stmt = db.prepare_cached(sql).await?;
    Ok(db
        .query(&stmt, &p.refs())
        .await?
        .iter()
        .map(|r| to_hit(r, q))
        .collect())
}

/// The columns of a hit, as the select list of the search statements reads them.
const COLS: &str = "m.account_id, m.message_id, m.chat_id, m.position, m.ts, m.kind, m.from_me,
                m.sender_name, m.sender_chat_id, m.text";

/// The select list of the search statements over the hits `h` (column 15: the hit count).
const OUTER: &str = concat!(
    "select h.message_id, h.chat_id, coalesce(c.name, c.push_name, '+' || c.phone),
                h.ts, h.kind, h.from_me, ",
    sender_name!("h"),
    ", coalesce(g.into_chat_id, h.sender_chat_id),
                a.attachment_id, a.kind, a.mime_type, a.filename, a.size, a.seconds,
                h.text, n.count
           from"
);

/// The joins the search statements add to the hits `h`: each a lookup per hit, fenced
/// (`offset 0`) so that it stays one. Seen as plain joins, a page whose size the plan does not
/// know (it is read through a sub-select) was guessed at 200 hits, and every file and chat of
/// the archive was read into a hash table for 20 of them.
const JOINS: &str = "left join lateral (select c.name, c.push_name, c.phone from chats c
        where c.account_id = h.account_id and c.chat_id = h.chat_id offset 0) c on true
   left join lateral (select g.into_chat_id from chat_merges g
        where g.account_id = h.account_id and g.from_chat_id = h.sender_chat_id offset 0) g on true
   left join lateral (select a.attachment_id, a.kind, a.mime_type, a.filename, a.size, a.seconds
        from attachments a
        where a.account_id = h.account_id and a.message_id = h.message_id offset 0) a on true";

/// A search row of query `q` → a hit (rows are never private: the query filters them out).
fn to_hit(r: &tokio_postgres::Row, q: &TextQuery) -> SearchHit {
    let kind = MessageType::parse(r.get(4)).unwrap_or(MessageType::Unknown);
    let from_me: bool = r.get(5);
    let snippet = snippet(r.get::<_, Option<&str>>(14).unwrap_or_default(), &q.terms);
    SearchHit {
        message_id: r.get(0),
        chat_id: r.get(1),
        chat_name: r.get(2),
        timestamp: r.get(3),
        kind,
        from_me,
        sender: Sender {
            name: if from_me { None } else { r.get(6) },
            chat_id: if from_me { None } else { r.get(7) },
        },
        attachment: r
            .get::<_, Option<String>>(8)
            .map(|attachment_id| AttachmentInfo {
                attachment_id,
                kind: MessageType::parse(r.get(9)).unwrap_or(MessageType::Document),
                mime_type: r.get(10),
                filename: r.get(11),
                size: r
                    .get::<_, Option<i64>>(12)
                    .and_then(|s| u64::try_from(s).ok()),
                seconds: r
                    .get::<_, Option<i32>>(13)
                    .and_then(|s| u32::try_from(s).ok()),
                // The caption is the message text: the snippet shows its matching part.
                caption: None,
            }),
        snippet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_quoted_lexemes_only() {
        let q = |s: &str| parse_query(s).map(|q| q.tsquery);
        assert_eq!(
            q("Reunião amanh* 🎉 e-mail").as_deref(),
            Some("'reuniao' & 'amanh':* & '🎉' & 'e' & 'mail'")
        );
        // Operators, quotes and backslashes from input never reach the tsquery syntax.
        // (`c:*` still ends in `*`: a prefix, as documented.)
        assert_eq!(
            q("a' | !b & c:* <-> (d) \\e").as_deref(),
            Some("'a' & 'b' & 'c':* & 'd' & 'e'")
        );
        assert_eq!(q("שָׁלוֹם ❤️❤️").as_deref(), Some("'שלום' & '❤'"));
        assert_eq!(q("  ' & | ** "), None);
        assert_eq!(q("x.com/"), q("x.com"));
        // A prefix term ending in an emoji: the emoji is matched whole.
        assert_eq!(q("🎉*").as_deref(), Some("'🎉'"));
    }
}
