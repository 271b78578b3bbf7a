//! Test harness for the worker's integration tests: a fresh Postgres database and NATS subject
//! prefix per test, the archive and the sim connector started on them, and helpers that drive
//! the sim over NATS exactly as end-to-end tests do.

#![allow(dead_code, unreachable_pub)]

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use wazap_shared::RpcError;
use wazap_shared::bus::decode_reply;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendMode, SendPermission};
use wazap_shared::wire::sim::{SimAck, SimMessage};
use wazap_worker::archive::Archive;
use wazap_worker::config::ConnectorKind;
use wazap_worker::connector::{self, DynConnector};
use wazap_worker::send::receipts::JournalReceipts;
use wazap_worker::state::AppState;
use wazap_worker::supervise::Supervisor;
use wazap_worker::viewer::Viewer;

/// The Postgres server tests create their databases on.
pub fn base_url() -> String {
    std::env::var("WAZAP_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// The NATS server tests use.
pub fn nats_url() -> String {
    std::env::var("WAZAP_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// Logs on stderr when `RUST_LOG` is set; the leak scan's capture whenever `WAZAP_LEAK_DIR` is.
pub fn init_logs() {
    wazap_shared::telemetry::init_for_tests("worker-test", std::env::var_os("RUST_LOG").is_some());
}

/// `n` random bytes as hex.
pub fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("randomness");
    hex::encode(b)
}

/// The first column of the one row `sql` returns, as an `i64` (a count).
pub async fn one(pool: &deadpool_postgres::Pool, sql: &str) -> i64 {
    pool.get()
        .await
        .expect("a pooled connection")
        .query_one(sql, &[])
        .await
        .expect("one row")
        .get(0)
}

/// A fresh, migrated database with a pool of `connections` on it; its URL and the pool. Also
/// installs the leak scan's capture ([`init_logs`]).
pub async fn fresh_db(connections: usize) -> (String, deadpool_postgres::Pool) {
    init_logs();
    let url = wazap_worker::db::create_database(&base_url(), &format!("wazap_t_{}", random_hex(6)))
        .await
        .unwrap();
    let pool = wazap_worker::db::pool(&url, connections).unwrap();
    wazap_worker::db::migrate(&pool).await.unwrap();
    (url, pool)
}

/// One test's worker: archive, sim connector, state, and its own database and prefix.
pub struct Harness {
    pub state: AppState,
    pub archive: Archive,
    pub connector: DynConnector,
    pub pool: deadpool_postgres::Pool,
    pub nats: async_nats::Client,
    pub subjects: Subjects,
    pub shutdown: CancellationToken,
    /// The worker's supervised tasks (stopped by `shutdown`).
    pub supervisor: Supervisor,
    pub db_name: String,
    /// The worker configuration its accounts run with.
    pub config: wazap_worker::Config,
}

/// Start account `id`'s archive and connector (of `config.connector`) on the state's pool, and
/// serve it in `state` (no lease: a harness is the only worker).
async fn serve_account(
    state: &AppState,
    config: &wazap_worker::Config,
    supervisor: &Supervisor,
    id: &str,
) -> (Archive, DynConnector) {
    let archive = Archive::start(state.db.clone(), id, supervisor)
        .await
        .expect("archive");
    let connector = connector::start(
        config,
        config.connector,
        false,
        archive.clone(),
        state.db.clone(),
        state.nats.clone(),
        state.subjects.clone(),
        std::sync::Arc::new(JournalReceipts::new(state.db.clone())),
        supervisor,
    )
    .await
    .expect("connector");
    state.serve(state.db.clone(), archive.clone(), connector.clone(), None);
    // Served as a worker's fleet would record it (`ping` asks), by a lease that never ends.
    let db = state.db.get().await.expect("db");
    db.execute(
        "insert into worker_lease (name, holder, expires_at) values ($1, 'harness', 'infinity')
         on conflict (name) do update set holder = 'harness', expires_at = 'infinity'",
        &[&format!("account:{id}")],
    )
    .await
    .expect("the account's lease");
    db.execute(
        "insert into account_status (account_id, state, holder) values ($1, 'live', 'harness')
         on conflict (account_id) do update set holder = 'harness'",
        &[&id],
    )
    .await
    .expect("the account's status");
    (archive, connector)
}

impl Harness {
    /// A fresh database and prefix, with the sim connector serving.
    pub async fn start() -> Self {
        Self::start_with(ConnectorKind::Sim).await
    }

    /// A fresh database and prefix, with the connector of `kind`.
    pub async fn start_with(kind: ConnectorKind) -> Self {
        init_logs();
        let db_name = format!("wazap_t_{}", random_hex(8));
        let url = wazap_worker::db::create_database(&base_url(), &db_name)
            .await
            .expect("create the test database");
        let pool = wazap_worker::db::pool(&url, 8).expect("pool");
        wazap_worker::db::migrate(&pool).await.expect("migrate");
        let shutdown = CancellationToken::new();
        let supervisor = Supervisor::new(shutdown.clone());
        let nats = async_nats::connect(nats_url()).await.expect("nats");
        let subjects = Subjects::new(format!("t{}", random_hex(6)));
        let mut config =
            wazap_worker::Config::from_source(&std::collections::HashMap::<&str, &str>::new())
                .expect("the default configuration");
        config.connector = kind;
        config.data_dir = std::env::temp_dir().join(format!("wazap-{}", subjects.prefix()));
        let meta = wazap_worker::archive::meta(&pool).await.expect("archive");
        let state = AppState::new(
            pool.clone(),
            meta,
            nats.clone(),
            subjects.clone(),
            supervisor.clone(),
        );
        let (archive, connector) = serve_account(&state, &config, &supervisor, "default").await;
        Self {
            state,
            archive,
            connector,
            pool,
            nats,
            subjects,
            shutdown,
            supervisor,
            db_name,
            config,
        }
    }

    /// Serve account `id` too (registered first if it is not), with this harness's connector
    /// kind: its archive and connector.
    pub async fn serve(&self, id: &str) -> (Archive, DynConnector) {
        self.pool
            .get()
            .await
            .expect("db")
            .execute(
                "insert into accounts (account_id, display_name) values ($1, $1)
                 on conflict do nothing",
                &[&id],
            )
            .await
            .expect("register the account");
        serve_account(&self.state, &self.config, &self.supervisor, id).await
    }

    /// Call sim op `op` over NATS.
    pub async fn sim_try<T: Serialize>(&self, op: &str, body: &T) -> Result<SimAck, RpcError> {
        let payload = serde_json::to_vec(body).expect("encode");
        let msg = self
            .nats
            .request(self.subjects.sim(op), payload.into())
            .await
            .expect("the sim answers");
        decode_reply::<SimAck>(&msg.payload)
    }

    /// Call sim op `op`, expecting success.
    pub async fn sim<T: Serialize>(&self, op: &str, body: &T) -> SimAck {
        self.sim_try(op, body).await.expect("sim op succeeds")
    }

    /// Run `sql` on the test database.
    pub async fn exec(&self, sql: &str) {
        self.pool
            .get()
            .await
            .expect("db")
            .batch_execute(sql)
            .await
            .expect("sql");
    }

    /// Stop the worker and drop the database.
    pub async fn finish(self) {
        self.shutdown.cancel();
        drop(self.state);
        drop(self.archive);
        drop(self.connector);
        self.pool.close();
        let mut admin: tokio_postgres::Config = base_url().parse().expect("url");
        admin.dbname("postgres");
        if let Ok((client, conn)) = admin.connect(tokio_postgres::NoTls).await {
            let task = tokio::spawn(conn);
            let _ = client
                .batch_execute(&format!(
                    "drop database if exists {} with (force)",
                    self.db_name
                ))
                .await;
            drop(client);
            let _ = task.await;
        }
    }
}

/// A viewer that may read everything and send nowhere.
pub fn viewer_all() -> Viewer {
    viewer(ChatSelection::All)
}

/// A viewer with `chats`, no time bounds, no send permission, no exclusions.
pub fn viewer(chats: ChatSelection) -> Viewer {
    Viewer {
        connection_id: "conn_test".into(),
        scope: ReadScope {
            chats,
            since: None,
            until: None,
            ..ReadScope::all()
        },
        send: SendPermission {
            mode: SendMode::None,
            chats: vec![],
            revision: 0,
        },
        excluded_chats: vec![],
    }
}

/// A fixed point in time the tests count from (well in the past, so "now" is after it).
pub fn t0() -> DateTime<Utc> {
    "2026-01-01T12:00:00Z".parse().expect("time")
}

/// `t0` + `secs` seconds.
pub fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

/// A phone JID.
pub fn phone(digits: &str) -> String {
    format!("{digits}@s.whatsapp.net")
}

/// A plain text message in `chat` from the other side.
pub fn text(chat: &str, id: &str, ts: DateTime<Utc>, body: &str) -> SimMessage {
    wazap_shared::leak::record_secret("message text", body);
    SimMessage {
        chat: chat.into(),
        id: id.into(),
        sender: None,
        push_name: None,
        from_me: false,
        timestamp: ts,
        kind: MessageType::Text,
        text: body.into(),
        reply_to: None,
        mentions: vec![],
        attachment: None,
        edit: false,
    }
}

/// A group message from `sender`.
pub fn group_text(
    group: &str,
    sender: &str,
    id: &str,
    ts: DateTime<Utc>,
    body: &str,
) -> SimMessage {
    SimMessage {
        sender: Some(sender.into()),
        ..text(group, id, ts, body)
    }
}

/// `grants::create_connection`, with the bearer token it makes recorded for the leak scan.
pub async fn create_connection(
    pool: &deadpool_postgres::Pool,
    new: wazap_worker::grants::NewConnection,
) -> Result<(wazap_worker::grants::ConnectionRow, String), wazap_worker::error::Error> {
    let (conn, token) = wazap_worker::grants::create_connection(pool, new).await?;
    wazap_shared::leak::record_token("bearer token", &token);
    Ok((conn, token))
}

/// A connection that may read everything and send by `mode` to `chats`, as a gateway that
/// verified its token presents it.
pub async fn sender(
    h: &Harness,
    mode: SendMode,
    chats: Vec<String>,
) -> wazap_shared::grant::VerifiedGrant {
    use wazap_shared::grant::{ConnectionKind, VerifiedGrant};
    use wazap_worker::grants::PermissionEdit;
    wazap_worker::grants::ensure_signing_key(&h.pool)
        .await
        .expect("signing key");
    let (conn, token) = create_connection(
        &h.pool,
        wazap_worker::grants::NewConnection {
            name: "assistant".into(),
            kind: ConnectionKind::Remote,
            expires_at: chrono::Utc::now() + chrono::Duration::days(1),
            read_scope: ReadScope::all(),
        },
    )
    .await
    .expect("connection");
    wazap_worker::grants::set_send_permission(
        &h.pool,
        PermissionEdit {
            id: conn.id.clone(),
            revision: None,
            mode,
            chats,
            expected_send_revision: None,
        },
    )
    .await
    .expect("send permission");
    VerifiedGrant {
        connection_id: conn.id,
        revision: conn.revision,
        loopback: false,
        token,
    }
}

/// `send_message` through the worker's RPC entry, as a gateway sends it.
pub async fn send_text(
    h: &Harness,
    grant: &wazap_shared::grant::VerifiedGrant,
    req: &wazap_shared::wire::send::SendMessageRequest,
) -> Result<wazap_shared::wire::send::SendResult, RpcError> {
    wazap_shared::leak::record_secret("message text", &req.text);
    let body = serde_json::to_vec(req).expect("body");
    let (reply, _) = wazap_worker::rpc::dispatch(
        &h.state,
        wazap_shared::subjects::op::SEND_MESSAGE,
        Some(grant),
        &body,
    )
    .await;
    decode_reply(&reply)
}

/// The journal state of `request_id` (any connection's), for tests that check what was recorded.
pub async fn journal_state(h: &Harness, request_id: &str) -> String {
    h.pool
        .get()
        .await
        .expect("db")
        .query_one(
            "select state from send_journal where request_id = $1",
            &[&request_id],
        )
        .await
        .expect("a journal row")
        .get(0)
}

/// The sim's transmission log (every row queued is written first).
pub async fn transmissions(h: &Harness) -> Vec<wazap_shared::wire::sim::SimTransmission> {
    use wazap_shared::subjects::sim_op;
    let msg = h
        .nats
        .request(h.subjects.sim(sim_op::TRANSMISSIONS), "{}".into())
        .await
        .expect("the sim answers");
    decode_reply::<wazap_shared::wire::sim::Transmissions>(&msg.payload)
        .expect("transmissions")
        .transmissions
}
