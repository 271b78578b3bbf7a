//! The end-to-end harness: a real worker and real gateways (in-process, on port 0) against real
//! Postgres and NATS, each test with its own database and NATS subject prefix, driven by an MCP
//! client (rmcp's Streamable HTTP client) and by raw HTTP where the HTTP layer itself is tested.
//!
//! Services: `WAZAP_TEST_DATABASE_URL` (default the machine's Postgres) and `WAZAP_TEST_NATS_URL`
//! (default `nats://127.0.0.1:4222`; `scripts/test` starts a JetStream-capable server).

mod authenticated;
mod db;
pub mod fault;
pub mod fixtures;
mod gateway;
pub mod leak;
pub mod leak_scan;
pub mod mcp;
pub mod media_storm;
mod shortcuts;

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wazap_shared::bus::{self, Rpc};
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::grants::ReadScope;
use wazap_shared::wire::sim::SimAck;
use wazap_shared::{ErrorCode, RpcError};
use wazap_worker::config::ConnectorKind;

pub use authenticated::NatsUsers;

/// The process id in a lease holder's name (`<host>:<pid>:<random>`).
pub fn holder_pid(holder: &str) -> Option<&str> {
    holder.split(':').nth(1)
}
pub use db::TestDb;
pub use gateway::{ChildGateway, Gateway, post_raw, tools_call_body};
pub use mcp::{Mcp, ToolOutcome};

