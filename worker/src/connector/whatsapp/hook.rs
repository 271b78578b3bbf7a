//! Durable ingest: whatsapp-rust's `InboundDurabilityHook` holds WhatsApp's ack for decrypted
//! messages until [`commit`] returns `Ok`, which it does only after the archive committed every
//! message of the batch. A failed commit returns `Err`: no ack, the server redelivers, and the
//! archive's (chat, sender, id) key drops what was already stored.

use std::sync::Arc;

use whatsapp_rust::types::events::InboundMessage;
use whatsapp_rust::{Client, InboundDurabilityHook};

use super::map;
use crate::archive::{Archive, IngestOutcome};

/// The hook registered on the client.
pub struct ArchiveHook {
    /// Where messages go.
    pub archive: Archive,
    /// The account they belong to.
    pub account: String,
}

#[whatsapp_rust::async_trait]
impl InboundDurabilityHook for ArchiveHook {
    async fn on_messages(
        &self,
        _client: Arc<Client>,
        batch: &[InboundMessage],
    ) -> anyhow::Result<()> {
        commit(&self.archive, &self.account, batch)
            .await
            .map(|_| ())
    }
}

/// Store `batch` in arrival order (each through the live path, awaited together so they share
/// transactions) and return once all are committed. Messages that are protocol traffic are
/// skipped; the outcomes of the stored ones are returned in order.
pub async fn commit(
    archive: &Archive,
    account: &str,
    batch: &[InboundMessage],
) -> anyhow::Result<Vec<IngestOutcome>> {
    let mut queued = Vec::with_capacity(batch.len());
    for m in batch {
        if let Some(inbound) = map::from_live(&m.message, &m.info) {
            queued.push(archive.enqueue_live(account, inbound).await?);
        }
    }
    let outcomes = futures::future::try_join_all(queued).await?;
    tracing::debug!(
        messages = batch.len(),
        stored = outcomes.len(),
        "inbound batch committed"
    );
    Ok(outcomes)
}
