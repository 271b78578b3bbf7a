//! History sync: the phone's history blobs (initial bootstrap, recent, full, statuses, and the
//! on-demand answers to [`Pending`] requests) walked into the archive's batch path, with
//! progress logged. `read_messages` past the archive asks the phone through
//! [`request_older`] and waits, bounded, for the ON_DEMAND answer for that chat.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use deadpool_postgres::Pool;
use tokio::sync::oneshot;
use whatsapp_rust::Client;
use whatsapp_rust::Jid;
use whatsapp_rust::waproto::whatsapp as wa;

use super::map;
use crate::archive::jid::{Jid as ArchiveJid, STATUS_JID};
use crate::archive::{Archive, ContactUpdate, Inbound, IngestOutcome};

/// WhatsApp's `HistorySyncType::ON_DEMAND`.
const ON_DEMAND: i32 = 6;
/// Messages asked for per on-demand request.
const ON_DEMAND_COUNT: i32 = 50;

/// The archive-ready content of one history blob.
#[derive(Debug, Default)]
pub struct Page {
    /// Messages and statuses, in blob order.
    pub messages: Vec<Inbound>,
    /// Phone-number ↔ LID pairs with a name to file them under.
    pub contacts: Vec<ContactUpdate>,
}

/// Map a decoded blob.
pub fn page(sync: &wa::HistorySync) -> Page {
    let mut out = Page::default();
    for conv in &sync.conversations {
        for entry in &conv.messages {
            if let Some(web) = entry.message.as_option()
                && let Some(m) = map::from_history(&conv.id, web)
            {
                out.messages.push(m);
            }
        }
        // A direct chat that names both its forms becomes one chat; the archive needs a name.
        let name = conv.name.as_deref().or(conv.display_name.as_deref());
        if let (Some(pn), Some(lid), Some(name)) =
            (conv.pn_jid.as_deref(), conv.lid_jid.as_deref(), name)
        {
            out.contacts.push(ContactUpdate {
                jid: pn.to_owned(),
                lid: Some(lid.to_owned()),
                name: name.to_owned(),
            });
        }
    }
    for web in &sync.status_v3_messages {
        if let Some(m) = map::from_history(STATUS_JID, web) {
            out.messages.push(m);
        }
    }
    out
}

/// Ingest one history event: decode off the async threads, store through the batch path, wake
/// the on-demand waiters of the chats it covered. Returns the messages newly stored.
pub async fn ingest(
    archive: &Archive,
    account: &str,
    pending: &Pending,
    event: Arc<whatsapp_rust::types::events::Event>,
) -> anyhow::Result<u32> {
    let whatsapp_rust::types::events::Event::HistorySync(lazy) = &*event else {
        return Ok(0);
    };
    let (sync_type, chunk, progress) = (lazy.sync_type(), lazy.chunk_order(), lazy.progress());
    let decoded = {
        let event = event.clone();
        tokio::task::spawn_blocking(move || match &*event {
            whatsapp_rust::types::events::Event::HistorySync(lazy) => lazy.get().map(page),
            _ => None,
        })
        .await
        .context("history decode task")?
    };
    let Some(page) = decoded else {
        tracing::warn!(sync_type, "a history blob could not be decoded; skipped");
        return Ok(0);
    };
    for c in page.contacts {
        if let Err(e) = archive.upsert_contact(account, c).await {
            tracing::debug!(error = %e, "history contact not merged");
        }
    }
    let chats: Vec<String> = page.messages.iter().map(|m| m.chat_jid.clone()).collect();
    let total = page.messages.len();
    let outcomes = archive
        .ingest_batch_outcomes(account, page.messages)
        .await?;
    let mut per_chat: HashMap<String, u32> = HashMap::new();
    for (chat, o) in chats.into_iter().zip(&outcomes) {
        let n = per_chat.entry(canonical(&chat)).or_default();
        if matches!(o, IngestOutcome::Stored { .. }) {
            *n += 1;
        }
    }
    let stored: u32 = per_chat.values().sum();
    tracing::info!(
        sync_type,
        chunk = ?chunk,
        progress = ?progress,
        messages = total,
        stored,
        "history sync page archived"
    );
    if sync_type == ON_DEMAND {
        for (chat, n) in per_chat {
            pending.answer(&chat, n);
        }
    }
    Ok(stored)
}

