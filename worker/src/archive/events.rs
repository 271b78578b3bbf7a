//! Publishing "the archive advanced to position P" on `<prefix>.events.archive` (DESIGN §8),
//! so gateways waiting in `wait_for_messages` wake without polling.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wazap_shared::subjects::Subjects;

use super::Archive;

/// Publish `{"position": N}` on `<prefix>.events.archive` after every commit that stored
/// messages (bursts coalesce to the latest position), until `shutdown`.
pub fn spawn_event_publisher(
    archive: &Archive,
    nats: async_nats::Client,
    subjects: &Subjects,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let mut committed = archive.committed();
    let subject = subjects.archive_events();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                changed = committed.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
            let position = *committed.borrow_and_update();
            let body = serde_json::json!({ "position": position }).to_string();
            if let Err(e) = nats.publish(subject.clone(), body.into()).await {
                tracing::warn!(error = %e, position, "could not publish an archive event");
            }
        }
    })
}
