//! Grants against a real Postgres (a fresh database per test): the signing key, tokens verified
//! against the JWKS, per-request authorisation, connection management, and the CLI binary.

use std::process::Command;

use chrono::{Duration, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use wazap_shared::ErrorCode;
use wazap_shared::grant::{AUDIENCE, ConnectionKind, GrantClaims, VerifiedGrant};
use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendMode};
use wazap_worker::db;
use wazap_worker::grants::{self, NewConnection};

mod common;

fn new_conn(kind: ConnectionKind, scope: ReadScope) -> NewConnection {
    NewConnection {
        name: "assistant".into(),
        kind,
        expires_at: Utc::now() + Duration::days(30),
        read_scope: scope,
    }
}

fn grant(id: &str, revision: u32, loopback: bool) -> Option<VerifiedGrant> {
    Some(VerifiedGrant {
        connection_id: id.into(),
        revision,
        loopback,
        // `authorize` takes the grant a verified token yields; the token is not read again.
        token: String::new(),
    })
}

#[tokio::test]
async fn signing_key_is_created_once_and_reused_across_restarts() {
    let (url, pool) = common::fresh_db(4).await;
    let kid = grants::ensure_signing_key(&pool).await.unwrap();
    assert_eq!(grants::ensure_signing_key(&pool).await.unwrap(), kid);
    // A "restart": a new pool, migrations again, the same key.
    let pool2 = db::pool(&url, 2).unwrap();
    db::migrate(&pool2).await.unwrap();
    assert_eq!(grants::ensure_signing_key(&pool2).await.unwrap(), kid);
    let client = pool.get().await.unwrap();
    let n: i64 = client
        .query_one("select count(*) from signing_keys", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let jwks = grants::jwks(&pool2).await.unwrap();
    assert_eq!(jwks.keys.len(), 1);
    assert_eq!(jwks.keys[0].kid, kid);
    assert_eq!(jwks.keys[0].kty, "OKP");
    assert_eq!(jwks.keys[0].crv, "Ed25519");
}

#[tokio::test]
async fn concurrent_first_starts_create_one_key() {
    let (_url, pool) = common::fresh_db(4).await;
    let (a, b) = tokio::join!(
        grants::ensure_signing_key(&pool),
        grants::ensure_signing_key(&pool)
    );
    assert_eq!(a.unwrap(), b.unwrap());
}

#[tokio::test]
async fn created_token_verifies_against_the_jwks() {
    let (_url, pool) = common::fresh_db(4).await;
    grants::ensure_signing_key(&pool).await.unwrap();
    let before = Utc::now().timestamp();
    let (conn, token) =
        common::create_connection(&pool, new_conn(ConnectionKind::Remote, ReadScope::all()))
            .await
            .unwrap();
    assert!(conn.id.starts_with("conn_") && conn.id.len() == 5 + 16);
    assert!(conn.id[5..].bytes().all(|b| b.is_ascii_hexdigit()));

    let jwks = grants::jwks(&pool).await.unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, Algorithm::EdDSA);
    assert_eq!(header.kid.as_deref(), Some(jwks.keys[0].kid.as_str()));
    // The published JWK, read by jsonwebtoken's own JWK type.
    let jwk: jsonwebtoken::jwk::Jwk =
        serde_json::from_value(serde_json::to_value(&jwks.keys[0]).unwrap()).unwrap();
    let key = DecodingKey::from_jwk(&jwk).unwrap();
    let mut v = Validation::new(Algorithm::EdDSA);
    v.set_audience(&[AUDIENCE]);
    let claims = jsonwebtoken::decode::<GrantClaims>(&token, &key, &v)
        .unwrap()
        .claims;
    assert_eq!(claims.sub, conn.id);
    assert_eq!(claims.rev, 0);
    assert_eq!(claims.aud, AUDIENCE);
    assert_eq!(claims.kind, ConnectionKind::Remote);
    assert_eq!(claims.exp, conn.expires_at.timestamp());
    assert!(claims.iat >= before && claims.iat <= Utc::now().timestamp());

    // Another audience, or a tampered token, does not verify.
    let mut other = Validation::new(Algorithm::EdDSA);
    other.set_audience(&["someone-else"]);
    assert!(jsonwebtoken::decode::<GrantClaims>(&token, &key, &other).is_err());
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    parts[1] = parts[1].chars().rev().collect();
    assert!(jsonwebtoken::decode::<GrantClaims>(&parts.join("."), &key, &v).is_err());
}

