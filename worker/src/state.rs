//! The worker's shared state: cheap-to-clone handles, built once by `server::run`.

use deadpool_postgres::Pool;
use wazap_shared::subjects::Subjects;

use crate::archive::Archive;
use crate::connector::DynConnector;

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
    pub grants: crate::grants::GrantCache,
    /// Where each chat id led the last send that looked it up (sends speculate with it).
    pub targets: crate::send::gates::Targets,
}
