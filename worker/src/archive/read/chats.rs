//! Chat listings and the contact and group searches, filtered by the viewer's scope.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::wire::ChatKind;

use super::{Params, chat_filter, contains_pattern};
use crate::viewer::Viewer;

/// One chat of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatRow {
    /// Its id.
    pub(crate) chat_id: String,
    /// Its display name.
    pub(crate) name: String,
    /// Direct or group.
    pub(crate) kind: ChatKind,
    /// Its latest message the viewer may read.
    pub(crate) last_message_at: DateTime<Utc>,
    /// Unread messages.
    pub(crate) unread_count: u32,
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChatQuery {
    /// Name substring.
    pub(crate) query: Option<String>,
    /// Only this kind.
    pub(crate) kind: Option<ChatKind>,
    /// Page size.
    pub(crate) limit: u32,
    /// The last chat of the previous page.
    pub(crate) before: Option<String>,
}

/// The display name of a chat: phonebook name or group subject, else push name, else phone.
const DISPLAY_NAME: &str = "coalesce(c.name, c.push_name, '+' || c.phone)";

/// SQL for the time of chat `c`'s latest readable message: the chat's latest, unless the
/// scope's `until` hides the newest ones.
fn last_readable(viewer: &Viewer, p: &mut Params) -> String {
    match viewer.scope.until {
        None => "c.last_message_at".to_owned(),
        Some(until) => format!(
            "(select max(m.ts) from messages m
               where m.account_id = c.account_id and m.chat_id = c.chat_id and m.ts < {})",
            p.push(until)
        ),
    }
}

/// The chats of `account` with at least one message the viewer may read, most recent first.
/// `Ok(None)` when `before` is not a chat of this listing.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "chats.list"))]
pub(crate) async fn list(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    q: &ChatQuery,
) -> anyhow::Result<Option<Vec<ChatRow>>> {
    let mut p = Params::default();
    let acc = p.push(account.to_owned());
    let filter = chat_filter(viewer, "c.chat_id", &mut p);
    let last = last_readable(viewer, &mut p);
    let mut inner = format!(
        "select c.chat_id, {DISPLAY_NAME} as name, c.kind, {last} as last_at, c.unread_count
           from chats c
          where c.account_id = {acc} and c.last_message_at is not null and {filter}"
    );
    let mut outer = String::from("true");
    if let Some(since) = viewer.scope.since {
        outer.push_str(&format!(" and s.last_at >= {}", p.push(since)));
    }
    if let Some(before) = &q.before {
        let mut bp = Params::default();
        let bacc = bp.push(account.to_owned());
        let bfilter = chat_filter(viewer, "c.chat_id", &mut bp);
        let blast = last_readable(viewer, &mut bp);
        let bid = bp.push(before.clone());
        let mut sql = format!(
            "select {blast} from chats c
              where c.account_id = {bacc} and c.chat_id = {bid} and {bfilter}"
        );
        if let Some(since) = viewer.scope.since {
            sql = format!("select t from ({sql}) x(t) where t >= {}", bp.push(since));
        }
        let stmt = db.prepare_cached(&sql).await?;
        let anchor: Option<DateTime<Utc>> = match db.query_opt(&stmt, &bp.refs()).await? {
            Some(r) => r.get(0),
            None => None,
        };
        let Some(anchor) = anchor else {
            return Ok(None);
        };
        let (t, b) = (p.push(anchor), p.push(before.clone()));
        outer.push_str(&format!(
            " and (s.last_at < {t} or (s.last_at = {t} and s.chat_id > {b}))"
        ));
    }
    if let Some(kind) = q.kind {
        inner.push_str(&format!(
            " and c.kind = {}",
            p.push(kind.as_str().to_owned())
        ));
    }
    if let Some(text) = q.query.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        inner.push_str(&format!(
            " and {DISPLAY_NAME} ilike {}",
            p.push(contains_pattern(text))
        ));
    }
    // `chats_recent` is the plan for any page size (see `Params::push_opaque`).
    let limit = p.push_opaque(i64::from(q.limit));
    // `desc nulls last` matches the `chats_recent` index, so the top of the list is an index
    // scan instead of a sort of every chat.
    let sql = format!(
        "select s.chat_id, s.name, s.kind, s.last_at, s.unread_count from ({inner}) s
          where s.last_at is not null and {outer}
          order by s.last_at desc nulls last, s.chat_id
          limit {limit}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    let rows = db.query(&stmt, &p.refs()).await?;
    Ok(Some(
        rows.into_iter()
            .map(|r| {
                let kind = match r.get::<_, &str>(2) {
                    "group" => ChatKind::Group,
                    _ => ChatKind::Direct,
                };
                ChatRow {
                    chat_id: r.get(0),
                    name: r
                        .get::<_, Option<String>>(1)
                        .unwrap_or_else(|| unnamed(kind).to_owned()),
                    kind,
                    last_message_at: r.get(3),
                    unread_count: u32::try_from(r.get::<_, i32>(4)).unwrap_or(0),
                }
            })
            .collect(),
    ))
}

