//! Connectors: the WhatsApp side of the worker. `demo` serves a built-in sample archive, `sim`
//! is a deterministic test peer driven over NATS, and `whatsapp` (a later issue) is the real
//! connection. Everything a connector observes enters the archive through [`crate::archive`].

use std::sync::Arc;

use futures::future::BoxFuture;
use wazap_shared::wire::SyncState;

pub mod demo;
pub mod demo_data;
pub mod sim;

/// What the worker asks of a connector.
pub trait Connector: Send + Sync + 'static {
    /// The session state of `account_id` right now.
    fn state(&self, account_id: &str) -> SyncState;

    /// Whether the connector can ever send (`demo` cannot).
    fn can_send(&self) -> bool;

    /// Ask the phone for history of `chat_id` older than what the archive has, and wait (bounded
    /// by `wait`) until it has been archived. Returns how many messages arrived in time.
    fn fetch_older(
        &self,
        account_id: &str,
        chat_id: &str,
        wait: std::time::Duration,
    ) -> BoxFuture<'_, anyhow::Result<u32>>;
}

/// A shared connector handle.
pub type DynConnector = Arc<dyn Connector>;
