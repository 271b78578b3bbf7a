//! Supervised tasks over real Postgres and NATS: the archive writer dying for a real cause (the
//! archive policy's column no longer the type the writer reads — `Row::get` panics on it, as it
//! would after a bad migration) makes `ping` answer `worker_unavailable` naming the writer, and
//! makes `run` drain and return that failure within the drain limit, so the process exits
//! non-zero. Restarting tasks are covered by `supervise`'s unit tests (nothing real makes the
//! janitor or the sweeper panic).

mod common;

use std::time::Duration;

use common::{Harness, base_url, init_logs, nats_url, phone, random_hex, text};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wazap_shared::ErrorCode;
use wazap_shared::bus::{self, decode_reply};
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_shared::subjects::{Subjects, op, sim_op};
use wazap_shared::wire::sim::InjectMessage;
use wazap_shared::wire::system::{Ping, PingRequest, PingResponse};
use wazap_worker::connector::inbound::to_inbound;
use wazap_worker::shutdown::DRAIN_LIMIT;
use wazap_worker::{Config, db};

/// Make the writer's policy read panic: `excluded_chats` becomes `jsonb`, which the writer
/// reads as `text[]`.
const BREAK_POLICY: &str = "alter table archive_policy
    alter column excluded_chats drop default,
    alter column excluded_chats type jsonb using to_jsonb(excluded_chats)";

fn inject(id: &str) -> InjectMessage {
    InjectMessage {
        message: text(
            &phone("972505550009"),
            id,
            common::at(1),
            "hello from the supervisor test",
        ),
    }
}

#[tokio::test]
async fn a_dead_archive_writer_makes_ping_answer_not_ready() {
    let h = Harness::start().await;
    let (reply, _) = wazap_worker::rpc::dispatch(&h.state, op::PING, None, b"{}").await;
    decode_reply::<PingResponse>(&reply).expect("ready before");

    h.exec(BREAK_POLICY).await;
    // The live path reads the policy first: the writer panics on its row.
    let _ = h.sim_try(sim_op::INJECT_MESSAGE, &inject("m1")).await;
    let reason = tokio::time::timeout(Duration::from_secs(10), h.supervisor.failed())
        .await
        .expect("the writer's failure is reported");
    assert!(
        reason.starts_with("the archive writer stopped: panicked:"),
        "{reason}"
    );

    let (reply, outcome) = wazap_worker::rpc::dispatch(&h.state, op::PING, None, b"{}").await;
    assert_eq!(outcome, "worker_unavailable");
    let e = decode_reply::<PingResponse>(&reply).expect_err("not ready");
    assert_eq!(e.code, ErrorCode::WorkerUnavailable);
    assert_eq!(
        e.message,
        "the worker is not ready: the archive writer stopped"
    );
    // Nothing is archived any more: callers are told at once.
    let message = to_inbound(inject("m2").message).expect("inbound");
    let err = h
        .archive
        .ingest_live(DEFAULT_ACCOUNT, message)
        .await
        .expect_err("the writer is gone");
    assert!(err.to_string().contains("archive writer"), "{err:#}");
    h.finish().await;
}

#[tokio::test]
async fn a_dead_archive_writer_stops_run_within_the_drain_limit_with_an_error() {
    init_logs();
    let db_name = format!("wazap_t_{}", random_hex(8));
    let url = db::create_database(&base_url(), &db_name)
        .await
        .expect("database");
    let prefix = format!("t{}", random_hex(6));
    let subjects = Subjects::new(prefix.clone());
    let nats_url = nats_url();
    let src: std::collections::HashMap<&str, &str> = [
        ("WAZAP_DATABASE_URL", url.as_str()),
        ("WAZAP_NATS_URL", nats_url.as_str()),
        ("WAZAP_NATS_PREFIX", prefix.as_str()),
        ("WAZAP_CONNECTOR", "sim"),
    ]
    .into_iter()
    .collect();
    let config = Config::from_source(&src).expect("config");
    // Never cancelled: only the failure may stop this worker.
    let worker = tokio::spawn(wazap_worker::run(config, CancellationToken::new()));
    let nats = bus::connect(
        &wazap_shared::config::NatsConfig::plain(&nats_url),
        "supervise-test",
    )
    .await
    .expect("nats");
    let ping = || bus::call::<Ping>(&nats, &subjects, None, &PingRequest {}, None);
    let mut up = false;
    for _ in 0..600 {
        if ping().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the worker answers ping");

    let pool = db::pool(&url, 1).expect("pool");
    pool.get()
        .await
        .expect("db")
        .batch_execute(BREAK_POLICY)
        .await
        .expect("alter");
    let body = serde_json::to_vec(&inject("m1")).expect("body");
    let failed_at = Instant::now();
    let _ = tokio::time::timeout(
        Duration::from_secs(5),
        nats.request(subjects.sim(sim_op::INJECT_MESSAGE), body.into()),
    )
    .await;

    // From the failure on, no ping is answered as ready: the worker says it is not, then no
    // worker answers at all.
    let refused = loop {
        match ping().await {
            Ok(_) => {
                assert!(failed_at.elapsed() < Duration::from_secs(5), "still ready");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(refused.code, ErrorCode::WorkerUnavailable, "{refused:?}");

    let ended = tokio::time::timeout(DRAIN_LIMIT + Duration::from_secs(2), worker)
        .await
        .expect("run returns within the drain limit")
        .expect("no panic escapes run");
    let err = ended.expect_err("run fails, so the process exits non-zero");
    assert!(
        format!("{err:#}").starts_with("the archive writer stopped: panicked:"),
        "{err:#}"
    );
    assert!(failed_at.elapsed() < DRAIN_LIMIT + Duration::from_secs(2));
    // After the drain no ping is answered.
    let gone = ping().await.expect_err("no worker");
    assert_eq!(gone.code, ErrorCode::WorkerUnavailable);

    drop(pool);
    let mut admin: tokio_postgres::Config = base_url().parse().expect("url");
    admin.dbname("postgres");
    if let Ok((client, conn)) = admin.connect(tokio_postgres::NoTls).await {
        let task = tokio::spawn(conn);
        let _ = client
            .batch_execute(&format!("drop database if exists {db_name} with (force)"))
            .await;
        drop(client);
        let _ = task.await;
    }
}
