//! The way to the worker: one NATS client, this deployment's subjects and the archive events,
//! shared by everything in the gateway that calls the worker (tools, the send API, key
//! refreshes, readiness, the owner pages). Its own module so that those callers depend on it
//! and not on [`crate::state`], which depends on them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Client;
use tokio_util::sync::CancellationToken;
use wazap_shared::RpcError;
use wazap_shared::bus::{self, Rpc};
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::Subjects;

use crate::events::ArchiveEvents;

/// The way to the worker: a NATS client and this deployment's subjects.
#[derive(Debug, Clone)]
pub(crate) struct Bus {
    nats: Client,
    subjects: Subjects,
    events: Arc<ArchiveEvents>,
    /// Cancelled when the gateway begins to shut down: long waits answer at once.
    shutdown: CancellationToken,
}

impl Bus {
    /// A bus over `nats` under `prefix`.
    pub(crate) fn new(nats: Client, prefix: &str, shutdown: CancellationToken) -> Self {
        let subjects = Subjects::new(prefix);
        Self {
            events: Arc::new(ArchiveEvents::new(nats.clone(), subjects.clone())),
            nats,
            subjects,
            shutdown,
        }
    }

    /// Cancelled when the gateway shuts down (a pending `wait_for_messages` then answers
    /// `timed_out` instead of holding the drain).
    pub(crate) fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// The archive events (`<prefix>.events.archive`) that wake waiting calls.
    pub(crate) fn events(&self) -> &ArchiveEvents {
        &self.events
    }

    /// The NATS client (for connection-state checks).
    pub(crate) fn client(&self) -> &Client {
        &self.nats
    }

    /// This deployment's subjects (e.g. the media bucket's name).
    pub(crate) fn subjects(&self) -> &Subjects {
        &self.subjects
    }

    /// Call op `R` with `R::DEADLINE` (or `deadline`), logging the op, the connection id and
    /// the outcome once.
    pub(crate) async fn call<R: Rpc>(
        &self,
        grant: Option<&VerifiedGrant>,
        request: &R::Request,
        deadline: Option<Duration>,
    ) -> Result<R::Response, RpcError> {
        let started = Instant::now();
        let result = bus::call::<R>(&self.nats, &self.subjects, grant, request, deadline).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let connection = grant.map(|g| g.connection_id.as_str()).unwrap_or("-");
        match &result {
            Ok(_) => tracing::debug!(op = R::OP, connection.id = connection, elapsed_ms, "rpc ok"),
            Err(e) => tracing::info!(
                op = R::OP,
                connection.id = connection,
                elapsed_ms,
                code = e.code.as_str(),
                "rpc failed"
            ),
        }
        result
    }
}
