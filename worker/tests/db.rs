//! The pool's time bounds and session settings, against the real Postgres: every session
//! commits synchronously whatever the URL asks, statements are bounded unless the URL bounds them
//! itself, and a Postgres that accepts connections but never answers fails calls instead of
//! hanging them.

mod common;

use std::time::Duration;

use common::base_url;

/// `url` with `options` (URL-encoded) appended as a query parameter.
fn with_options(url: &str, options: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options={}", options.replace(' ', "%20"))
}

async fn show(pool: &deadpool_postgres::Pool, setting: &str) -> String {
    let db = pool.get().await.expect("connection");
    db.query_one(&format!("show {setting}"), &[])
        .await
        .expect("show")
        .get(0)
}

#[tokio::test]
async fn sessions_commit_synchronously_and_statements_are_bounded() {
    common::init_logs();
    let pool = wazap_worker::db::pool(&base_url(), 1).expect("pool");
    assert_eq!(show(&pool, "synchronous_commit").await, "on");
    assert_eq!(show(&pool, "statement_timeout").await, "30s");
    assert_eq!(show(&pool, "max_parallel_workers_per_gather").await, "0");
    assert_eq!(show(&pool, "jit").await, "off");

    // A URL that turns synchronous commits off does not get its way; its own statement
    // bound is kept.
    let url = with_options(
        &base_url(),
        "-c synchronous_commit=off -c statement_timeout=250ms",
    );
    let pool = wazap_worker::db::pool(&url, 1).expect("pool");
    assert_eq!(show(&pool, "synchronous_commit").await, "on");
    assert_eq!(show(&pool, "statement_timeout").await, "250ms");
    let db = pool.get().await.expect("connection");
    let slow = db.query_one("select pg_sleep(5)", &[]).await;
    let e = slow.expect_err("a statement past its bound is cancelled");
    assert_eq!(
        e.code(),
        Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
        "{e}"
    );
    drop(db);
    wazap_worker::db::check_durability(&pool)
        .await
        .expect("the test server runs with fsync on");
}

#[tokio::test]
async fn a_postgres_that_never_answers_fails_the_call_instead_of_hanging_it() {
    common::init_logs();
    // Takes the TCP connection, never says a word.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            open.push(s);
        }
    });
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let pool = wazap_worker::db::pool(&url, 1).expect("pool");
    // The bound is the pool's (5 s to connect); the outer one only keeps a hang from stalling
    // the suite.
    let got = tokio::time::timeout(Duration::from_secs(30), pool.get())
        .await
        .expect("the pool gave up by itself");
    assert!(got.is_err(), "no connection from a silent server");
    held.abort();
}

/// A Postgres error is logged by its code and schema names, never by the values its message or
/// DETAIL quote (a unique violation's `Key (v)=(…) already exists`): those are the owner's data.
#[tokio::test]
async fn a_database_error_is_shown_without_the_values_it_quotes() {
    common::init_logs();
    let pool = wazap_worker::db::pool(&base_url(), 1).expect("pool");
    let db = pool.get().await.expect("connection");
    let value = format!("leak-probe-{}", common::random_hex(6));
    // The owner's data as far as the scan knows: no log line may quote it.
    wazap_shared::leak::record_secret("message text", &value);
    db.batch_execute("create temp table probe (v text constraint probe_v_key unique)")
        .await
        .expect("a temp table");
    db.execute("insert into probe values ($1)", &[&value])
        .await
        .expect("the first insert");
    let pg = db
        .execute("insert into probe values ($1)", &[&value])
        .await
        .expect_err("a unique violation");
    let chain = anyhow::Error::new(wazap_worker::error::Error::internal("probe: insert", pg))
        .context("a task");
    // The premise: Postgres quoted the value, and the plain chain would print it.
    assert!(format!("{chain:#}").contains(&value), "{chain:#}");
    let shown = wazap_worker::error::redacted(chain.as_ref()).to_string();
    assert_eq!(
        shown,
        "a task: internal error: probe: insert: database error SQLSTATE 23505 (ERROR) \
         table probe constraint probe_v_key"
    );
}
