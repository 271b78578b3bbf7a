//! What request handlers share. [`AppState`] is the process's, one for both listeners: the bus
//! to the worker, the verification keys (one cache, one refresher), the tool set and the send
//! operations. [`ListenerPolicy`] is each listener's own: the `Host`/`Origin` values it admits
//! and its concurrency permits.

use std::sync::Arc;

use async_nats::Client;
use tokio_util::sync::CancellationToken;
use wazap_shared::subjects::Subjects;

use crate::bus::Bus;
use crate::config::Config;
use crate::http::host::HostPolicy;
use crate::http::permits::{BodyBudget, Permits};
use crate::jwks::KeyCache;
use crate::mcp::ToolSet;
use crate::objects::{MediaStore, PER_CREDENTIAL_BYTES};
use crate::send::Sender;

/// The state every listener of the process shares.
#[derive(Debug)]
pub(crate) struct AppState {
    /// The way to the worker.
    pub(crate) bus: Bus,
    /// The worker's public keys.
    pub(crate) keys: Arc<KeyCache>,
    /// The MCP tools this deployment serves, with their body limits.
    pub(crate) tools: Arc<ToolSet>,
    /// The send operations (MCP send tools and `/api/send/*`).
    pub(crate) sender: Sender,
    /// Whether the send tools and `/api/send/*` exist (`WAZAP_OUTBOUND`).
    pub(crate) outbound: bool,
    /// The bytes request bodies may hold at once, both listeners together
    /// (`WAZAP_MCP_BODY_BUDGET_MIB`).
    pub(crate) body_budget: BodyBudget,
}

impl AppState {
    /// The process's state over `nats`; `shutdown` is the gateway's.
    pub(crate) fn new(config: &Config, nats: Client, shutdown: &CancellationToken) -> Arc<Self> {
        crate::metrics::register_nats_gauge(&nats);
        let bus = Bus::new(nats.clone(), &config.nats_prefix, shutdown.clone());
        let media = MediaStore::new(
            nats,
            Subjects::new(&config.nats_prefix).media_bucket(),
            config.nats.replicas,
            PER_CREDENTIAL_BYTES,
        );
        Arc::new(Self {
            sender: Sender::new(bus.clone(), Arc::new(media), config.send_deadline),
            outbound: config.outbound,
            body_budget: BodyBudget::new(config.body_budget_bytes),
            keys: Arc::new(KeyCache::new(bus.clone())),
            tools: Arc::new(ToolSet::new(config)),
            bus,
        })
    }
}

/// What each listener keeps for itself in front of `/mcp` and `/api/send/*`: the `Host` and
/// `Origin` values it admits (the MCP listener: `WAZAP_PUBLIC_HOSTS`; the owner listener: the
/// host:port of `WAZAP_OWNER_ORIGIN`) and its concurrency permits.
///
/// The permits are per listener on purpose, `WAZAP_MCP_MAX_CONCURRENCY` per credential each (and
/// one more held back for another credential: `http/permits`), not one pool for the process: a parked `wait_for_messages` holds its permit for up to 55 s, so with the default of 2
/// a shared pool would let two agents' long polls on one listener answer `busy` to every request on
/// the other (the owner listener included). DESIGN §6 gives the owner listener "the same limits" as
/// the MCP listener, not a share of its; the price is that a gateway serving `/mcp` on both
/// listeners can have twice the limit (plus two) in flight.
#[derive(Debug)]
pub(crate) struct ListenerPolicy {
    /// Accepted `Host` and `Origin` values.
    pub(crate) hosts: HostPolicy,
    /// One permit per request in flight on this listener, counted per credential.
    pub(crate) permits: Arc<Permits>,
    /// The OAuth authorization server `/mcp`'s metadata names: the owner listener's origin
    /// (`WAZAP_OWNER_ORIGIN`).
    pub(crate) authorization_server: String,
}

impl ListenerPolicy {
    /// A listener bound to `bound_port` admitting `public_hosts`, with `config`'s permits.
    pub(crate) fn new(config: &Config, public_hosts: &[String], bound_port: u16) -> Arc<Self> {
        Arc::new(Self {
            hosts: HostPolicy::new(public_hosts, bound_port),
            permits: Permits::new(config.mcp_max_concurrency),
            authorization_server: config.owner_origin.clone(),
        })
    }
}
