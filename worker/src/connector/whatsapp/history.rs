//! History sync: the phone's history blobs (initial bootstrap, recent, full, statuses, and the
//! on-demand answers to [`Pending`] requests) walked into the archive's batch path, with
//! progress logged; their phone ↔ LID mappings are linked first, so both forms of a person
//! land in one chat. `read_messages` past the archive asks the phone through
//! [`request_older`] and waits, bounded, for the ON_DEMAND answer: the one carrying the
//! request's id, or (when the phone's answer names no known request) one covering that chat.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use deadpool_postgres::Pool;
use tokio::sync::oneshot;
use whatsapp_rust::Client;
use whatsapp_rust::Jid;
use whatsapp_rust::waproto::whatsapp as wa;

use super::map;
use super::people;
use crate::archive::jid::{Jid as ArchiveJid, STATUS_JID};
use crate::archive::{Archive, ContactUpdate, Inbound, IngestOutcome};
use wazap_shared::wire::MessageType;

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
    /// Phone-number ↔ LID pairs without a name: `(phone JID, LID)`.
    pub links: Vec<(String, String)>,
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
        // A direct chat that names both its forms becomes one chat, named when it has one.
        let name = conv.name.as_deref().or(conv.display_name.as_deref());
        let forms = [conv.pn_jid.as_deref(), conv.lid_jid.as_deref()];
        let (pn, lid) = match forms {
            [Some(pn), Some(lid)] => (pn, lid),
            // The conversation's id is one of its forms.
            [Some(other), None] | [None, Some(other)] => (conv.id.as_str(), other),
            [None, None] => continue,
        };
        if let Some((pn, lid)) = people::pair(pn, lid) {
            match name.filter(|n| !n.is_empty()) {
                Some(name) => out.contacts.push(ContactUpdate {
                    jid: pn,
                    lid: Some(lid),
                    name: name.to_owned(),
                }),
                None => out.links.push((pn, lid)),
            }
        }
    }
    for m in &sync.phone_number_to_lid_mappings {
        if let (Some(pn), Some(lid)) = (m.pn_jid.as_deref(), m.lid_jid.as_deref())
            && let Some(p) = people::pair(pn, lid)
        {
            out.links.push(p);
        }
    }
    for c in &sync.inline_contacts {
        let Some((pn, lid)) = c
            .pn_jid
            .as_deref()
            .zip(c.lid_jid.as_deref())
            .and_then(|(pn, lid)| people::pair(pn, lid))
        else {
            continue;
        };
        match [&c.full_name, &c.first_name]
            .into_iter()
            .flatten()
            .find(|n| !n.is_empty())
        {
            Some(name) => out.contacts.push(ContactUpdate {
                jid: pn,
                lid: Some(lid),
                name: name.clone(),
            }),
            None => out.links.push((pn, lid)),
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
    let session = lazy.peer_data_request_session_id().map(str::to_owned);
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
    let links = page.links.len();
    archive.link_aliases(account, page.links).await?;
    for c in page.contacts {
        if let Err(e) = archive.upsert_contact(account, c).await {
            tracing::debug!(error = %crate::error::redacted(e.as_ref()), "history contact not merged");
        }
    }
    let chats: Vec<String> = page.messages.iter().map(|m| m.chat_jid.clone()).collect();
    let total = page.messages.len();
    let messages = page.messages.clone();
    let mut outcomes = archive
        .ingest_batch_outcomes(account, page.messages)
        .await?;
    replace_placeholders(archive, account, messages, &mut outcomes).await?;
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
        links,
        "history sync page archived"
    );
    if sync_type == ON_DEMAND {
        pending.answer(session.as_deref(), &per_chat);
    }
    Ok(stored)
}

/// Messages of a page already archived as undecryptable placeholders take their place.
async fn replace_placeholders(
    archive: &Archive,
    account: &str,
    messages: Vec<Inbound>,
    outcomes: &mut [IngestOutcome],
) -> anyhow::Result<()> {
    let (ks, again): (Vec<usize>, Vec<Inbound>) = messages
        .into_iter()
        .enumerate()
        .filter(|(k, m)| {
            matches!(outcomes.get(*k), Some(IngestOutcome::Duplicate { .. }))
                && m.kind != MessageType::Unknown
        })
        .unzip();
    if again.is_empty() {
        return Ok(());
    }
    let replaced = archive.replace_placeholders(account, again, false).await?;
    for (k, r) in ks.into_iter().zip(replaced) {
        if let Some(o) = r {
            outcomes[k] = o;
        }
    }
    Ok(())
}

/// `jid` in the archive's canonical form (or as given when it is not one).
fn canonical(jid: &str) -> String {
    ArchiveJid::parse(jid).map_or_else(|| jid.to_owned(), |j| j.canonical)
}