#[tokio::test]
async fn authorize_accepts_a_current_grant_and_loads_scope_and_policy() {
    let (_url, pool) = common::fresh_db(4).await;
    grants::ensure_signing_key(&pool).await.unwrap();
    let scope = ReadScope {
        chats: ChatSelection::AllExcept {
            chats: vec!["c_1".into(), "c_1".into(), "c_2".into()],
        },
        since: Some("2026-01-01T00:00:00Z".parse().unwrap()),
        until: None,
        ..ReadScope::all()
    };
    let (conn, _) = common::create_connection(&pool, new_conn(ConnectionKind::Remote, scope))
        .await
        .unwrap();
    pool.get()
        .await
        .unwrap()
        .execute(
            "update archive_policy set excluded_chats = '{c_x,c_y}'",
            &[],
        )
        .await
        .unwrap();
    let viewer = grants::authorize(&pool, grant(&conn.id, 0, false).as_ref())
        .await
        .unwrap()
        .viewer;
    assert_eq!(viewer.connection_id, conn.id);
    assert_eq!(
        viewer.scope.chats,
        ChatSelection::AllExcept {
            chats: vec!["c_1".into(), "c_2".into()]
        }
    );
    assert_eq!(
        viewer.scope.since,
        Some("2026-01-01T00:00:00Z".parse().unwrap())
    );
    assert_eq!(
        viewer.excluded_chats,
        vec!["c_x".to_owned(), "c_y".to_owned()]
    );
    assert_eq!(viewer.send.mode, SendMode::None);
    assert!(viewer.send.chats.is_empty());
    assert_eq!(viewer.send.revision, 0);
    assert!(!viewer.can_read_chat("c_1"));
    assert!(!viewer.can_read_chat("c_x"));
    assert!(viewer.can_read_chat("c_3"));
}

#[tokio::test]
async fn authorize_rejects_every_bad_grant_alike() {
    let (_url, pool) = common::fresh_db(4).await;
    grants::ensure_signing_key(&pool).await.unwrap();
    let (remote, _) =
        common::create_connection(&pool, new_conn(ConnectionKind::Remote, ReadScope::all()))
            .await
            .unwrap();
    let (local, _) =
        common::create_connection(&pool, new_conn(ConnectionKind::Local, ReadScope::all()))
            .await
            .unwrap();
    let (expiring, _) =
        common::create_connection(&pool, new_conn(ConnectionKind::Remote, ReadScope::all()))
            .await
            .unwrap();
    let (revoked, _) =
        common::create_connection(&pool, new_conn(ConnectionKind::Remote, ReadScope::all()))
            .await
            .unwrap();
    let client = pool.get().await.unwrap();
    client
        .execute(
            "update connections set expires_at = now() - interval '1 second' where connection_id = $1",
            &[&expiring.id],
        )
        .await
        .unwrap();
    grants::revoke_connection(&pool, &revoked.id).await.unwrap();
    // Revoking twice is fine; an unknown id is not_found.
    grants::revoke_connection(&pool, &revoked.id).await.unwrap();
    assert_eq!(
        grants::revoke_connection(&pool, "conn_0000000000000000")
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );

    // Accepted: remote from anywhere, local from loopback.
    assert!(
        grants::authorize(&pool, grant(&remote.id, 0, false).as_ref())
            .await
            .is_ok()
    );
    assert!(
        grants::authorize(&pool, grant(&local.id, 0, true).as_ref())
            .await
            .is_ok()
    );

    let bad = [
        None,
        grant("conn_0000000000000000", 0, true),
        grant(&revoked.id, 0, true),
        grant(&expiring.id, 0, true),
        grant(&remote.id, 1, true),
        grant(&local.id, 0, false),
    ];
    let mut messages = Vec::new();
    for g in &bad {
        let e = grants::authorize(&pool, g.as_ref()).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Unauthenticated, "{g:?}");
        messages.push(e.message().to_owned());
    }
    messages.dedup();
    assert_eq!(messages.len(), 1, "one message for every rejection");
    assert!(!messages[0].contains("conn_"));

    // A newer credential revision makes revision-0 tokens stale, and revision 1 current.
    client
        .execute(
            "update connections set revision = 1 where connection_id = $1",
            &[&remote.id],
        )
        .await
        .unwrap();
    assert!(
        grants::authorize(&pool, grant(&remote.id, 0, false).as_ref())
            .await
            .is_err()
    );
    assert!(
        grants::authorize(&pool, grant(&remote.id, 1, false).as_ref())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn connections_are_validated_and_listed_without_tokens() {
    let (_url, pool) = common::fresh_db(4).await;
    grants::ensure_signing_key(&pool).await.unwrap();
    let invalid = |n: NewConnection| {
        let pool = pool.clone();
        async move {
            let e = common::create_connection(&pool, n).await.unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument);
            e.message().to_owned()
        }
    };
    let mut n = new_conn(ConnectionKind::Remote, ReadScope::all());
    n.name = "  ".into();
    assert!(invalid(n).await.starts_with("name:"));
    let mut n = new_conn(ConnectionKind::Remote, ReadScope::all());
    n.expires_at = Utc::now() - Duration::minutes(1);
    assert!(invalid(n).await.starts_with("expires_at:"));
    for chats in [
        vec!["+972501234567".to_owned()],
        vec!["972501234567@s.whatsapp.net".to_owned()],
        vec![],
    ] {
        let n = new_conn(
            ConnectionKind::Remote,
            ReadScope {
                chats: ChatSelection::Selected { chats },
                since: None,
                until: None,
                ..ReadScope::all()
            },
        );
        let msg = invalid(n).await;
        assert!(msg.starts_with("read_scope.chats:"));
        assert!(!msg.contains("972501234567"), "never echoes the value");
    }
    let n = new_conn(
        ConnectionKind::Remote,
        ReadScope {
            chats: ChatSelection::All,
            since: Some("2026-02-01T00:00:00Z".parse().unwrap()),
            until: Some("2026-01-01T00:00:00Z".parse().unwrap()),
            ..ReadScope::all()
        },
    );
    assert!(invalid(n).await.starts_with("read_scope.until:"));

    let (a, _) =
        common::create_connection(&pool, new_conn(ConnectionKind::Local, ReadScope::all()))
            .await
            .unwrap();
    let mut n = new_conn(
        ConnectionKind::Remote,
        ReadScope {
            chats: ChatSelection::Selected {
                chats: vec!["c_abc".into()],
            },
            since: None,
            until: None,
            ..ReadScope::all()
        },
    );
    n.name = " second ".into();
    let (b, _) = common::create_connection(&pool, n).await.unwrap();
    grants::revoke_connection(&pool, &b.id).await.unwrap();
    let list = grants::list_connections(&pool).await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, a.id);
    assert_eq!(list[0].kind, ConnectionKind::Local);
    assert!(list[0].revoked_at.is_none());
    assert_eq!(list[1].id, b.id);
    assert_eq!(list[1].name, "second");
    assert!(list[1].revoked_at.is_some());
    assert_eq!(
        list[1].read_scope.chats,
        ChatSelection::Selected {
            chats: vec!["c_abc".into()]
        }
    );
}