/// The name shown for a chat nobody named.
fn unnamed(kind: ChatKind) -> &'static str {
    match kind {
        ChatKind::Direct => "Unknown contact",
        ChatKind::Group => "Unnamed group",
    }
}

/// A contact found by [`search_contacts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContactRow {
    /// The direct chat's id.
    pub(crate) chat_id: String,
    /// The name.
    pub(crate) name: String,
    /// Phone digits, where known.
    pub(crate) phone: Option<String>,
}

/// People (phonebook contacts, and people the account has chatted with) whose name contains
/// `text` or whose phone number contains `digits`, among the chats the viewer may read.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "chats.search_contacts"))]
pub(crate) async fn search_contacts(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    text: &str,
    digits: Option<&str>,
    limit: u32,
) -> anyhow::Result<Vec<ContactRow>> {
    let mut p = Params::default();
    let acc = p.push(account.to_owned());
    let filter = chat_filter(viewer, "c.chat_id", &mut p);
    let name = p.push(contains_pattern(text));
    let phone = match digits {
        Some(d) => format!(" or c.phone like {}", p.push(contains_pattern(d))),
        None => String::new(),
    };
    let limit = p.push(i64::from(limit));
    let sql = format!(
        "select c.chat_id, {DISPLAY_NAME} as name, c.phone
           from chats c
          where c.account_id = {acc} and c.kind = 'direct' and {filter}
            and (c.last_message_at is not null or exists (
                 select 1 from contacts k where k.account_id = c.account_id and k.chat_id = c.chat_id))
            and (coalesce(c.name, c.push_name, '') ilike {name}{phone})
          order by name, c.chat_id
          limit {limit}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db
        .query(&stmt, &p.refs())
        .await?
        .into_iter()
        .map(|r| ContactRow {
            chat_id: r.get(0),
            name: r
                .get::<_, Option<String>>(1)
                .unwrap_or_else(|| unnamed(ChatKind::Direct).to_owned()),
            phone: r.get(2),
        })
        .collect())
}

/// A group found by [`search_groups`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupRow {
    /// The group's chat id.
    pub(crate) chat_id: String,
    /// Its subject.
    pub(crate) name: String,
    /// Its size.
    pub(crate) participant_count: u32,
}

/// Groups whose subject contains `text`, among the chats the viewer may read.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "chats.search_groups"))]
pub(crate) async fn search_groups(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    text: &str,
    limit: u32,
) -> anyhow::Result<Vec<GroupRow>> {
    let mut p = Params::default();
    let acc = p.push(account.to_owned());
    let filter = chat_filter(viewer, "c.chat_id", &mut p);
    let name = p.push(contains_pattern(text));
    let limit = p.push(i64::from(limit));
    let sql = format!(
        "select c.chat_id, c.name, coalesce(g.participant_count, 0)
           from chats c
           left join groups g on g.account_id = c.account_id and g.chat_id = c.chat_id
          where c.account_id = {acc} and c.kind = 'group' and {filter} and c.name ilike {name}
          order by c.name, c.chat_id
          limit {limit}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db
        .query(&stmt, &p.refs())
        .await?
        .into_iter()
        .map(|r| GroupRow {
            chat_id: r.get(0),
            name: r.get(1),
            participant_count: u32::try_from(r.get::<_, i32>(2)).unwrap_or(0),
        })
        .collect())
}
