//! The worker's shared state: cheap-to-clone handles, built once by `server::run`.

use std::sync::Arc;

use deadpool_postgres::Pool;
use wazap_shared::subjects::Subjects;

use crate::archive::Archive;
use crate::connector::DynConnector;
use crate::grants::{GrantCache, Tokens};
use crate::send::Sender;
use crate::send::gates::Targets;
use crate::supervise::Supervisor;

/// Handles every handler may use.
#[derive(Clone)]
pub struct AppState {
    /// The Postgres pool.
    pub db: Pool,
    /// The archive (its single writer and its identity).
    pub archive: Archive,
    /// The WhatsApp side.
    pub connector: DynConnector,
    /// The NATS client.
    pub nats: async_nats::Client,
    /// This deployment's subjects.
    pub subjects: Subjects,
    /// Each connection's viewer at its last accepted request (read ops speculate with it).
    pub grants: GrantCache,
    /// What the send ops run with (the same handles, and the same grant cache).
    pub sender: Sender,
    /// The supervised tasks (`ping` answers not ready while one is down).
    pub supervisor: Supervisor,
    /// The check of every presented token (and whether loopback claims count).
    pub tokens: Arc<Tokens>,
}

impl AppState {
    /// The state over these handles, with empty memos.
    pub fn new(
        db: Pool,
        archive: Archive,
        connector: DynConnector,
        nats: async_nats::Client,
        subjects: Subjects,
        supervisor: Supervisor,
    ) -> Self {
        let grants = GrantCache::default();
        let sender = Sender {
            db: db.clone(),
            archive: archive.clone(),
            connector: connector.clone(),
            nats: nats.clone(),
            subjects: subjects.clone(),
            grants: grants.clone(),
            targets: Targets::default(),
            lease: None,
            handling: Default::default(),
        };
        Self {
            tokens: Arc::new(Tokens::new(db.clone(), false)),
            db,
            archive,
            connector,
            nats,
            subjects,
            grants,
            sender,
            supervisor,
        }
    }

    /// The same state, believing a gateway's loopback header when `trust` (see
    /// [`crate::grants::verify::loopback_trusted`]); a new state believes none.
    pub fn trusting_loopback(mut self, trust: bool) -> Self {
        self.tokens = Arc::new(Tokens::new(self.db.clone(), trust));
        self
    }

    /// The same state, sending only while `lease` is held ([`crate::send::Sender::lease`]).
    pub fn holding(mut self, lease: crate::lease::Held) -> Self {
        self.sender.lease = Some(lease);
        self
    }
}
