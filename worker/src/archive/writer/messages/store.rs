//! The SQL of a chunk: each statement takes whole columns through `unnest`, so its cost does
//! not grow in round trips with the chunk's size.

use std::collections::{HashMap, HashSet};

use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::rows::{AttachmentRows, MessageRows, StoryRows};
use crate::archive::vector::SearchVector;

/// A plain insert of message rows ([`message_params`]).
pub(super) const INSERT_MESSAGES: &str =
    "insert into messages (account_id, position, message_id, chat_id,
         wa_id, sender_jid, sender_chat_id, sender_name, ts, kind, text, from_me, private,
         reply_to, mentions_me, edited, search)
     select $1, * from unnest($2::int8[], $3::text[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::text[], $9::timestamptz[], $10::text[], $11::text[], $12::bool[],
         $13::bool[], $14::text[], $15::bool[], $16::bool[], $17::tsvector[])";

/// Insert rows, skipping ones already archived; returns the positions actually stored.
///
/// History chunks try a plain insert first (inside a savepoint): most hold no duplicate, and a
/// plain insert is a quarter cheaper in CPU than `on conflict do nothing`. Only when it meets a
/// duplicate does the chunk go again with `on conflict do nothing`. A few live messages go
/// straight to `on conflict do nothing`: for them the savepoint's two extra round trips cost
/// more than the CPU saved (they sit on the path to a waiting agent's wake-up).
pub(super) async fn insert_messages(
    tx: &impl GenericClient,
    account: &str,
    rows: &MessageRows<'_>,
    live: bool,
) -> anyhow::Result<HashSet<i64>> {
    if rows.len() == 0 {
        return Ok(HashSet::new());
    }
    let params = message_params(&account, rows);
    if !live {
        let plain = tx.prepare_cached(INSERT_MESSAGES).await?;
        tx.batch_execute("savepoint insert_messages").await?;
        match tx.execute(&plain, &params).await {
            Ok(_) => {
                tx.batch_execute("release savepoint insert_messages")
                    .await?;
                return Ok(rows.position.iter().copied().collect());
            }
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                tx.batch_execute("rollback to savepoint insert_messages")
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let stmt = tx
        .prepare_cached(&format!(
            "{INSERT_MESSAGES} on conflict do nothing returning position"
        ))
        .await?;
    let stored = tx.query(&stmt, &params).await?;
    Ok(stored.iter().map(|r| r.get::<_, i64>(0)).collect())
}

/// [`INSERT_MESSAGES`]'s parameters for `rows` of `account`.
pub(super) fn message_params<'p>(
    account: &'p &'p str,
    rows: &'p MessageRows<'_>,
) -> [&'p (dyn ToSql + Sync); 17] {
    [
        account,
        &rows.position,
        &rows.message_id,
        &rows.chat_id,
        &rows.wa_id,
        &rows.sender_jid,
        &rows.sender_chat_id,
        &rows.sender_name,
        &rows.ts,
        &rows.kind,
        &rows.text,
        &rows.from_me,
        &rows.private,
        &rows.reply_to,
        &rows.mentions_me,
        &rows.edited,
        &rows.search,
    ]
}

/// Which of `ids` are archived messages.
pub(super) async fn existing(
    tx: &impl GenericClient,
    account: &str,
    ids: &[String],
) -> anyhow::Result<HashSet<String>> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let stmt = tx
        .prepare_cached(
            "select message_id from messages where account_id = $1 and message_id = any($2)",
        )
        .await?;
    Ok(tx
        .query(&stmt, &[&account, &ids])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Insert stories, skipping ones already archived; returns the ids stored.
pub(super) async fn insert_stories(
    tx: &impl GenericClient,
    account: &str,
    s: &StoryRows<'_>,
) -> anyhow::Result<HashSet<String>> {
    if s.input.is_empty() {
        return Ok(HashSet::new());
    }
    let stmt = tx
        .prepare_cached(
            "insert into stories (account_id, story_id, wa_id, sender_jid, sender_chat_id,
                 sender_name, ts, kind, text, private, attachment_id)
             select $1, * from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                 $7::timestamptz[], $8::text[], $9::text[], $10::bool[], $11::text[])
             on conflict do nothing
             returning story_id",
        )
        .await?;
    let rows = tx
        .query(
            &stmt,
            &[
                &account,
                &s.story_id,
                &s.wa_id,
                &s.sender_jid,
                &s.sender_chat_id,
                &s.sender_name,
                &s.ts,
                &s.kind,
                &s.text,
                &s.private,
                &s.attachment_id,
            ],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// An idempotent insert of attachment rows (their ids derive from their message's), with
/// [`attachment_params`].
pub(super) const INSERT_ATTACHMENTS: &str = "insert into attachments (account_id, attachment_id,
         message_id, chat_id, story, kind, mime_type, filename, size, seconds, ts, thumbnail,
         media, data)
     select $1, * from unnest($2::text[], $3::text[], $4::text[], $5::bool[], $6::text[],
         $7::text[], $8::text[], $9::int8[], $10::int4[], $11::timestamptz[],
         $12::bytea[], $13::jsonb[], $14::bytea[])
     on conflict do nothing";

/// Insert attachment rows.
pub(super) async fn insert_attachments(
    tx: &impl GenericClient,
    account: &str,
    a: &AttachmentRows<'_>,
) -> anyhow::Result<()> {
    if a.attachment_id.is_empty() {
        return Ok(());
    }
    let stmt = tx.prepare_cached(INSERT_ATTACHMENTS).await?;
    tx.execute(&stmt, &attachment_params(&account, a)).await?;
    Ok(())
}

/// [`INSERT_ATTACHMENTS`]' parameters for rows `a` of `account`.
pub(super) fn attachment_params<'p>(
    account: &'p &'p str,
    a: &'p AttachmentRows<'_>,
) -> [&'p (dyn ToSql + Sync); 14] {
    [
        account,
        &a.attachment_id,
        &a.message_id,
        &a.chat_id,
        &a.story,
        &a.kind,
        &a.mime_type,
        &a.filename,
        &a.size,
        &a.seconds,
        &a.ts,
        &a.thumbnail,
        &a.media,
        &a.data,
    ]
}

/// Replace the text of the messages `ids` (an edit: `edited`, `#private` and the search
/// vector recomputed by the caller); deleted messages stay deleted. Returns the ids found.
pub(super) async fn edit(
    tx: &impl GenericClient,
    account: &str,
    ids: &[String],
    text: &[&str],
    private: &[bool],
    search: &[Option<SearchVector>],
) -> anyhow::Result<HashSet<String>> {
    let stmt = tx
        .prepare_cached(
            "update messages m set text = u.text, private = u.private, search = u.search,
                    edited = true
               from unnest($2::text[], $3::text[], $4::bool[], $5::tsvector[])
                    as u(message_id, text, private, search)
              where m.account_id = $1 and m.message_id = u.message_id and m.kind <> 'deleted'
             returning m.message_id",
        )
        .await?;
    Ok(tx
        .query(&stmt, &[&account, &ids, &text, &private, &search])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Turn the messages `ids` into `deleted` ones: no text, no reactions, no attachment.
/// Returns the ids found.
pub(super) async fn delete(
    tx: &impl GenericClient,
    account: &str,
    ids: &[String],
) -> anyhow::Result<HashSet<String>> {
    let stmt = tx
        .prepare_cached(
            "update messages m set kind = 'deleted', text = '', private = false, edited = false,
                    search = null, reactions = null
              where m.account_id = $1 and m.message_id = any($2)
             returning m.message_id",
        )
        .await?;
    let found: Vec<String> = tx
        .query(&stmt, &[&account, &ids])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !found.is_empty() {
        let stmt = tx
            .prepare_cached(
                "delete from attachments where account_id = $1 and message_id = any($2)",
            )
            .await?;
        tx.execute(&stmt, &[&account, &found]).await?;
    }
    Ok(found.into_iter().collect())
}

/// Fold reaction changes into their targets: `changes[i]` (`[{"sender","emoji"}]`, one per
/// sender, an empty emoji removing that sender's reaction) applies to message `ids[i]`.
pub(super) async fn react(
    tx: &impl GenericClient,
    account: &str,
    ids: &[String],
    changes: &[serde_json::Value],
) -> anyhow::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let stmt = tx
        .prepare_cached(
            "update messages m set reactions = nullif((
                 select coalesce(jsonb_agg(x), '[]'::jsonb) from (
                     select e as x from jsonb_array_elements(coalesce(m.reactions, '[]'::jsonb)) e
                      where not exists (select 1 from jsonb_array_elements(u.changes) c
                                         where c->>'sender' = e->>'sender')
                     union all
                     select c from jsonb_array_elements(u.changes) c where c->>'emoji' <> ''
                 ) s), '[]'::jsonb)
               from unnest($2::text[], $3::jsonb[]) as u(message_id, changes)
              where m.account_id = $1 and m.message_id = u.message_id and m.kind <> 'deleted'",
        )
        .await?;
    tx.execute(&stmt, &[&account, &ids, &changes]).await?;
    Ok(())
}

/// Candidate ids of each update's target, keyed back to the update's index.
pub(super) fn by_candidate(candidates: &[Vec<String>]) -> HashMap<&str, usize> {
    let mut out = HashMap::new();
    for (i, c) in candidates.iter().enumerate() {
        for id in c {
            out.insert(id.as_str(), i);
        }
    }
    out
}