// --- the binary -------------------------------------------------------------------------------

fn worker_bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wazap-worker"));
    c.env_remove("WAZAP_DATABASE_URL")
        .env_remove("WAZAP_CONNECTOR")
        .env("RUST_LOG", "warn");
    c
}

#[test]
fn cli_help_bad_arguments_and_bad_configuration() {
    let out = worker_bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("connection create"));

    let out = worker_bin()
        .args([
            "connection",
            "create",
            "--name",
            "x",
            "--kind",
            "cloud",
            "--expires-in",
            "1d",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--kind"));

    let out = worker_bin().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(64));

    let out = worker_bin()
        .arg("migrate")
        .env("WAZAP_CONNECTOR", "fax")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap().trim_end(),
        "wazap-worker: configuration: WAZAP_CONNECTOR: expected whatsapp, demo or sim"
    );
}

#[tokio::test]
async fn cli_creates_lists_and_revokes_connections() {
    let (url, pool) = common::fresh_db(4).await;
    let out = worker_bin()
        .args([
            "connection",
            "create",
            "--name",
            "laptop",
            "--kind",
            "local",
            "--expires-in",
            "12h",
            "--chats",
            "c_a1,c_b2",
            "--since",
            "2026-01-01",
            "--until",
            "2026-01-31",
        ])
        .env("WAZAP_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.trim_end();
    wazap_shared::leak::record_token("bearer token", token);
    assert_eq!(stdout.lines().count(), 1, "only the token on stdout");
    assert_eq!(token.split('.').count(), 3);
    let stderr = String::from_utf8(out.stderr).unwrap();

    let list = grants::list_connections(&pool).await.unwrap();
    assert_eq!(list.len(), 1);
    let c = &list[0];
    assert!(stderr.contains(&c.id), "the id goes to stderr");
    assert_eq!(c.name, "laptop");
    assert_eq!(c.kind, ConnectionKind::Local);
    let left = c.expires_at - Utc::now();
    assert!(left > Duration::hours(11) && left <= Duration::hours(12));
    assert_eq!(
        c.read_scope.since,
        Some("2026-01-01T00:00:00Z".parse().unwrap())
    );
    assert_eq!(
        c.read_scope.until,
        Some("2026-02-01T00:00:00Z".parse().unwrap())
    );
    assert!(
        grants::authorize(&pool, grant(&c.id, 0, true).as_ref())
            .await
            .is_ok()
    );

    let out = worker_bin()
        .args(["connection", "list"])
        .env("WAZAP_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8(out.stdout).unwrap();
    assert!(listed.contains(&c.id) && listed.contains("laptop"));
    assert!(!listed.contains(token));

    let out = worker_bin()
        .args(["connection", "revoke", "--id", &c.id])
        .env("WAZAP_DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        grants::authorize(&pool, grant(&c.id, 0, true).as_ref())
            .await
            .is_err()
    );
}
