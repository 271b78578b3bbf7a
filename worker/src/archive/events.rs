//! Publishing "the account's archive advanced to position P" on
//! `<prefix>.events.archive.<account>` (DESIGN §8), so gateways waiting in `wait_for_messages`
//! wake without polling.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use wazap_shared::subjects::Subjects;

use super::Archive;
use crate::supervise::Supervisor;

/// Publish `{"position": N}` on `<prefix>.events.archive.<account>` after every commit that stored
/// messages (bursts coalesce to the latest position), until the supervisor stops or the
/// writer is gone. Started again by `supervisor` if it fails.
pub fn spawn_event_publisher(
    archive: &Archive,
    nats: async_nats::Client,
    subjects: &Subjects,
    supervisor: &Supervisor,
) {
    let committed = archive.committed();
    let subject = subjects.archive_events_of(archive.account());
    let stop = supervisor.stop().clone();
    supervisor.spawn_restarting("archive event publisher", move || {
        publish(
            committed.clone(),
            nats.clone(),
            subject.clone(),
            stop.clone(),
        )
    });
}

/// The publisher's loop.
async fn publish(
    mut committed: watch::Receiver<i64>,
    nats: async_nats::Client,
    subject: String,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            changed = committed.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
        }
        let position = *committed.borrow_and_update();
        let body = serde_json::json!({ "position": position }).to_string();
        if let Err(e) = nats.publish(subject.clone(), body.into()).await {
            tracing::warn!(error = %e, position, "could not publish an archive event");
        }
    }
}
