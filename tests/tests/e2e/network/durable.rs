//! Inbound durability through the real client: WhatsApp hears that the worker has a message only
//! after the archive committed it. The test holds the archive's insert behind a table lock and
//! watches the server's view of what the worker's device has acknowledged.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Linked, OWNER};

const CAROL: &str = "15550000003";

#[tokio::test]
async fn the_server_gets_the_ack_only_after_the_archive_commit() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = *net.companions(OWNER).first().expect("the worker's device");

    // Hold every insert into the archive.
    let mut holder = linked.stack.pool.get().await?;
    let lock = holder.transaction().await?;
    lock.batch_execute("lock table messages in share mode")
        .await?;

    let id = carol.send_text(OWNER, "hold me").await?;
    // The owner's phone takes it at once; the worker's device cannot commit it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while net.unacknowledged(OWNER, 0).contains(&id) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the phone never took the message"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        net.unacknowledged(OWNER, device).contains(&id),
        "the worker acknowledged a message it had not archived"
    );

    lock.rollback().await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while net.unacknowledged(OWNER, device).contains(&id) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "no ack after the archive committed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mcp = linked.reader().await?;
    let read = mcp
        .call("read_messages", json!({"chat_id": format!("+{CAROL}")}))
        .await?;
    assert_eq!(read.ok()["messages"][0]["text"], "hold me");
    phone.stop().await;
    carol.stop().await;
    Ok(())
}

/// Make the test database refuse connections (and cut the ones open), or accept them again.
async fn database_available(db: &str, yes: bool) -> anyhow::Result<()> {
    let (admin, conn) =
        tokio_postgres::connect(&wazap_tests::database_server_url(), tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    admin
        .batch_execute(&format!("alter database {db} with allow_connections {yes}"))
        .await?;
    if !yes {
        admin
            .execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1",
                &[&db],
            )
            .await?;
    }
    Ok(())
}

#[tokio::test]
async fn messages_that_arrive_while_postgres_is_down_are_archived_once_when_it_returns()
-> anyhow::Result<()> {
    const N: usize = 500;
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = *net.companions(OWNER).first().expect("the worker's device");
    let db = linked.stack.db.name().to_owned();

    database_available(&db, false).await?;
    let mut ids = Vec::with_capacity(N);
    for i in 0..N {
        ids.push(carol.send_text(OWNER, &format!("n{i:03}")).await?);
    }
    // Every one reached the owner's phone; none is acknowledged by the worker's device.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids
        .iter()
        .any(|id| net.unacknowledged(OWNER, 0).contains(id))
        || phone.received().len() < N
    {
        anyhow::ensure!(Instant::now() < deadline, "the phone did not get them all");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pending = net.unacknowledged(OWNER, device);
    assert!(
        ids.iter().all(|id| pending.contains(id)),
        "the worker acknowledged messages it could not archive"
    );

    database_available(&db, true).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = net.unacknowledged(OWNER, device).len();
        if left == 0 {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{left} messages never acknowledged after Postgres returned"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let db = linked.stack.pool.get().await?;
    let row = db
        .query_one(
            "select count(*), count(distinct text) from messages where text like 'n___'",
            &[],
        )
        .await?;
    let (rows, distinct): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(
        (rows, distinct),
        (N as i64, N as i64),
        "each archived exactly once"
    );
    phone.stop().await;
    carol.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_history_page_that_arrives_while_postgres_is_down_is_archived_when_it_returns()
-> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let linked = Linked::start(&net, &phone).await?;
    let db = linked.stack.db.name().to_owned();

    database_available(&db, false).await?;
    phone
        .push_history(&[wanet::HistoryChat {
            with: CAROL.to_owned(),
            messages: vec![("HD1".into(), false, 1_796_000_000, "kept for later".into())],
        }])
        .await?;
    // The page reached the worker's device and waits there for the archive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    database_available(&db, true).await?;
    let mcp = linked.reader().await?;
    let read = super::read_until(&mcp, json!({"chat_id": format!("+{CAROL}")}), |r| {
        super::count(r) == 1
    })
    .await?;
    assert_eq!(read["messages"][0]["text"], "kept for later");
    phone.stop().await;
    Ok(())
}
