//! The archive-event subscription (DESIGN §8): one NATS subscription per gateway on
//! `<prefix>.events.archive.>` (each account's writer announces on
//! `<prefix>.events.archive.<account>`), fanned out to every waiting `wait_for_messages` call
//! through a watch channel per account holding its latest announced position (positions are
//! per account, so one account's events never wake another's waits).
//!
//! One subscription instead of one per waiter keeps 1,000 waits cheap. It is made on the first
//! wait and confirmed by the server (a flush) before that wait asks the worker, so an event for
//! a commit after the first poll can never slip past; later waits take a receiver of the same,
//! already active, subscription before they poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_nats::Client;
use futures::StreamExt as _;
use tokio::sync::{OnceCell, watch};
use tokio::task::AbortHandle;
use wazap_shared::subjects::Subjects;
use wazap_shared::{ErrorCode, RpcError};

/// The body of an archive event: `{"position": N}`.
#[derive(Debug, serde::Deserialize)]
struct ArchiveEvent {
    position: i64,
}

/// Each account's latest announced position.
type Latest = Arc<Mutex<HashMap<String, watch::Sender<i64>>>>;

/// The gateway's view of archive events; cheap to share (behind an `Arc`).
#[derive(Debug)]
pub(crate) struct ArchiveEvents {
    nats: Client,
    subjects: Subjects,
    latest: Latest,
    subscribed: OnceCell<()>,
    task: Mutex<Option<AbortHandle>>,
}

impl ArchiveEvents {
    /// The events of `subjects`' deployment; nothing is subscribed until the first
    /// [`ArchiveEvents::receiver`].
    pub(crate) fn new(nats: Client, subjects: Subjects) -> Self {
        Self {
            nats,
            subjects,
            latest: Latest::default(),
            subscribed: OnceCell::new(),
            task: Mutex::new(None),
        }
    }

    /// A receiver of `account`'s archive events from now on (its current value already marked
    /// seen). When this returns, the subscription is active at the server.
    pub(crate) async fn receiver(&self, account: &str) -> Result<watch::Receiver<i64>, RpcError> {
        self.subscribed.get_or_try_init(|| self.subscribe()).await?;
        let mut latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
        let mut rx = latest
            .entry(account.to_owned())
            .or_insert_with(|| watch::channel(0_i64).0)
            .subscribe();
        rx.borrow_and_update();
        Ok(rx)
    }

    async fn subscribe(&self) -> Result<(), RpcError> {
        let mut sub = self
            .nats
            .subscribe(self.subjects.archive_events())
            .await
            .map_err(unavailable)?;
        // The SUB must have reached the server before anyone polls the worker.
        self.nats.flush().await.map_err(unavailable)?;
        let (latest, subjects) = (self.latest.clone(), self.subjects.clone());
        let task = tokio::spawn(async move {
            while let Some(msg) = sub.next().await {
                let event = serde_json::from_slice::<ArchiveEvent>(&msg.payload);
                match (subjects.archive_event_account(&msg.subject), event) {
                    (Some(account), Ok(e)) => {
                        let latest = latest.lock().unwrap_or_else(|p| p.into_inner());
                        // Nobody waits on an account without a channel yet.
                        if let Some(tx) = latest.get(account) {
                            tx.send_replace(e.position);
                        }
                    }
                    _ => tracing::warn!("ignored an unreadable archive event"),
                }
            }
            tracing::warn!("the archive event subscription ended; waits fall back to polling");
        });
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        Ok(())
    }
}

impl Drop for ArchiveEvents {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
    }
}

/// The error of a subscription the bus could not make.
fn unavailable<E>(_: E) -> RpcError {
    RpcError::new(
        ErrorCode::WorkerUnavailable,
        "the message bus is unavailable",
    )
}
