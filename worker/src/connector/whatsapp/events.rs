//! Archive work from the client's events, one at a time in arrival order: history blobs,
//! messages that bypass the durability hook, undecryptable messages, contact names with their
//! LID ↔ phone pairs (linked without a name when there is none), the account's own ids, group
//! names and members (all groups on each connect, one group on each group notification),
//! group notifications as `system` messages, and the delivery and read receipts of sent
//! messages (handed to the journal's recorder).

use std::sync::Arc;
use std::time::Duration;

use whatsapp_rust::Client;
use whatsapp_rust::types::events::Event;

use super::groups;
use super::history;
use super::hook;
use super::map;
use super::people;
use super::queue;
use super::receipts;
use super::shared::Shared;
use super::stall::Source;
use crate::archive::jid::Jid as ArchiveJid;
use crate::archive::{ContactUpdate, GroupUpdate};

/// The longest pause between attempts at an event while the archive cannot commit.
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Archive work from events, one at a time in arrival order, until the queue closes. An event
/// whose work fails for a reason that can pass (Postgres unavailable, or any refusal that is
/// not about the data itself: a timeout, a lock, a conflict, a full disk) is tried again
/// (backing off to 5 s) until it succeeds, holding the events after it — and, once the queue is
/// full, the client that produces them ([`super::queue`]). Meanwhile the connector says the
/// archive cannot commit ([`super::stall`]). Only an event the archive refuses as bad data, or
/// that cannot be read at all, is dropped, logged without its contents.
pub async fn drain(shared: Arc<Shared>, mut rx: queue::Receiver<Arc<Event>>) {
    while let Some(queued) = rx.recv().await {
        let event = &queued.item;
        let mut pause = Duration::from_millis(100);
        let mut waited = false;
        loop {
            let attempt = shared.stall.attempt(Source::Drain);
            match work(&shared, event.clone()).await {
                Ok(()) => {
                    attempt.committed();
                    if waited {
                        tracing::info!(
                            event = kind(event),
                            "the archive commits again; event archived"
                        );
                    }
                    break;
                }
                Err(e) if passing(&e) && !rx.is_closed() => {
                    attempt.failed();
                    if !waited {
                        tracing::warn!(
                            event = kind(event),
                            error = %crate::error::redacted(e.as_ref()),
                            "archiving a WhatsApp event waits until the archive can commit"
                        );
                        waited = true;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                Err(e) => {
                    tracing::warn!(
                        event = kind(event),
                        error = %crate::error::redacted(e.as_ref()),
                        "archiving a WhatsApp event failed for good; dropped"
                    );
                    break;
                }
            }
        }
    }
}

/// True when `err` can pass by waiting: Postgres unavailable, the pool, or a Postgres refusal
/// other than a data exception (class 22) or an integrity violation (class 23), the two that
/// say the event itself is wrong. Errors from anywhere else (a blob that does not inflate, a
/// message that does not map) are about the event too.
pub fn passing(err: &anyhow::Error) -> bool {
    if crate::db::is_unavailable(err) {
        return true;
    }
    for cause in err.chain() {
        if cause
            .downcast_ref::<deadpool_postgres::PoolError>()
            .is_some()
        {
            return true;
        }
        if let Some(e) = cause.downcast_ref::<tokio_postgres::Error>() {
            return match e.code() {
                Some(code) => !["22", "23"].contains(&&code.code()[..2]),
                None => true,
            };
        }
    }
    false
}

/// An event's kind for the logs (never its contents).
fn kind(event: &Event) -> &'static str {
    match event {
        Event::HistorySync(_) => "history",
        Event::Messages(_) => "messages",
        Event::UndecryptableMessage(_) => "undecryptable",
        Event::ContactUpdate(_) => "contact",
        Event::PairSuccess(_) => "paired",
        Event::Connected(_) => "connected",
        Event::Receipt(_) => "receipt",
        Event::GroupUpdate(_) => "group",
        _ => "other",
    }
}

/// One event's archive work.
async fn work(shared: &Shared, event: Arc<Event>) -> anyhow::Result<()> {
    let (archive, account) = (&shared.archive, shared.account.as_str());
    match &*event {
        Event::HistorySync(_) => {
            let stored = history::ingest(archive, account, &shared.pending, event.clone()).await?;
            shared.status().history_archived(stored);
        }
        Event::Messages(batch) => {
            // Newsletters and recovered messages bypass the durability hook.
            let client = shared.client();
            hook::commit(
                archive,
                account,
                &shared.linked,
                client.as_deref(),
                &batch.messages,
            )
            .await?;
        }
        Event::UndecryptableMessage(u) => {
            if let Some(m) = map::undecryptable(&u.info) {
                let pair = people::from_info(&u.info);
                shared.linked.link(archive, account, pair).await?;
                archive.ingest_live(account, m).await?;
            }
        }
        Event::ContactUpdate(c) => {
            let name = c
                .action
                .full_name
                .clone()
                .or_else(|| c.action.first_name.clone());
            let pn = c
                .action
                .pn_jid
                .clone()
                .or_else(|| c.jid.is_pn().then(|| c.jid.to_string()));
            let lid = c
                .action
                .lid_jid
                .clone()
                .or_else(|| c.jid.is_lid().then(|| c.jid.to_string()));
            match (name.filter(|n| !n.is_empty()), pn.or_else(|| lid.clone())) {
                (Some(name), Some(jid)) => {
                    let lid = lid.filter(|l| *l != jid);
                    archive
                        .upsert_contact(account, ContactUpdate { jid, lid, name })
                        .await?;
                }
                (None, Some(jid)) => {
                    let pair = lid.and_then(|l| people::pair(&jid, &l));
                    shared.linked.link(archive, account, pair).await?;
                }
                _ => {}
            }
        }
        Event::PairSuccess(p) => {
            archive
                .set_own_ids(
                    account,
                    Some(p.id.to_non_ad_string()),
                    Some(p.lid.to_non_ad_string()),
                )
                .await?;
        }
        Event::Connected(_) => {
            if let Some(c) = shared.client() {
                archive
                    .set_own_ids(
                        account,
                        c.pn().map(|j| j.to_non_ad_string()),
                        c.lid().map(|j| j.to_non_ad_string()),
                    )
                    .await?;
                all_groups(shared, &c).await?;
            }
        }
        Event::Receipt(r) => {
            let own: Vec<whatsapp_rust::Jid> = shared
                .client()
                .map(|c| [c.pn(), c.lid()].into_iter().flatten().collect())
                .unwrap_or_default();
            if let Some(receipt) = receipts::from_event(account, r, &own) {
                shared.receipts.record(receipt).await?;
            }
        }
        Event::GroupUpdate(g) => {
            let client = shared.client();
            let own = own_jids(client.as_deref());
            groups::archive_event(archive, &shared.pool, &shared.linked, account, &own, g).await?;
            if let Some(c) = client {
                // After a removal of the account itself the group may no longer answer.
                match c.groups().get_metadata(&g.group_jid).await {
                    Ok(meta) => {
                        shared.linked.link(archive, account, members(&meta)).await?;
                        archive.upsert_group(account, group(&meta)).await?;
                    }
                    Err(e) => tracing::debug!(error = %e, "group metadata not refreshed"),
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Names and members of every group the account is in.
async fn all_groups(shared: &Shared, client: &Client) -> anyhow::Result<()> {
    let groups = client.groups().get_participating().await?;
    let n = groups.len();
    let pairs: Vec<(String, String)> = groups.values().flat_map(members).collect();
    shared
        .linked
        .link(&shared.archive, &shared.account, pairs)
        .await?;
    for meta in groups.values() {
        shared
            .archive
            .upsert_group(&shared.account, group(meta))
            .await?;
    }
    tracing::info!(groups = n, "group names and members archived");
    Ok(())
}

/// The account's own JIDs (phone and LID) as the running client knows them.
fn own_jids(client: Option<&Client>) -> Vec<String> {
    client
        .map(|c| {
            [c.pn(), c.lid()]
                .into_iter()
                .flatten()
                .filter_map(|j| ArchiveJid::parse(&j.to_non_ad_string()).map(|j| j.canonical))
                .collect()
        })
        .unwrap_or_default()
}

/// The LID ↔ phone pairs a group's member list names.
fn members(meta: &whatsapp_rust::GroupMetadata) -> Vec<(String, String)> {
    meta.participants
        .iter()
        .filter_map(|p| people::from_member(&p.jid, p.phone_number.as_ref().or(p.lid.as_ref())))
        .collect()
}

/// The archive's view of a group: subject and members (phone JIDs where known).
fn group(meta: &whatsapp_rust::GroupMetadata) -> GroupUpdate {
    GroupUpdate {
        jid: meta.id.to_non_ad_string(),
        name: meta.subject.clone(),
        participants: meta
            .participants
            .iter()
            .map(|p| p.phone_number.as_ref().unwrap_or(&p.jid).to_non_ad_string())
            .collect(),
    }
}
