//! The `demo` connector: seeds the built-in sample archive once (into an empty default account,
//! through the same ingest paths as the sim) and reports `demo`; it cannot send (every send is
//! `CannotSend(demo)`) and has no older history to fetch.

pub mod data;

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use futures::future::BoxFuture;
use wazap_shared::wire::SyncState;

use self::data::demo_data;
use super::Connector;
use super::inbound::{story_to_inbound, to_inbound};
use crate::archive::{Archive, ContactUpdate, GroupUpdate};
use crate::connector::outbound::{OutboundMessage, SendAck, SendError};

/// The demo connector.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoConnector;

impl Connector for DemoConnector {
    fn state(&self, _account_id: &str) -> SyncState {
        SyncState::Demo
    }

    fn can_send(&self) -> bool {
        false
    }

    fn fetch_older(
        &self,
        _account_id: &str,
        _chat_id: &str,
        _wait: std::time::Duration,
    ) -> BoxFuture<'_, anyhow::Result<u32>> {
        Box::pin(async { Ok(0) })
    }

    fn send(&self, _message: OutboundMessage) -> BoxFuture<'_, Result<SendAck, SendError>> {
        Box::pin(async { Err(SendError::CannotSend(SyncState::Demo)) })
    }

    /// Nothing to pair: the page says why (actions keep the trait's refusal, `NotNow`).
    fn pairing(&self, _account_id: &str) -> super::PairingInfo {
        super::PairingInfo {
            detail: Some("demo: a built-in sample archive; no phone can be linked".into()),
            ..Default::default()
        }
    }
}

/// Ingest the sample archive (dated relative to `now`) into `archive`'s account unless it
/// already has messages. Returns how many messages and stories were stored.
pub async fn seed(archive: &Archive, pool: &Pool, now: DateTime<Utc>) -> anyhow::Result<u32> {
    let account = archive.account();
    let has_messages = pool
        .get()
        .await?
        .query_opt(
            "select 1 from messages where account_id = $1 limit 1",
            &[&account],
        )
        .await?
        .is_some();
    if has_messages {
        return Ok(0);
    }
    let data = demo_data(now);
    archive
        .set_own_ids(account, Some(data.own_jid), None)
        .await?;
    for c in data.contacts {
        archive
            .upsert_contact(
                account,
                ContactUpdate {
                    jid: c.jid,
                    lid: c.lid,
                    name: c.name,
                },
            )
            .await?;
    }
    for g in data.groups {
        archive
            .upsert_group(
                account,
                GroupUpdate {
                    jid: g.jid,
                    name: g.name,
                    participants: g.participants,
                },
            )
            .await?;
    }
    let mut inbound = Vec::with_capacity(data.messages.len() + data.stories.len());
    for m in data.messages {
        inbound.push(to_inbound(m).map_err(|e| anyhow::anyhow!("demo message: {e}"))?);
    }
    for s in data.stories {
        inbound.push(story_to_inbound(s).map_err(|e| anyhow::anyhow!("demo story: {e}"))?);
    }
    let stored = archive.ingest_batch(account, inbound).await?;
    tracing::info!(stored, "demo archive seeded");
    Ok(stored)
}
