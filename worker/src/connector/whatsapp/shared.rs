//! What the connector, the session loop, the durability hook and the event drain share, and
//! the event handler registered on each client. Events reach [`Forward`] synchronously, in
//! arrival order per producing task: acks and the state fold happen there at once; archive work
//! (history, contacts, groups, undecryptable messages) and the receipts of sent messages go to
//! [`super::events::drain`] through the bounded [`super::queue`], which holds the client back
//! rather than grow without limit while the archive cannot commit.

use std::sync::{Arc, Mutex, RwLock};

use chrono::Utc;
use deadpool_postgres::Pool;
use whatsapp_rust::Client;
use whatsapp_rust::types::events::{Event, EventHandler};

use super::history::Pending;
use super::people::Linked;
use super::queue;
use super::send::Acks;
use super::stall::Stall;
use super::status::Status;
use crate::archive::Archive;
use crate::config::Network;
use crate::connector::outbound::DynReceipts;

/// What an event that carries no payload of note counts for in the queue's budget; a message
/// batch counts this per message.
const SMALL_EVENT: usize = 4 << 10;

/// What the connector and the loop share.
pub struct Shared {
    /// The folded session state.
    pub status: Mutex<Status>,
    /// Whether the archive can commit what arrives.
    pub stall: Arc<Stall>,
    /// The running client, if any.
    pub client: RwLock<Option<Arc<Client>>>,
    /// Sends waiting for their server ack.
    pub acks: Acks,
    /// On-demand history requests waiting for their answer.
    pub pending: Pending,
    /// The archive.
    pub archive: Archive,
    /// The archive's database (names for group notifications, anchors for older history).
    pub pool: Pool,
    /// LID ↔ phone pairs already linked in the archive.
    pub linked: Arc<Linked>,
    /// The account this device belongs to.
    pub account: String,
    /// Where the client connects.
    pub network: Network,
    /// The reconnect after a failed archive commit.
    pub redeliver: super::hook::Redeliver,
    /// Where delivery and read receipts of sent messages are recorded.
    pub receipts: DynReceipts,
    /// Archive work from events, in arrival order.
    work: queue::Sender<Arc<Event>>,
}

impl Shared {
    /// A new shared state and the receiver [`super::events::drain`] consumes.
    pub fn new(
        archive: Archive,
        pool: Pool,
        account: String,
        network: Network,
        receipts: DynReceipts,
    ) -> (Arc<Self>, queue::Receiver<Arc<Event>>) {
        let (work, rx) = queue::bounded(queue::BUDGET);
        let redeliver = super::hook::Redeliver::new(pool.clone());
        let shared = Arc::new(Self {
            status: Mutex::new(Status::default()),
            stall: Arc::default(),
            client: RwLock::new(None),
            acks: Acks::default(),
            pending: Pending::default(),
            archive,
            pool,
            linked: Arc::default(),
            account,
            network,
            redeliver,
            receipts,
            work,
        });
        (shared, rx)
    }

    /// The folded state (poison-tolerant).
    pub fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The running client.
    pub fn client(&self) -> Option<Arc<Client>> {
        self.client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn set_client(&self, client: Option<Arc<Client>>) {
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = client;
    }

    /// Handle one client event: acks and state now, archive work queued (waiting for room).
    pub fn on_event(&self, event: Arc<Event>) {
        self.acks.on_event(&event);
        self.status().apply(&event, Utc::now());
        let queue = match &*event {
            Event::Messages(b) => !b.hook_committed,
            Event::HistorySync(_)
            | Event::ContactUpdate(_)
            | Event::GroupUpdate(_)
            | Event::UndecryptableMessage(_)
            | Event::PairSuccess(_)
            | Event::Connected(_) => true,
            Event::Receipt(r) => super::receipts::kind(&r.r#type).is_some(),
            _ => false,
        };
        if queue {
            let (bytes, may_wait) = weight(&event);
            if !self.work.push(event, bytes, may_wait) {
                tracing::debug!("the event drain has stopped; event not archived");
            }
        }
    }
}

/// What a queued event holds in memory, and whether its producer may wait for room.
/// `Connected` and `PairSuccess` never wait: they come once per connection, weigh nothing, and
/// may be dispatched from the task that reads the socket, which the drain's own work (group
/// lists, IQs) needs running.
fn weight(event: &Event) -> (usize, bool) {
    match event {
        Event::HistorySync(h) => (h.compressed_bytes().len(), true),
        Event::Messages(b) => (b.messages.len().max(1) * SMALL_EVENT, true),
        Event::Connected(_) | Event::PairSuccess(_) => (SMALL_EVENT, false),
        _ => (SMALL_EVENT, true),
    }
}

/// The event handler registered on each client.
pub struct Forward(pub Arc<Shared>);

impl EventHandler for Forward {
    fn handle_event(&self, event: Arc<Event>) {
        self.0.on_event(event);
    }
}