/// `jid` in the archive's canonical form (or as given when it is not one).
fn canonical(jid: &str) -> String {
    ArchiveJid::parse(jid).map_or_else(|| jid.to_owned(), |j| j.canonical)
}

/// Outstanding on-demand history requests, by chat (the answer's session id is not verified
/// to equal the request id, so the chat is the key).
#[derive(Debug, Default)]
pub struct Pending {
    waiting: Mutex<HashMap<String, Vec<oneshot::Sender<u32>>>>,
}

impl Pending {
    /// Wait for the next on-demand answer covering `chat`.
    pub fn wait_for(&self, chat: &str) -> oneshot::Receiver<u32> {
        let (tx, rx) = oneshot::channel();
        self.lock().entry(canonical(chat)).or_default().push(tx);
        rx
    }

    /// An on-demand answer for `chat` stored `n` new messages.
    pub fn answer(&self, chat: &str, n: u32) {
        for tx in self.lock().remove(&canonical(chat)).unwrap_or_default() {
            let _ = tx.send(n);
        }
    }

    /// Drop waiters whose callers gave up.
    pub fn prune(&self) {
        self.lock().retain(|_, v| {
            v.retain(|tx| !tx.is_closed());
            !v.is_empty()
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<oneshot::Sender<u32>>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Ask the phone for messages of `chat_id` older than the oldest archived one, and wait at
/// most `wait` for them to be archived. Returns how many arrived in time (0 when the chat has
/// no message to anchor on).
pub async fn request_older(
    client: &Arc<Client>,
    pool: &Pool,
    pending: &Pending,
    account: &str,
    chat_id: &str,
    wait: Duration,
) -> anyhow::Result<u32> {
    let db = pool.get().await.context("database connection")?;
    let row = db
        .query_opt(
            "select c.jid, m.wa_id, m.from_me, m.ts
               from chats c
               join lateral (select wa_id, from_me, ts from messages
                              where account_id = c.account_id and chat_id = c.chat_id
                              order by ts, position limit 1) m on true
              where c.account_id = $1 and c.chat_id = $2",
            &[&account, &chat_id],
        )
        .await?;
    drop(db);
    let Some(row) = row else {
        return Ok(0);
    };
    let jid_text: String = row.get(0);
    let jid: Jid = jid_text.parse().context("archived chat JID")?;
    let wa_id: String = row.get(1);
    let from_me: bool = row.get(2);
    let ts: chrono::DateTime<chrono::Utc> = row.get(3);
    let answer = pending.wait_for(&jid_text);
    client
        .fetch_message_history(
            &jid,
            &wa_id,
            from_me,
            ts.timestamp_millis(),
            ON_DEMAND_COUNT,
        )
        .await
        .context("on-demand history request")?;
    tracing::info!(chat.id = %chat_id, "asked the phone for older history");
    let n = match tokio::time::timeout(wait, answer).await {
        Ok(Ok(n)) => n,
        Ok(Err(_)) | Err(_) => 0,
    };
    pending.prune();
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_wakes_every_waiter_of_its_chat_only() {
        let p = Pending::default();
        let a = p.wait_for("111@s.whatsapp.net");
        let b = p.wait_for("111:3@S.WHATSAPP.NET");
        let other = p.wait_for("222@s.whatsapp.net");
        p.answer("111@s.whatsapp.net", 7);
        assert_eq!(a.await.unwrap(), 7);
        assert_eq!(b.await.unwrap(), 7);
        drop(other);
        p.prune();
        assert!(p.lock().is_empty());
    }
}
