//! Reading a chat's messages (latest page, or the page before a message) and the status
//! stories, as wire [`Message`]s with the `#private` rule applied: a private message never
//! carries its words, caption or file name out of here.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use wazap_shared::ids::STATUS_CHAT;
use wazap_shared::wire::{AttachmentInfo, Message, MessageType, ReactionCount, Sender};

use super::{Params, chat_filter, time_filter};
use crate::viewer::Viewer;

/// The columns both messages and stories select, in [`to_message`]'s order after the first
/// nine: attachment id, kind, mime type, file name, size, seconds.
pub(super) const ATTACHMENT_COLUMNS: &str =
    "a.attachment_id, a.kind, a.mime_type, a.filename, a.size, a.seconds";

/// Where a page of messages ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// The anchor message's time.
    pub(crate) ts: DateTime<Utc>,
    /// Its position (ties in time).
    pub(crate) position: i64,
}

/// The anchor of `message_id` in `chat_id`, when it exists and the viewer may read it.
pub(crate) async fn anchor(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    chat_id: &str,
    message_id: &str,
) -> anyhow::Result<Option<Anchor>> {
    let mut p = Params::default();
    let (acc, chat, id) = (
        p.push(account.to_owned()),
        p.push(chat_id.to_owned()),
        p.push(message_id.to_owned()),
    );
    let time = time_filter(viewer, "ts", &mut p);
    let sql = format!(
        "select ts, position from messages
          where account_id = {acc} and message_id = {id} and chat_id = {chat} and {time}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db.query_opt(&stmt, &p.refs()).await?.map(|r| Anchor {
        ts: r.get(0),
        position: r.get(1),
    }))
}

/// A message as read, with what previews need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadMessage {
    /// The wire message (already redacted when private).
    pub(crate) message: Message,
    /// True when it is a photo the viewer may see a preview of.
    pub(crate) previewable: bool,
}

/// The latest `limit` messages of `chat_id` the viewer may read (of `types`, when given),
/// older than `before` when given; oldest first.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "messages.page"))]
pub(crate) async fn page(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    chat_id: &str,
    before: Option<Anchor>,
    types: Option<&[MessageType]>,
    limit: u32,
) -> anyhow::Result<Vec<ReadMessage>> {
    let mut p = Params::default();
    let (acc, chat) = (p.push(account.to_owned()), p.push(chat_id.to_owned()));
    let mut cond = time_filter(viewer, "m.ts", &mut p);
    if let Some(b) = before {
        let (t, pos) = (p.push(b.ts), p.push(b.position));
        cond.push_str(&format!(" and (m.ts, m.position) < ({t}, {pos})"));
    }
    if let Some(types) = types {
        let kinds: Vec<String> = types.iter().map(|t| t.as_str().to_owned()).collect();
        cond.push_str(&format!(" and m.kind = any({})", p.push(kinds)));
    }
    // The chat's index is the plan for any page size (see `Params::push_opaque`).
    let limit = p.push_opaque(i64::from(limit));
    let sql = format!(
        "select m.message_id, m.ts, m.kind, m.text, m.from_me, m.private,
                {sender}, coalesce(g.into_chat_id, m.sender_chat_id),
                m.reply_to, {ATTACHMENT_COLUMNS}, m.mentions_me, m.edited, m.reactions
           from messages m
           left join chat_merges g
                  on g.account_id = m.account_id and g.from_chat_id = m.sender_chat_id
           left join attachments a on a.account_id = m.account_id and a.message_id = m.message_id
          where m.account_id = {acc} and m.chat_id = {chat} and {cond}
          order by m.ts desc, m.position desc
          limit {limit}",
        sender = sender_name!("m"),
    );
    let stmt = db.prepare_cached(&sql).await?;
    let mut out: Vec<ReadMessage> = db
        .query(&stmt, &p.refs())
        .await?
        .iter()
        .map(|r| {
            let reactions: Option<serde_json::Value> = r.get(17);
            to_message(r, chat_id, r.get(15), r.get(16), reactions)
        })
        .collect();
    out.reverse();
    Ok(out)
}

