//! Connectors: the WhatsApp side of the worker. `demo` serves a built-in sample archive, `sim`
//! is a deterministic test peer driven over NATS, and `whatsapp` (a later issue) is the real
//! connection. Everything a connector observes enters the archive through [`crate::archive`];
//! [`inbound::to_inbound`] maps the sim's wire messages (also the demo's) onto [`Inbound`].
//!
//! [`Inbound`]: crate::archive::Inbound

use std::sync::Arc;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::HistoryProgress;

use crate::archive::Archive;
use crate::config::{Config, ConnectorKind};
use crate::supervise::Supervisor;
use outbound::{DynReceipts, OutboundMessage, SendAck, SendError};

pub use account::{AccountAction, ControlError, PairingInfo};

pub mod account;
pub mod demo;
pub mod inbound;
pub mod outbound;
pub mod sim;
pub mod whatsapp;

/// What the worker asks of a connector.
pub trait Connector: Send + Sync + 'static {
    /// The session state of `account_id` right now.
    fn state(&self, account_id: &str) -> SyncState;

    /// The history sync `account_id` has received on its current connection, if any.
    fn history(&self, account_id: &str) -> Option<HistoryProgress> {
        let _ = account_id;
        None
    }

    /// Whether the connector can ever send (`demo` cannot).
    fn can_send(&self) -> bool;

    /// Caveats about `account_id`'s archive right now that the user should hear (the read
    /// tools' `notes`, the dashboard), beyond what its state says; fixed wordings, never
    /// message contents.
    fn notes(&self, account_id: &str) -> Vec<&'static str> {
        let _ = account_id;
        Vec::new()
    }

    /// Ask the phone for history of `chat_id` older than what the archive has, and wait (bounded
    /// by `wait`) until it has been archived. Returns how many messages arrived in time.
    fn fetch_older(
        &self,
        account_id: &str,
        chat_id: &str,
        wait: std::time::Duration,
    ) -> BoxFuture<'_, anyhow::Result<u32>>;

    /// Download the bytes of an attachment that are not cached yet (`attachments.data` is
    /// null), from the download info kept at receive time; `None` when the connector has no
    /// way to get them. `demo` and `sim` store every file's bytes at ingest, so they keep this
    /// default.
    fn download(
        &self,
        account_id: &str,
        attachment_id: &str,
    ) -> BoxFuture<'_, anyhow::Result<Option<Vec<u8>>>> {
        let _ = (account_id, attachment_id);
        Box::pin(async { Ok(None) })
    }

    /// Transmit one message and wait (bounded by the connector) for WhatsApp's server
    /// acknowledgement. The error tells the journal whether anything may have left:
    /// [`SendError::CannotSend`] and [`SendError::BeforeTransmission`] mean nothing did;
    /// [`SendError::AfterTransmission`] and [`SendError::NoAck`] mean it may have.
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<SendAck, SendError>>;

    /// What the dashboard shows to link a phone to `account_id` right now.
    fn pairing(&self, account_id: &str) -> PairingInfo {
        let _ = account_id;
        PairingInfo::default()
    }

    /// Carry out an owner action on `account_id`; connectors that cannot refuse with
    /// [`ControlError::NotNow`].
    fn control(
        &self,
        account_id: &str,
        action: AccountAction,
    ) -> BoxFuture<'_, Result<(), ControlError>> {
        let _ = (account_id, action);
        Box::pin(async {
            Err(ControlError::NotNow(
                "this connector has no account to control",
            ))
        })
    }
}

/// A shared connector handle.
pub type DynConnector = Arc<dyn Connector>;

/// Start `archive`'s account's connector, of `kind`: `demo` seeds the sample archive (once, into
/// an empty account); `sim` starts serving `<prefix>.sim.<account>.>` (subscribed before this
/// returns); `whatsapp` takes the account's device store in the data directory and connects in
/// the background, handing the receipts of sent messages to `receipts` (the other two have
/// none). Their long-lived tasks run under `supervisor` (a failure stops the worker) and stop
/// with its stop token. A `paused` account (the owner paused it, [`crate::accounts::paused`])
/// starts paused: `whatsapp` does not connect until resumed, `sim` reports `paused`.
#[allow(clippy::too_many_arguments)]
pub async fn start(
    config: &Config,
    kind: ConnectorKind,
    paused: bool,
    archive: Archive,
    pool: Pool,
    nats: async_nats::Client,
    subjects: Subjects,
    receipts: DynReceipts,
    supervisor: &Supervisor,
) -> anyhow::Result<DynConnector> {
    match kind {
        ConnectorKind::Whatsapp => Ok(whatsapp::WhatsappConnector::start(
            archive,
            pool,
            &config.data_dir,
            config.whatsapp_network.clone(),
            receipts,
            paused,
            supervisor,
        )
        .await?),
        ConnectorKind::Demo => {
            demo::seed(&archive, &pool, chrono::Utc::now()).await?;
            Ok(Arc::new(demo::DemoConnector))
        }
        ConnectorKind::Sim => {
            let sim = sim::SimConnector::new(archive, pool, paused);
            sim.clone().serve(nats, subjects, supervisor).await?;
            Ok(sim)
        }
    }
}
