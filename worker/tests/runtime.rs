//! The worker runtime end to end over real NATS and Postgres (random subject prefix, fresh
//! database): `run` serves `ping` and `jwks`, routes and authorises ops, and returns after
//! shutdown — also while it is still waiting for Postgres, and within the drain limit
//! ([`drain`]).

mod common;
#[path = "runtime/drain.rs"]
mod drain;

use std::collections::HashMap;
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

/// Every test here starts its worker from this configuration, so it also installs the leak
/// scan's capture of what the in-process worker logs (`common::init_logs`).
fn config_on(database_url: &str, nats_url: &str, prefix: &str) -> Config {
    common::init_logs();
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

/// A raw request on `<prefix>.rpc.default.<op>`; the reply's error code, if it is an error.
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
        .request_with_headers(subjects.rpc(Some("default"), op), headers, body.into())
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
    let (conn, token) = common::create_connection(
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
        wazap_shared::leak::record_token("bearer token", &bad);
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
