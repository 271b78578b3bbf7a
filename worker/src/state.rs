//! The worker's shared state: cheap-to-clone handles, built once by `server::run`, and the
//! accounts this worker serves now ([`Served`]), which [`crate::fleet`] adds and removes as it
//! takes and gives up their leases.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use deadpool_postgres::Pool;
use wazap_shared::ErrorCode;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::SyncState;

use crate::archive::read::search::SearchStats;
use crate::archive::{Archive, ArchiveMeta};
use crate::connector::DynConnector;
use crate::error::Error;
use crate::grants::{GrantCache, Tokens};
use crate::send::Sender;
use crate::send::gates::Targets;
use crate::supervise::Supervisor;

/// Handles every handler may use.
#[derive(Clone)]
pub struct AppState {
    /// The Postgres pool for reads and the owner's and grants' writes (not fenced: they do not
    /// belong to an account's writer).
    pub db: Pool,
    /// The archive's identity (cursors carry it).
    pub meta: ArchiveMeta,
    /// The NATS client.
    pub nats: async_nats::Client,
    /// This deployment's subjects.
    pub subjects: Subjects,
    /// Each connection's viewer at its last accepted request (read ops speculate with it).
    pub grants: GrantCache,
    /// The supervised tasks (`ping` answers not ready while one is down).
    pub supervisor: Supervisor,
    /// The check of every presented token (and whether loopback claims count).
    pub tokens: Arc<Tokens>,
    /// The accounts this worker serves now.
    pub served: Served,
    /// Copies of the JetStream buckets this worker creates (`WAZAP_NATS_REPLICAS`).
    pub nats_replicas: usize,
    /// The planner's statistics `search_messages` chooses its index reads with.
    pub(crate) search_stats: SearchStats,
}

/// One account this worker serves: it holds the account's lease, and writes its archive and
/// journal on a pool fenced by it.
pub struct ServedAccount {
    /// The account id.
    pub id: String,
    /// Postgres sessions fenced by the account's lease.
    pub pool: Pool,
    /// The account's archive writer.
    pub archive: Archive,
    /// The account's WhatsApp side.
    pub connector: DynConnector,
    /// What the send ops of this account run with.
    pub sender: Sender,
}

/// The accounts served by this worker; cheap to clone.
#[derive(Clone, Default)]
pub struct Served(Arc<RwLock<HashMap<String, Arc<ServedAccount>>>>);

impl Served {
    /// The account `id`, when this worker serves it.
    pub fn get(&self, id: &str) -> Option<Arc<ServedAccount>> {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Serve `account` from now on.
    pub fn insert(&self, account: ServedAccount) -> Arc<ServedAccount> {
        let account = Arc::new(account);
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(account.id.clone(), account.clone());
        account
    }

    /// Stop serving `id`.
    pub fn remove(&self, id: &str) -> Option<Arc<ServedAccount>> {
        self.0.write().unwrap_or_else(|p| p.into_inner()).remove(id)
    }

    /// The ids served, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = (self.0.read().unwrap_or_else(|p| p.into_inner()))
            .keys()
            .cloned()
            .collect();
        ids.sort();
        ids
    }
}

impl AppState {
    /// The state over these handles, serving no account yet, with empty memos.
    pub fn new(
        db: Pool,
        meta: ArchiveMeta,
        nats: async_nats::Client,
        subjects: Subjects,
        supervisor: Supervisor,
    ) -> Self {
        Self {
            tokens: Arc::new(Tokens::new(db.clone(), false)),
            db,
            meta,
            nats,
            subjects,
            grants: GrantCache::default(),
            supervisor,
            served: Served::default(),
            nats_replicas: 1,
            search_stats: SearchStats::default(),
        }
    }

    /// The same state, creating its JetStream buckets with `replicas` copies.
    pub fn with_replicas(mut self, replicas: usize) -> Self {
        self.nats_replicas = replicas;
        self
    }

    /// The same state, believing a gateway's loopback header when `trust` (see
    /// [`crate::grants::verify::loopback_trusted`]); a new state believes none.
    pub fn trusting_loopback(mut self, trust: bool) -> Self {
        self.tokens = Arc::new(Tokens::new(self.db.clone(), trust));
        self
    }

    /// Serve `account` (its archive on `pool`, its `connector`), sending only while `lease` is
    /// held when there is one ([`crate::send::Sender::lease`]).
    pub fn serve(
        &self,
        pool: Pool,
        archive: Archive,
        connector: DynConnector,
        lease: Option<crate::lease::Held>,
    ) -> Arc<ServedAccount> {
        let sender = Sender {
            db: pool.clone(),
            archive: archive.clone(),
            connector: connector.clone(),
            nats: self.nats.clone(),
            subjects: self.subjects.clone(),
            grants: self.grants.clone(),
            targets: Targets::default(),
            lease,
            handling: Default::default(),
        };
        self.served.insert(ServedAccount {
            id: archive.account().to_owned(),
            pool,
            archive,
            connector,
            sender,
        })
    }

    /// The account `id` as served here; when it is not: `account_not_found` if no such account
    /// is registered (or it was removed), else `worker_unavailable` (it is between two workers,
    /// or its worker is starting).
    pub async fn serving(&self, id: &str) -> Result<Arc<ServedAccount>, Error> {
        if let Some(a) = self.served.get(id) {
            return Ok(a);
        }
        let db = self
            .db
            .get()
            .await
            .map_err(|e| Error::internal("serving: pool", e))?;
        match crate::accounts::get(&db, id).await {
            Ok(a) if a.removed_at.is_none() => Err(Error::new(
                ErrorCode::WorkerUnavailable,
                "no worker serves this account right now; try again shortly",
            )),
            Ok(_) | Err(crate::accounts::RegistryError::NotFound) => {
                Err(Error::new(ErrorCode::AccountNotFound, "no such account"))
            }
            Err(e) => Err(Error::internal("serving: registry", e)),
        }
    }

    /// `account`'s session state: its connector's when served here, else the one its worker
    /// last recorded while its lease still counts ([`crate::fleet`]), else `offline` (no
    /// worker serves it).
    pub async fn sync_state(&self, account: &str) -> SyncState {
        if let Some(a) = self.served.get(account) {
            return a.connector.state(account);
        }
        let recorded = async {
            let db = self.db.get().await.ok()?;
            crate::db::account_status::served_state(&db, account)
                .await
                .ok()?
        };
        recorded.await.unwrap_or(SyncState::Offline)
    }
}
