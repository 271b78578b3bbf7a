//! The archive-event subscription (DESIGN §8): one NATS subscription per gateway on
//! `<prefix>.events.archive`, fanned out to every waiting `wait_for_messages` call through a
//! watch channel holding the latest announced position.
//!
//! One subscription instead of one per waiter keeps 1,000 waits cheap. It is made on the first
//! wait and confirmed by the server (a flush) before that wait asks the worker, so an event for
//! a commit after the first poll can never slip past; later waits take a receiver of the same,
//! already active, subscription before they poll.

use std::sync::Mutex;

use async_nats::Client;
use futures::StreamExt as _;
use tokio::sync::{OnceCell, watch};
use tokio::task::AbortHandle;
use wazap_shared::{ErrorCode, RpcError};

/// The body of an archive event: `{"position": N}`.
#[derive(Debug, serde::Deserialize)]
struct ArchiveEvent {
    position: i64,
}

/// The gateway's view of archive events; cheap to share (behind an `Arc`).
#[derive(Debug)]
pub(crate) struct ArchiveEvents {
    nats: Client,
    subject: String,
    latest: OnceCell<watch::Receiver<i64>>,
    task: Mutex<Option<AbortHandle>>,
}

impl ArchiveEvents {
    /// Events on `subject`; nothing is subscribed until the first [`ArchiveEvents::receiver`].
    pub(crate) fn new(nats: Client, subject: String) -> Self {
        Self {
            nats,
            subject,
            latest: OnceCell::new(),
            task: Mutex::new(None),
        }
    }

    /// A receiver of every archive event from now on (its current value already marked
    /// seen). When this returns, the subscription is active at the server.
    pub(crate) async fn receiver(&self) -> Result<watch::Receiver<i64>, RpcError> {
        let rx = self.latest.get_or_try_init(|| self.subscribe()).await?;
        let mut rx = rx.clone();
        rx.borrow_and_update();
        Ok(rx)
    }

    async fn subscribe(&self) -> Result<watch::Receiver<i64>, RpcError> {
        let mut sub = self
            .nats
            .subscribe(self.subject.clone())
            .await
            .map_err(unavailable)?;
        // The SUB must have reached the server before anyone polls the worker.
        self.nats.flush().await.map_err(unavailable)?;
        let (tx, rx) = watch::channel(0_i64);
        let task = tokio::spawn(async move {
            while let Some(msg) = sub.next().await {
                match serde_json::from_slice::<ArchiveEvent>(&msg.payload) {
                    Ok(e) => {
                        tx.send_replace(e.position);
                    }
                    Err(_) => tracing::warn!("ignored an unreadable archive event"),
                }
            }
            tracing::warn!("the archive event subscription ended; waits fall back to polling");
        });
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        Ok(rx)
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
