//! Durable ingest: whatsapp-rust's `InboundDurabilityHook` holds WhatsApp's ack for decrypted
//! messages until [`commit`] returns `Ok`, which it does only after the archive committed every
//! message of the batch, within [`HOOK_BOUND`]. A failed or late commit returns `Err`: no ack, the server redelivers, and the
//! archive's (chat, sender, id) key drops what was already stored. A message whose archived
//! copy is an undecryptable placeholder takes the placeholder's place.
//!
//! WhatsApp redelivers what a device did not acknowledge only on a new connection, so after a
//! failed commit [`Redeliver`] waits until Postgres answers again and reconnects (found with
//! the test network: without it, messages that arrived while Postgres was down stayed out of
//! the archive until some later reconnect).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;

use whatsapp_rust::types::events::InboundMessage;
use whatsapp_rust::{Client, InboundDurabilityHook};

use super::map;
use super::people::{self, Linked};
use super::stall::{Source, Stall};
use crate::archive::{Archive, IngestOutcome};

/// How long the hook waits for the archive's commit. A Postgres that hangs (a blackholed link,
/// a lock) must not stall the client's receive pipeline silently: past this the batch is not
/// acknowledged, WhatsApp redelivers it after the reconnect [`Redeliver`] makes once the
/// archive answers again, and the archive's key drops a copy that committed late. (Found with
/// the test network: a hook stuck behind a table lock also ends in a reconnect after about 30 s
/// without this bound, when the client's keepalive gives up, so no test tells the two apart.)
const HOOK_BOUND: Duration = Duration::from_secs(20);

/// The hook registered on the client.
pub struct ArchiveHook {
    /// Where messages go.
    pub archive: Archive,
    /// The account they belong to.
    pub account: String,
    /// LID ↔ phone pairs already linked.
    pub linked: Arc<Linked>,
    /// The reconnect after a failed commit.
    pub redeliver: Redeliver,
    /// Where a commit that waits or fails is reported, so the user is told.
    pub stall: Arc<Stall>,
}

/// After a failed commit: once Postgres answers again, reconnect (once, however many batches
/// failed), so WhatsApp delivers again what this device did not acknowledge.
#[derive(Clone)]
pub struct Redeliver {
    pool: Pool,
    armed: Arc<AtomicBool>,
}

impl Redeliver {
    /// A redeliverer probing `pool`.
    pub fn new(pool: Pool) -> Self {
        Self {
            pool,
            armed: Arc::default(),
        }
    }

    /// Reconnect `client` as soon as the database answers (unless already waiting to).
    pub fn arm(&self, client: Arc<Client>) {
        if self.armed.swap(true, Ordering::SeqCst) {
            return;
        }
        let (pool, armed) = (self.pool.clone(), self.armed.clone());
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(250);
            while !answers(&pool).await {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(10));
            }
            tracing::info!(
                "the archive answers again; reconnecting so WhatsApp redelivers the messages it could not take"
            );
            armed.store(false, Ordering::SeqCst);
            client.reconnect_immediately().await;
        });
    }
}

/// Whether Postgres answers a trivial query within a second.
async fn answers(pool: &Pool) -> bool {
    let probe = async {
        let db = pool.get().await.ok()?;
        db.simple_query("select 1").await.ok()
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), probe).await,
        Ok(Some(_))
    )
}

#[whatsapp_rust::async_trait]
impl InboundDurabilityHook for ArchiveHook {
    async fn on_messages(
        &self,
        client: Arc<Client>,
        batch: &[InboundMessage],
    ) -> anyhow::Result<()> {
        let attempt = self.stall.attempt(Source::Hook);
        let committing = commit(
            &self.archive,
            &self.account,
            &self.linked,
            Some(&client),
            batch,
        );
        let result = match tokio::time::timeout(HOOK_BOUND, committing).await {
            Ok(r) => r,
            Err(_) => {
                tracing::warn!(
                    messages = batch.len(),
                    "the archive did not commit an inbound batch within 20 s; not acknowledged, \
                     WhatsApp delivers it again"
                );
                Err(anyhow::anyhow!(
                    "the archive did not commit within {HOOK_BOUND:?}"
                ))
            }
        };
        match result {
            // Only protocol traffic: nothing was written, so nothing is known about the archive.
            Ok(outcomes) if outcomes.is_empty() => Ok(()),
            Ok(_) => {
                attempt.committed();
                Ok(())
            }
            Err(e) => {
                attempt.failed();
                self.redeliver.arm(client);
                Err(e)
            }
        }
    }
}

/// Store `batch` in arrival order (each through the live path, awaited together so they share
/// transactions) and return once all are committed. The senders' LID ↔ phone pairs are linked
/// first, so each message lands in its person's one chat. Messages that are protocol traffic
/// are skipped; the outcomes of the stored ones are returned in order.
pub async fn commit(
    archive: &Archive,
    account: &str,
    linked: &Linked,
    client: Option<&Client>,
    batch: &[InboundMessage],
) -> anyhow::Result<Vec<IngestOutcome>> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for m in batch {
        if let Some(p) = people::from_info(&m.info) {
            pairs.push(p);
        } else if let Some(c) = client
            && let Some(p) = people::from_own(c, &m.info).await
        {
            pairs.push(p);
        }
    }
    linked.link(archive, account, pairs).await?;

    let mut queued = Vec::with_capacity(batch.len());
    let mut mapped = Vec::with_capacity(batch.len());
    for (i, m) in batch.iter().enumerate() {
        if let Some(inbound) = map::from_live(&m.message, &m.info) {
            queued.push(archive.enqueue_live(account, inbound).await?);
            mapped.push(i);
        }
    }
    let mut outcomes = futures::future::try_join_all(queued).await?;

    // A redelivered message is usually a plain duplicate; one whose first delivery could not
    // be decrypted replaces its placeholder (the phone's resend keeps the id).
    let resent: Vec<usize> = (0..outcomes.len())
        .filter(|&k| matches!(outcomes[k], IngestOutcome::Duplicate { .. }))
        .collect();
    let again: Vec<(usize, crate::archive::Inbound)> = resent
        .into_iter()
        .filter_map(|k| {
            let m = &batch[mapped[k]];
            let inbound = map::from_live(&m.message, &m.info)?;
            (inbound.kind != wazap_shared::wire::MessageType::Unknown).then_some((k, inbound))
        })
        .collect();
    if !again.is_empty() {
        let (ks, msgs): (Vec<usize>, Vec<_>) = again.into_iter().unzip();
        let replaced = archive.replace_placeholders(account, msgs, true).await?;
        for (k, r) in ks.into_iter().zip(replaced) {
            if let Some(o) = r {
                outcomes[k] = o;
            }
        }
    }
    tracing::debug!(
        messages = batch.len(),
        stored = outcomes.len(),
        "inbound batch committed"
    );
    Ok(outcomes)
}
