//! What every request handler shares: the configuration, the NATS bus to the worker, the
//! verification keys, the Host/Origin policy, the concurrency permits and the tool set.

use std::sync::Arc;

use async_nats::Client;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use wazap_shared::subjects::Subjects;

use crate::bus::Bus;
use crate::config::Config;
use crate::http::host::HostPolicy;
use crate::jwks::KeyCache;
use crate::mcp::ToolSet;
use crate::objects::MediaStore;
use crate::send::Sender;

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
