//! The failed-login throttle against a real Postgres: per source (one stranger's failures do
//! not lock the owner out from elsewhere), the global cap over all sources, a concurrent burst
//! counted attempt by attempt, a refusal before any hash for an over-long password, and the
//! gateway's peer address believed only from a believed gateway.

use std::net::IpAddr;

use deadpool_postgres::Pool;
use wazap_shared::ErrorCode;
use wazap_shared::bus::decode_reply;
use wazap_shared::subjects::op;
use wazap_shared::wire::owner::{LoginRequest, OwnerAnswer, OwnerCall, SessionInfo};
use wazap_worker::owner::password::hashes_started;
use wazap_worker::owner::session::login;
use wazap_worker::owner::source::Source;
use wazap_worker::owner::throttle::{FREE_FAILURES, GLOBAL_FREE_FAILURES};

use crate::common::{Harness, one};

const PASSWORD: &str = "correct horse battery staple";
const WRONG: &str = "wrong password";

fn from(ip: &str) -> Source {
    Source::new(Some(ip.parse().unwrap()), true)
}

/// A login's outcome: `ok`, or the error code.
async fn attempt(pool: &Pool, pw: &str, source: &Source) -> String {
    match login(pool, None, pw, source).await {
        Ok(_) => "ok".into(),
        Err(e) => {
            if e.code() == ErrorCode::Internal {
                eprintln!("{e:?}");
            }
            e.code().as_str().to_owned()
        }
    }
}

/// A source's counted failures (0 when it has no row).
async fn failures_of(pool: &Pool, source: &Source) -> i64 {
    let sql = format!(
        "select coalesce(sum(failures), 0)::int8 from owner_login_sources where source = '{}'",
        source.key()
    );
    one(pool, &sql).await
}

async fn global_failures(pool: &Pool) -> i64 {
    one(pool, "select failures::int8 from owner_login_throttle").await
}

/// Stretch the lock the last failure set to a minute, so the next attempt lands inside it however
/// slowly a loaded machine runs the test (the worker chose to lock, not the test): how many
/// rows of `table` held a lock.
async fn stretch(pool: &Pool, table: &str) -> u64 {
    pool.get()
        .await
        .unwrap()
        .execute(
            &format!(
                "update {table} set locked_until = now() + interval '1 minute'
                  where locked_until > now() - interval '1 minute'"
            ),
            &[],
        )
        .await
        .unwrap()
}

async fn fresh() -> Pool {
    let (_, pool) = crate::common::fresh_db(8).await;
    wazap_worker::owner::set_password(&pool, PASSWORD)
        .await
        .unwrap();
    pool
}

