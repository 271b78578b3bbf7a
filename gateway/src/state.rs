//! What every request handler shares: the configuration, the NATS bus to the worker, the
//! verification keys, the Host/Origin policy, the concurrency permits and the tool set.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Client;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use wazap_shared::RpcError;
use wazap_shared::bus::{self, Rpc};
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::Subjects;

use crate::config::Config;
use crate::events::ArchiveEvents;
use crate::http::host::HostPolicy;
use crate::jwks::KeyCache;
use crate::mcp::ToolSet;
use crate::objects::MediaStore;
use crate::send::Sender;

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
            events: Arc::new(ArchiveEvents::new(nats.clone(), subjects.archive_events())),
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

/// Shared state of listener A.
#[derive(Debug)]
pub(crate) struct AppState {
    /// The way to the worker.
    pub(crate) bus: Bus,
    /// The worker's public keys.
    pub(crate) keys: Arc<KeyCache>,
    /// Accepted `Host` and `Origin` values.
    pub(crate) hosts: HostPolicy,
    /// One permit per request in flight.
    pub(crate) permits: Arc<Semaphore>,
    /// The MCP tools this deployment serves, with their body limits.
    pub(crate) tools: Arc<ToolSet>,
    /// The send operations (MCP send tools and `/api/send/*`).
    pub(crate) sender: Sender,
    /// Whether the send tools and `/api/send/*` exist (`WAZAP_OUTBOUND`).
    pub(crate) outbound: bool,
}

impl AppState {
    /// State for a listener bound to `bound_port`; `shutdown` is the gateway's.
    pub(crate) fn new(
        config: Config,
        nats: Client,
        bound_port: u16,
        shutdown: &CancellationToken,
    ) -> Arc<Self> {
        crate::metrics::register_nats_gauge(&nats);
        let bus = Bus::new(nats.clone(), &config.nats_prefix, shutdown.clone());
        let media = MediaStore::new(nats, Subjects::new(&config.nats_prefix).media_bucket());
        Arc::new(Self {
            sender: Sender::new(bus.clone(), Arc::new(media)),
            outbound: config.outbound,
            keys: Arc::new(KeyCache::new(bus.clone())),
            hosts: HostPolicy::new(&config.public_hosts, bound_port),
            permits: Arc::new(Semaphore::new(config.mcp_max_concurrency)),
            tools: Arc::new(ToolSet::new(&config)),
            bus,
        })
    }
}