/// The Postgres server tests create their databases on.
pub fn database_server_url() -> String {
    std::env::var("WAZAP_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The NATS server tests use.
pub fn nats_url() -> String {
    std::env::var("WAZAP_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:` or `VmHWM:`).
pub fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("{field} missing from /proc/{pid}/status"))
}

/// `bytes` random bytes as hex (test names, prefixes).
pub fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).expect("random bytes");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Quiet logs unless `TEST_LOG` is set; the leak scan's capture whenever `WAZAP_LEAK_DIR` is.
pub fn init_logs() {
    wazap_shared::telemetry::init_for_tests("wazap-tests", std::env::var_os("TEST_LOG").is_some());
}

/// A worker and its dependencies for one test.
pub struct Stack {
    /// The test's database.
    pub db: TestDb,
    /// A pool on it, for direct checks and for minting tokens.
    pub pool: deadpool_postgres::Pool,
    /// The test's NATS prefix.
    pub prefix: String,
    /// Subjects under that prefix.
    pub subjects: Subjects,
    /// A NATS client for sim ops and fake responders.
    pub nats: async_nats::Client,
    /// The NATS server the worker and the gateways use ([`nats_url`] unless started with
    /// [`Stack::start_on_nats`]).
    pub nats_url: String,
    /// The worker's NATS user and password, on a server that authenticates
    /// ([`Stack::start_authenticated`]).
    worker_user: Option<(String, String)>,
    connector: ConnectorKind,
    whatsapp_network: wazap_worker::config::Network,
    worker: Option<(CancellationToken, JoinHandle<anyhow::Result<()>>)>,
}

impl Stack {
    /// A fresh database and prefix, and a worker on `connector`, ready to answer.
    pub async fn start(connector: ConnectorKind) -> anyhow::Result<Self> {
        init_logs();
        Self::on(TestDb::create().await?, connector).await
    }

    /// [`Stack::start`] with the database on the server at `server_url` (e.g. a
    /// [`fault::PgCluster`] the test stops and starts).
    pub async fn start_on_server(
        server_url: &str,
        connector: ConnectorKind,
    ) -> anyhow::Result<Self> {
        init_logs();
        Self::on(TestDb::create_on(server_url).await?, connector).await
    }

    /// [`Stack::start`] with the worker, the gateways and [`Stack::nats`] on the NATS server at
    /// `url` (e.g. a [`fault::NatsServer`] the test kills and starts again).
    pub async fn start_on_nats(url: &str, connector: ConnectorKind) -> anyhow::Result<Self> {
        init_logs();
        Self::with_nats(TestDb::create().await?, connector, Default::default(), url).await
    }

    /// A fresh database and prefix, and a worker on the real `whatsapp` connector connected to
    /// the test network at `network` (`ws://127.0.0.1:PORT`).
    pub async fn whatsapp(network: &str) -> anyhow::Result<Self> {
        init_logs();
        let network =
            wazap_worker::config::Network::parse(Some(network)).map_err(anyhow::Error::msg)?;
        Self::with(TestDb::create().await?, ConnectorKind::Whatsapp, network).await
    }

    /// A worker on `connector` over an existing test database (e.g. one the benchmark filled).
    pub async fn on(db: TestDb, connector: ConnectorKind) -> anyhow::Result<Self> {
        Self::with(db, connector, Default::default()).await
    }
    async fn with(
        db: TestDb,
        connector: ConnectorKind,
        whatsapp_network: wazap_worker::config::Network,
    ) -> anyhow::Result<Self> {
        Self::with_nats(db, connector, whatsapp_network, &nats_url()).await
    }

    async fn with_nats(
        db: TestDb,
        connector: ConnectorKind,
        whatsapp_network: wazap_worker::config::Network,
        nats_url: &str,
    ) -> anyhow::Result<Self> {
        let prefix = format!("t{}", random_hex(6));
        // Every server of a list (a cluster's), as the worker and gateways are given them.
        let servers = wazap_shared::config::NatsConfig::plain(nats_url).servers()?;
        let nats = async_nats::connect(servers).await?;
        Self::assemble(
            db,
            connector,
            whatsapp_network,
            nats_url,
            prefix,
            nats,
            None,
        )
        .await
    }

    pub(crate) async fn assemble(
        db: TestDb,
        connector: ConnectorKind,
        whatsapp_network: wazap_worker::config::Network,
        nats_url: &str,
        prefix: String,
        nats: async_nats::Client,
        worker_user: Option<(String, String)>,
    ) -> anyhow::Result<Self> {
        let pool = wazap_worker::db::pool(&db.url, 4)?;
        let subjects = Subjects::new(prefix.clone());
        let mut stack = Self {
            db,
            pool,
            prefix,
            subjects,
            nats,
            nats_url: nats_url.to_owned(),
            worker_user,
            connector,
            whatsapp_network,
            worker: None,
        };
        stack.start_worker().await?;
        Ok(stack)
    }

    /// The worker's configuration for this stack.
    pub fn worker_config(&self) -> wazap_worker::Config {
        let mut nats = wazap_shared::config::NatsConfig::plain(&self.nats_url)
            .with_inbox_prefix(self.subjects.worker_inbox());
        if let Some((user, password)) = &self.worker_user {
            nats = nats.with_user(user, password);
        }
        wazap_worker::Config {
            nats,
            nats_prefix: self.prefix.clone(),
            database_url: self.db.url.clone(),
            connector: self.connector,
            owner_password: None,
            data_dir: std::env::temp_dir().join(format!("wazap-test-{}", self.prefix)),
            whatsapp_network: self.whatsapp_network.clone(),
        }
    }

    /// The environment a worker process needs to run as this stack's worker (same database,
    /// prefix, data directory, connector and network), for tests that start one and kill it.
    pub fn worker_env(&self) -> Vec<(&'static str, String)> {
        use wazap_worker::config as c;
        let config = self.worker_config();
        let connector = match config.connector {
            ConnectorKind::Whatsapp => "whatsapp",
            ConnectorKind::Demo => "demo",
            ConnectorKind::Sim => "sim",
        };
        let mut env = vec![
            (wazap_shared::config::NATS_URL, config.nats.url),
            (wazap_shared::config::NATS_PREFIX, config.nats_prefix),
            (c::DATABASE_URL, config.database_url),
            (c::CONNECTOR, connector.to_owned()),
            (c::DATA_DIR, config.data_dir.display().to_string()),
        ];
        if let Some((user, password)) = &self.worker_user {
            env.push((wazap_shared::config::NATS_USER, user.clone()));
            env.push((wazap_shared::config::NATS_PASSWORD, password.clone()));
        }
        if let c::Network::Local { base } = config.whatsapp_network {
            env.push((c::WHATSAPP_NETWORK, base));
        }
        env
    }

    /// Run the next [`Stack::start_worker`]'s `whatsapp` connector against `network`.
    pub fn set_whatsapp_network(&mut self, network: wazap_worker::config::Network) {
        self.whatsapp_network = network;
    }

    /// Run the next [`Stack::start_worker`] with `connector` (same database and prefix).
    pub fn set_connector(&mut self, connector: ConnectorKind) {
        self.connector = connector;
    }

    /// Start the worker (again) and wait until it serves the default account (it holds its
    /// lease: a worker killed before may still hold it for a few seconds) and answers `ping`.
    pub async fn start_worker(&mut self) -> anyhow::Result<()> {
        let token = CancellationToken::new();
        let handle = tokio::spawn(wazap_worker::run(self.worker_config(), token.clone()));
        self.worker = Some((token, handle));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let me = std::process::id().to_string();
        loop {
            // Before the worker's migrations ran, there is no lease table yet.
            let holder: Option<String> = match self.pool.get().await {
                Ok(db) => db
                    .query_opt(
                        "select holder from worker_lease
                          where name = 'account:default' and expires_at > now()",
                        &[],
                    )
                    .await
                    .ok()
                    .flatten()
                    .and_then(|r| r.get(0)),
                Err(_) => None,
            };
            let mine = holder.is_some_and(|h| h.split(':').nth(1) == Some(me.as_str()));
            let ping = self
                .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                .await;
            if mine && ping.is_ok() {
                return Ok(());
            }
            if let Some((_, h)) = &self.worker
                && h.is_finished()
            {
                let (_, h) = self.worker.take().expect("worker");
                anyhow::bail!("worker exited during start: {:?}", h.await);
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "worker did not answer ping"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the in-process worker is still running (it has not exited on its own).
    pub fn worker_running(&self) -> bool {
        self.worker.as_ref().is_some_and(|(_, h)| !h.is_finished())
    }

    /// Stop the worker and wait for it to exit.
    pub async fn stop_worker(&mut self) -> anyhow::Result<()> {
        if let Some((token, handle)) = self.worker.take() {
            token.cancel();
            tokio::time::timeout(Duration::from_secs(15), handle).await???;
        }
        Ok(())
    }

    /// Each account's lease holder (`<host>:<pid>:<random>`), for the leases that still count.
    pub async fn account_holders(
        &self,
    ) -> anyhow::Result<std::collections::HashMap<String, String>> {
        let rows = self
            .pool
            .get()
            .await?
            .query(
                "select substr(name, 9), holder from worker_lease
                  where name like 'account:%' and expires_at > now()",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Until `accounts` accounts are held, none by process `dead` (when given), and `ping` is
    /// ready (each holder has recorded its account served), at most `within`.
    pub async fn served_without(
        &self,
        accounts: usize,
        dead: Option<&str>,
        within: Duration,
    ) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let held = self.account_holders().await?;
            let alive = held.len() == accounts
                && held
                    .values()
                    .all(|h| dead.is_none() || holder_pid(h) != dead);
            if alive
                && self
                    .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                    .await
                    .is_ok()
            {
                return Ok(());
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the accounts were not served in {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Call an RPC op directly (no grant), e.g. `ping`.
    pub async fn rpc<R: Rpc>(&self, req: &R::Request) -> Result<R::Response, RpcError> {
        bus::call::<R>(
            &self.nats,
            &self.subjects,
            None,
            req,
            Some(Duration::from_secs(2)),
        )
        .await
    }

    /// Send a sim op and decode its acknowledgement.
    pub async fn sim<T: Serialize>(&self, op: &str, payload: &T) -> Result<SimAck, RpcError> {
        self.sim_raw(op, payload).await
    }

    /// Send a sim op to account `account` (answered by the worker serving it).
    pub async fn sim_of<T: Serialize>(
        &self,
        account: &str,
        op: &str,
        payload: &T,
    ) -> Result<SimAck, RpcError> {
        self.sim_at(self.subjects.sim_of(account, op), payload)
            .await
    }

    /// Send a sim op and decode its reply as `R`.
    pub async fn sim_raw<T: Serialize, R: DeserializeOwned>(
        &self,
        op: &str,
        payload: &T,
    ) -> Result<R, RpcError> {
        self.sim_at(self.subjects.sim(op), payload).await
    }

    async fn sim_at<T: Serialize, R: DeserializeOwned>(
        &self,
        subject: String,
        payload: &T,
    ) -> Result<R, RpcError> {
        let body = serde_json::to_vec(payload).expect("encodable");
        let msg = tokio::time::timeout(
            Duration::from_secs(30),
            self.nats.request(subject, body.into()),
        )
        .await
        .map_err(|_| RpcError::new(ErrorCode::DeadlineExceeded, "sim op timed out"))?
        .map_err(|_| RpcError::new(ErrorCode::WorkerUnavailable, "sim op not answered"))?;
        bus::decode_reply(&msg.payload)
    }

    /// Create an AI connection with `scope` and return its bearer token.
    pub async fn token(&self, scope: ReadScope) -> anyhow::Result<String> {
        self.token_with(
            scope,
            wazap_shared::grant::ConnectionKind::Local,
            Duration::from_secs(3600),
        )
        .await
        .map(|(_, t)| t)
    }

    /// Create an AI connection and return `(connection_id, token)`.
    pub async fn token_with(
        &self,
        scope: ReadScope,
        kind: wazap_shared::grant::ConnectionKind,
        valid_for: Duration,
    ) -> anyhow::Result<(String, String)> {
        let expires_at = chrono::Utc::now() + chrono::Duration::from_std(valid_for)?;
        let new = wazap_worker::grants::NewConnection {
            name: "test".into(),
            kind,
            expires_at,
            read_scope: scope,
        };
        let (row, token) = wazap_worker::grants::create_connection(&self.pool, new).await?;
        leak::record_token(leak::kind::BEARER, &token);
        Ok((row.id, token))
    }

    /// A local AI connection reading everything, valid for an hour, with send permission
    /// `mode` over `chats` (none when `SendMode::None`): `(connection_id, token)`.
    pub async fn sending_connection(
        &self,
        mode: wazap_shared::wire::grants::SendMode,
        chats: Vec<String>,
    ) -> anyhow::Result<(String, String)> {
        let (id, token) = self
            .token_with(
                ReadScope::all(),
                wazap_shared::grant::ConnectionKind::Local,
                Duration::from_secs(3600),
            )
            .await?;
        if mode != wazap_shared::wire::grants::SendMode::None {
            let edit = wazap_worker::grants::PermissionEdit {
                id: id.clone(),
                revision: Some(0),
                mode,
                chats,
                expected_send_revision: Some(0),
            };
            wazap_worker::grants::set_send_permission(&self.pool, edit).await?;
        }
        Ok((id, token))
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some((token, _)) = &self.worker {
            token.cancel();
        }
    }
}