#[tokio::test]
async fn a_locked_source_does_not_lock_out_the_owner_elsewhere() {
    let pool = fresh().await;
    let (stranger, owner) = (from("203.0.113.9"), from("198.51.100.7"));
    for i in 0..=FREE_FAILURES {
        assert_eq!(
            attempt(&pool, WRONG, &stranger).await,
            "unauthenticated",
            "attempt {i}"
        );
    }
    assert_eq!(stretch(&pool, "owner_login_sources").await, 1, "locked");
    assert_eq!(stretch(&pool, "owner_login_throttle").await, 0, "not all");
    // Locked: even the right password is refused before hashing, and nothing is counted.
    let hashes = hashes_started();
    assert_eq!(attempt(&pool, PASSWORD, &stranger).await, "rate_limited");
    assert_eq!(hashes_started(), hashes, "a locked source ran a hash");
    assert_eq!(failures_of(&pool, &stranger).await, 6);
    // The owner, from another address, logs in; the stranger stays locked.
    assert_eq!(attempt(&pool, PASSWORD, &owner).await, "ok");
    assert_eq!(attempt(&pool, PASSWORD, &stranger).await, "rate_limited");
    // Another address in the same IPv6 /64 is the same source.
    let v6 = from("2001:db8:1:2::1");
    for _ in 0..=FREE_FAILURES {
        attempt(&pool, WRONG, &v6).await;
    }
    stretch(&pool, "owner_login_sources").await;
    assert_eq!(
        attempt(&pool, PASSWORD, &from("2001:db8:1:2::beef")).await,
        "rate_limited"
    );
    assert_eq!(
        attempt(&pool, PASSWORD, &from("2001:db8:1:3::1")).await,
        "ok"
    );
    // Once the lock has passed, the right password works and clears that source only.
    pool.get()
        .await
        .unwrap()
        .execute(
            "update owner_login_sources set locked_until = now() - interval '1 second'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(attempt(&pool, PASSWORD, &stranger).await, "ok");
    assert_eq!(failures_of(&pool, &stranger).await, 0);
    assert_eq!(failures_of(&pool, &v6).await, 6);
    // Failures are counted globally too; a success takes back only its own attempt.
    assert_eq!(global_failures(&pool).await, 12);
}

#[tokio::test]
async fn the_global_cap_bounds_guessing_from_many_sources() {
    let pool = fresh().await;
    // Over-long passwords: counted like any failure, refused without a hash (fast).
    let long = "x".repeat(2000);
    let hashes = hashes_started();
    // As if 90 failures had just come from elsewhere (sending them all takes a while here).
    pool.get()
        .await
        .unwrap()
        .execute(
            "update owner_login_throttle set failures = $1 - 10, last_failure_at = now()",
            &[&GLOBAL_FREE_FAILURES],
        )
        .await
        .unwrap();
    let many = (0..10).map(|i| {
        let source = from(&format!("10.0.0.{}", i + 1));
        let (pool, long) = (pool.clone(), long.clone());
        async move { attempt(&pool, &long, &source).await }
    });
    for outcome in futures::future::join_all(many).await {
        assert_eq!(outcome, "unauthenticated");
    }
    assert_eq!(global_failures(&pool).await, 100);
    assert_eq!(hashes_started(), hashes, "an over-long password was hashed");
    assert_eq!(
        stretch(&pool, "owner_login_throttle").await,
        0,
        "free so far"
    );
    assert_eq!(
        attempt(&pool, &long, &from("10.1.0.1")).await,
        "unauthenticated"
    );
    assert_eq!(
        stretch(&pool, "owner_login_throttle").await,
        1,
        "all locked"
    );
    // Every source is refused now, a fresh one with the right password too, and none is counted.
    assert_eq!(
        attempt(&pool, PASSWORD, &from("198.51.100.7")).await,
        "rate_limited"
    );
    assert_eq!(global_failures(&pool).await, 101);
    assert_eq!(failures_of(&pool, &from("198.51.100.7")).await, 0);
    // The global lock is short and the count is forgotten an hour after the last failure.
    pool.get()
        .await
        .unwrap()
        .execute(
            "update owner_login_throttle set locked_until = now() - interval '1 second',
                    last_failure_at = now() - interval '61 minutes'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(attempt(&pool, PASSWORD, &from("198.51.100.7")).await, "ok");
    // Counted from 0 again, and the success took back its own attempt (not forgotten: 101).
    assert_eq!(
        global_failures(&pool).await,
        0,
        "the old count was not forgotten"
    );
}

/// 50 wrong passwords at once from one source are 50 attempts: each is counted (before its
/// hash) or refused by the lock an earlier one set, none slips past uncounted, and only a
/// handful reach a hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_wrong_passwords_from_one_source_count_as_fifty() {
    let (_, pool) = crate::common::fresh_db(16).await;
    wazap_worker::owner::set_password(&pool, PASSWORD)
        .await
        .unwrap();
    // Open the pool's connections first, so the burst is not spread out by connecting.
    let warm = futures::future::join_all((0..16).map(|_| pool.get())).await;
    drop(warm);
    let source = from("203.0.113.9");
    let started = std::time::Instant::now();
    let burst = (0..50).map(|_| {
        let (pool, source) = (pool.clone(), source.clone());
        tokio::spawn(async move { login(&pool, None, WRONG, &source).await })
    });
    let (mut checked, mut busy, mut refused) = (0, 0, 0);
    for answer in futures::future::join_all(burst).await {
        let e = answer.unwrap().expect_err("a wrong password logged in");
        match (e.code(), e.message()) {
            (ErrorCode::Unauthenticated, _) => checked += 1,
            (ErrorCode::RateLimited, m) if m.contains("at once") => busy += 1,
            (ErrorCode::RateLimited, _) => refused += 1,
            (code, m) => panic!("{code:?}: {m}"),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{checked} checked, {busy} counted but not checked, {refused} refused in {secs:.1} s");
    assert_eq!(checked + busy + refused, 50);
    let counted = checked + busy;
    assert_eq!(failures_of(&pool, &source).await, counted, "uncounted");
    assert_eq!(global_failures(&pool).await, counted, "uncounted globally");
    // The free allowance and the one that locked, plus one more each time a lock lapsed while
    // the burst ran (1 s, 2 s, 4 s …: n lapses take 2ⁿ − 1 s) — never the burst.
    let free = i64::from(FREE_FAILURES);
    let lapses = (secs + 1.0).log2().floor() as i64;
    assert!(
        counted > free && counted <= free + 1 + lapses,
        "{counted} of 50 counted in {secs:.1} s"
    );
}

/// Log in through the worker's RPC entry, as a gateway sends it, reporting `peer`.
async fn rpc_login(h: &Harness, trusted: bool, pw: &str, peer: &str) -> String {
    let state = h.state.clone().trusting_loopback(trusted);
    let call = OwnerCall {
        session: None,
        csrf: None,
        body: LoginRequest {
            password: pw.into(),
            peer: Some(peer.parse::<IpAddr>().unwrap()),
        },
    };
    let body = serde_json::to_vec(&call).unwrap();
    let (reply, _) = wazap_worker::rpc::dispatch(&state, op::OWNER_LOGIN, None, &body).await;
    match decode_reply::<OwnerAnswer<SessionInfo>>(&reply) {
        Ok(_) => "ok".into(),
        Err(e) => e.code.as_str().to_owned(),
    }
}

#[tokio::test]
async fn a_peer_from_an_unbelieved_gateway_counts_as_the_one_unknown_source() {
    let h = Harness::start().await;
    wazap_worker::owner::set_password(&h.pool, PASSWORD)
        .await
        .unwrap();
    // Believed: the reported peer is the source.
    assert_eq!(
        rpc_login(&h, true, WRONG, "203.0.113.9").await,
        "unauthenticated"
    );
    assert_eq!(failures_of(&h.pool, &from("203.0.113.9")).await, 1);
    // Not believed (anyone could publish on this NATS): every peer is the same source.
    for i in 0..=FREE_FAILURES {
        let peer = format!("198.51.100.{}", i + 1);
        assert_eq!(rpc_login(&h, false, WRONG, &peer).await, "unauthenticated");
    }
    assert_eq!(failures_of(&h.pool, &Source::unknown()).await, 6);
    stretch(&h.pool, "owner_login_sources").await;
    assert_eq!(
        rpc_login(&h, false, PASSWORD, "192.0.2.200").await,
        "rate_limited"
    );
    // A believed gateway's owner is not locked out by the unknown source.
    assert_eq!(rpc_login(&h, true, PASSWORD, "192.0.2.200").await, "ok");
    h.finish().await;
}