/// One caller waiting for an on-demand answer.
#[derive(Debug)]
struct Waiter {
    /// Names the wait.
    key: u64,
    /// The chat asked about (canonical).
    chat: String,
    /// The request's id, once the request went out.
    request: Option<String>,
    tx: oneshot::Sender<u32>,
}

/// Outstanding on-demand history requests. An answer names its request by the peer-data
/// session id when the phone sets one; the chat is the fallback (the id's equality with the
/// request's message id is what whatsapp-rust documents, not something seen on a phone here).
#[derive(Debug, Default)]
pub struct Pending {
    waiting: Mutex<Vec<Waiter>>,
    next: AtomicU64,
}

/// A registered wait: its answer, and the key to name its request once sent.
#[derive(Debug)]
pub struct Wait {
    /// Resolves with the messages the answer stored.
    pub answer: oneshot::Receiver<u32>,
    key: u64,
}

impl Pending {
    /// Wait for the next on-demand answer for `chat` (registered before the request is sent,
    /// so an early answer is not missed).
    pub fn wait_for(&self, chat: &str) -> Wait {
        let (tx, rx) = oneshot::channel();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Waiter {
            key,
            chat: canonical(chat),
            request: None,
            tx,
        });
        Wait { answer: rx, key }
    }

    /// The request `wait` waits for went out with id `request`.
    pub fn sent(&self, wait: &Wait, request: &str) {
        let mut w = self.lock();
        if let Some(x) = w.iter_mut().find(|x| x.key == wait.key) {
            x.request = Some(request.to_owned());
        }
    }

    /// An on-demand answer stored `per_chat` new messages (canonical chat → count). The waiter
    /// whose request id is `session` gets the whole answer's count; without such a waiter, the
    /// waiters of every chat the answer covered get that chat's count.
    pub fn answer(&self, session: Option<&str>, per_chat: &HashMap<String, u32>) {
        let mut w = self.lock();
        if let Some(s) = session
            && let Some(i) = w.iter().position(|x| x.request.as_deref() == Some(s))
        {
            let x = w.swap_remove(i);
            let _ = x.tx.send(per_chat.values().sum());
            return;
        }
        let (hit, keep): (Vec<Waiter>, Vec<Waiter>) =
            w.drain(..).partition(|x| per_chat.contains_key(&x.chat));
        *w = keep;
        drop(w);
        for x in hit {
            let n = per_chat.get(&x.chat).copied().unwrap_or(0);
            let _ = x.tx.send(n);
        }
    }

    /// Drop waiters whose callers gave up.
    pub fn prune(&self) {
        self.lock().retain(|x| !x.tx.is_closed());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiter>> {
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
                                and wa_id not like 'wazap-%'
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
    let waiting = pending.wait_for(&jid_text);
    let request = client
        .fetch_message_history(
            &jid,
            &wa_id,
            from_me,
            ts.timestamp_millis(),
            ON_DEMAND_COUNT,
        )
        .await
        .context("on-demand history request")?;
    pending.sent(&waiting, &request);
    tracing::info!(chat.id = %chat_id, "asked the phone for older history");
    let n = match tokio::time::timeout(wait, waiting.answer).await {
        Ok(Ok(n)) => n,
        Ok(Err(_)) | Err(_) => 0,
    };
    pending.prune();
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
    }

    #[tokio::test]
    async fn an_answer_without_a_known_session_wakes_every_waiter_of_its_chats_only() {
        let p = Pending::default();
        let a = p.wait_for("111@s.whatsapp.net");
        let b = p.wait_for("111:3@S.WHATSAPP.NET");
        let other = p.wait_for("222@s.whatsapp.net");
        p.answer(Some("NOT-A-REQUEST"), &counts(&[("111@s.whatsapp.net", 7)]));
        assert_eq!(a.answer.await.unwrap(), 7);
        assert_eq!(b.answer.await.unwrap(), 7);
        drop(other);
        p.prune();
        assert!(p.lock().is_empty());
    }

    #[tokio::test]
    async fn an_answer_naming_a_request_wakes_that_request_even_when_empty() {
        let p = Pending::default();
        let first = p.wait_for("111@s.whatsapp.net");
        let second = p.wait_for("111@s.whatsapp.net");
        p.sent(&first, "3EB0AAAA");
        p.sent(&second, "3EB0BBBB");
        // The phone has nothing older: the answer covers no chat, but names its request.
        p.answer(Some("3EB0BBBB"), &HashMap::new());
        assert_eq!(second.answer.await.unwrap(), 0);
        assert_eq!(p.lock().len(), 1, "the other request still waits");
        p.answer(Some("3EB0AAAA"), &counts(&[("111@s.whatsapp.net", 4)]));
        assert_eq!(first.answer.await.unwrap(), 4);
    }
}