/// Status stories of the last `since`…now by people the viewer may read, newest first, and
/// how many matched in all (before `limit`).
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "messages.stories"))]
pub(crate) async fn stories(
    db: &impl GenericClient,
    viewer: &Viewer,
    account: &str,
    since: DateTime<Utc>,
    types: Option<&[MessageType]>,
    limit: u32,
) -> anyhow::Result<(Vec<ReadMessage>, u32)> {
    let mut p = Params::default();
    let acc = p.push(account.to_owned());
    let filter = chat_filter(viewer, "s.sender_chat_id", &mut p);
    let mut cond = time_filter(viewer, "s.ts", &mut p);
    cond.push_str(&format!(" and s.ts >= {}", p.push(since)));
    if let Some(types) = types {
        let kinds: Vec<String> = types.iter().map(|t| t.as_str().to_owned()).collect();
        cond.push_str(&format!(" and s.kind = any({})", p.push(kinds)));
    }
    let limit = p.push(i64::from(limit));
    let sql = format!(
        "select s.story_id, s.ts, s.kind, s.text, false, s.private,
                coalesce(k.name, s.sender_name), s.sender_chat_id, null::text,
                {ATTACHMENT_COLUMNS}, count(*) over ()
           from stories s
           left join contacts k on k.account_id = s.account_id and k.chat_id = s.sender_chat_id
           left join attachments a
                  on a.account_id = s.account_id and a.attachment_id = s.attachment_id
          where s.account_id = {acc} and {filter} and {cond}
          order by s.ts desc, s.story_id
          limit {limit}"
    );
    let stmt = db.prepare_cached(&sql).await?;
    let rows = db.query(&stmt, &p.refs()).await?;
    let total = rows
        .first()
        .map(|r| u32::try_from(r.get::<_, i64>(15)).unwrap_or(u32::MAX))
        .unwrap_or(0);
    let out = rows
        .iter()
        .map(|r| to_message(r, STATUS_CHAT, false, false, None))
        .collect();
    Ok((out, total))
}

/// Build a wire message from a row of `message_id, ts, kind, text, from_me, private,
/// sender name, sender chat, reply_to` + [`ATTACHMENT_COLUMNS`], redacting private ones.
pub(super) fn to_message(
    r: &tokio_postgres::Row,
    chat_id: &str,
    mentions_me: bool,
    edited: bool,
    reactions: Option<serde_json::Value>,
) -> ReadMessage {
    let kind = MessageType::parse(r.get(2)).unwrap_or(MessageType::Unknown);
    let private: bool = r.get(5);
    let from_me: bool = r.get(4);
    let text: String = if private { String::new() } else { r.get(3) };
    let attachment = r
        .get::<_, Option<String>>(9)
        .filter(|_| kind != MessageType::Deleted)
        .map(|attachment_id| AttachmentInfo {
            attachment_id,
            kind: MessageType::parse(r.get(10)).unwrap_or(MessageType::Document),
            mime_type: r.get(11),
            filename: if private { None } else { r.get(12) },
            size: r
                .get::<_, Option<i64>>(13)
                .and_then(|s| u64::try_from(s).ok()),
            seconds: r
                .get::<_, Option<i32>>(14)
                .and_then(|s| u32::try_from(s).ok()),
            caption: Some(text.clone()).filter(|t| !t.is_empty()),
        });
    let previewable = !private && kind == MessageType::Image && attachment.is_some();
    ReadMessage {
        message: Message {
            message_id: r.get(0),
            chat_id: chat_id.to_owned(),
            timestamp: r.get(1),
            kind,
            text,
            from_me,
            sender: Sender {
                name: if from_me { None } else { r.get(6) },
                chat_id: if from_me { None } else { r.get(7) },
            },
            private,
            reply_to: r.get(8),
            mentions_me,
            attachment,
            edited,
            reactions: count_reactions(reactions),
        },
        previewable,
    }
}

/// `[{"emoji","sender"}]` → `[{emoji, count}]`, most given first.
fn count_reactions(value: Option<serde_json::Value>) -> Vec<ReactionCount> {
    let Some(serde_json::Value::Array(items)) = value else {
        return Vec::new();
    };
    let mut out: Vec<ReactionCount> = Vec::new();
    for emoji in items
        .iter()
        .filter_map(|i| i.get("emoji").and_then(|e| e.as_str()))
        .filter(|e| !e.is_empty())
    {
        match out.iter_mut().find(|r| r.emoji == emoji) {
            Some(r) => r.count += 1,
            None => out.push(ReactionCount {
                emoji: emoji.to_owned(),
                count: 1,
            }),
        }
    }
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.emoji.cmp(&b.emoji)));
    out
}

/// Thumbnails of `message_ids` (photos of messages or stories), keyed by message id.
pub(crate) async fn thumbnails(
    db: &impl GenericClient,
    account: &str,
    message_ids: &[String],
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    if message_ids.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = db
        .prepare_cached(
            "select message_id, thumbnail from attachments
              where account_id = $1 and message_id = any($2) and thumbnail is not null",
        )
        .await?;
    Ok(db
        .query(&stmt, &[&account, &message_ids])
        .await?
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reactions_count_per_emoji() {
        let v = serde_json::json!([
            {"emoji": "👍", "sender": "c_1"},
            {"emoji": "❤", "sender": "c_2"},
            {"emoji": "👍", "sender": "me"},
        ]);
        let r = count_reactions(Some(v));
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].emoji.as_str(), r[0].count), ("👍", 2));
        assert_eq!((r[1].emoji.as_str(), r[1].count), ("❤", 1));
        assert!(count_reactions(None).is_empty());
    }
}
