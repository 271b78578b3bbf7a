//! The worker lease (#25): one holder at a time, a standby that takes over when the holder's
//! lease lapses or is released, and the fence that refuses every archive and journal write of a
//! holder that lost it — also one that was in flight when the takeover began. Real Postgres,
//! the lease and pools the worker itself uses.

mod common;

use std::time::Instant;

use common::{base_url, random_hex};
use tokio_util::sync::CancellationToken;
use wazap_worker::db;
use wazap_worker::lease::{self, Held, POLL_EVERY, TTL};

/// The lease these tests contend for.
const ALL_ACCOUNTS: &str = "account:default";
use wazap_worker::supervise::Supervisor;

async fn database() -> (String, String) {
    common::init_logs();
    let name = format!("wazap_t_{}", random_hex(8));
    let url = db::create_database(&base_url(), &name)
        .await
        .expect("create the test database");
    db::migrate(&db::pool(&url, 1).expect("pool"))
        .await
        .expect("migrate");
    (name, url)
}

async fn drop_database(name: &str) {
    let pool = db::pool(&base_url(), 1).expect("pool");
    let client = pool.get().await.expect("db");
    client
        .batch_execute(&format!("drop database if exists {name} with (force)"))
        .await
        .expect("drop");
}

/// The lease for `who`, as a standby takes it: tried every [`POLL_EVERY`] until it is free.
async fn take(pool: &deadpool_postgres::Pool, who: &str) -> Held {
    loop {
        if let Some(held) = (lease::try_acquire(pool, ALL_ACCOUNTS, who).await).expect("try") {
            return held;
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// A journal counter row written through `pool`: an archive/journal write the fence guards.
async fn write(pool: &deadpool_postgres::Pool, connection: &str) -> Result<(), String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    client
        .execute(
            "insert into send_journal_keys (connection_id, keys) values ($1, 0)",
            &[&connection],
        )
        .await
        .map(|_| ())
        .map_err(|e| {
            e.as_db_error().map_or_else(
                || e.to_string(),
                |d| format!("{}: {}", d.code().code(), d.message()),
            )
        })
}

#[tokio::test]
async fn a_standby_waits_while_the_holder_renews_and_takes_over_when_it_stops() {
    let (name, url) = database().await;
    let pool = db::pool(&url, 4).expect("pool");
    let a = take(&pool, "a").await;
    let keeping = CancellationToken::new();
    a.spawn_keeper(pool.clone(), &Supervisor::new(keeping.clone()));

    let standby = {
        let pool = pool.clone();
        tokio::spawn(async move { take(&pool, "b").await })
    };
    // Well past one TTL: the holder's renewals keep the standby out.
    tokio::time::sleep(TTL + 2 * POLL_EVERY).await;
    assert!(
        !standby.is_finished(),
        "the standby took a lease that is held"
    );
    assert!(a.is_held());

    // The holder dies (its renewals stop, nothing released): the standby takes over within a
    // TTL and a poll of the last renewal, with the next epoch.
    keeping.cancel();
    let stopped = Instant::now();
    let b = tokio::time::timeout(TTL + 3 * POLL_EVERY, standby)
        .await
        .expect("the standby took over in time")
        .expect("standby task");
    let took = stopped.elapsed();
    assert_eq!(b.epoch(), a.epoch() + 1);
    assert!(took <= TTL + 2 * POLL_EVERY, "takeover took {took:?}");
    // The old holder stopped counting on its lease before the row expired.
    assert!(
        !a.is_held(),
        "the old holder still believes it holds the lease"
    );
    drop_database(&name).await;
}

#[tokio::test]
async fn a_released_lease_is_taken_at_once() {
    let (name, url) = database().await;
    let pool = db::pool(&url, 4).expect("pool");
    let a = take(&pool, "a").await;
    a.spawn_keeper(pool.clone(), &Supervisor::new(CancellationToken::new()));
    let standby = {
        let pool = pool.clone();
        tokio::spawn(async move { take(&pool, "b").await })
    };
    tokio::time::sleep(POLL_EVERY).await;
    let released = Instant::now();
    a.release(&pool).await;
    assert!(!a.is_held());
    let b = tokio::time::timeout(TTL, standby)
        .await
        .expect("taken soon after the release")
        .expect("standby task");
    assert_eq!(b.epoch(), a.epoch() + 1);
    assert!(released.elapsed() < TTL, "waited for the expiry instead");
    drop_database(&name).await;
}

#[tokio::test]
async fn the_fence_refuses_the_old_holder_s_writes_including_one_in_flight() {
    let (name, url) = database().await;
    let plain = db::pool(&url, 4).expect("pool");
    let a = take(&plain, "a").await;
    let a_pool = db::fenced_pool(&url, 2, a.name(), a.epoch()).expect("pool");
    write(&a_pool, "c1").await.expect("the holder writes");

    // A write of the holder's is in flight (its transaction holds the fence) when the lease
    // lapses: the takeover waits for it, and it commits under the old epoch.
    let mut a_client = a_pool.get().await.expect("db");
    let in_flight = a_client.transaction().await.expect("begin");
    in_flight
        .execute(
            "insert into send_journal_keys (connection_id, keys) values ('c2', 0)",
            &[],
        )
        .await
        .expect("the holder's write in flight");
    let standby = {
        let plain = plain.clone();
        tokio::spawn(async move { take(&plain, "b").await })
    };
    // (Under the 10 s the server allows a session idle in a transaction.)
    tokio::time::sleep(TTL + 2 * POLL_EVERY).await;
    assert!(
        !standby.is_finished(),
        "the takeover did not wait for the write in flight"
    );
    in_flight
        .commit()
        .await
        .expect("commit under the old epoch");
    drop(a_client);
    let b = tokio::time::timeout(4 * POLL_EVERY, standby)
        .await
        .expect("taken once the write committed")
        .expect("standby task");
    assert_eq!(b.epoch(), a.epoch() + 1);

    // From now on every write of the old holder fails, whatever it believes; the new holder's
    // and those of sessions that are no worker (the command line, checks) pass.
    let refused = write(&a_pool, "c3")
        .await
        .expect_err("the old holder is fenced");
    assert!(refused.starts_with("WZF01"), "{refused}");
    let b_pool = db::fenced_pool(&url, 2, b.name(), b.epoch()).expect("pool");
    write(&b_pool, "c4").await.expect("the new holder writes");
    write(&plain, "c5")
        .await
        .expect("an unfenced session writes");
    let rows: Vec<String> = plain
        .get()
        .await
        .expect("db")
        .query(
            "select connection_id from send_journal_keys order by connection_id",
            &[],
        )
        .await
        .expect("rows")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, ["c1", "c2", "c4", "c5"]);
    drop_database(&name).await;
}

#[tokio::test]
async fn a_lapsed_lease_nobody_took_is_renewed_and_one_taken_is_lost() {
    let (name, url) = database().await;
    let pool = db::pool(&url, 4).expect("pool");
    let a = take(&pool, "a").await;
    // No renewal for longer than the TTL (a pause, Postgres away): lapsed, nothing sent.
    tokio::time::sleep(TTL).await;
    assert!(!a.is_held());
    let keeping = CancellationToken::new();
    a.spawn_keeper(pool.clone(), &Supervisor::new(keeping.clone()));
    tokio::time::sleep(2 * POLL_EVERY).await;
    assert!(
        a.is_held(),
        "nobody took it over: renewed under the same epoch"
    );
    assert!(!a.lost().is_cancelled());

    // Now it lapses again and a standby takes it: the old holder learns it lost.
    keeping.cancel();
    let b = take(&pool, "b").await;
    assert_eq!(b.epoch(), a.epoch() + 1);
    a.spawn_keeper(pool.clone(), &Supervisor::new(CancellationToken::new()));
    tokio::time::timeout(3 * POLL_EVERY, a.lost().cancelled())
        .await
        .expect("the old holder learns it lost the lease");
    assert!(!a.is_held());
    drop_database(&name).await;
}
