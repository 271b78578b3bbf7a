//! Inbound durability through the real client: WhatsApp hears that the worker has a message only
//! after the archive committed it. The test holds the archive's insert behind a table lock and
//! watches the server's view of what the worker's device has acknowledged.

use std::time::{Duration, Instant};

use serde_json::json;
use wanet::Network;
use wazap_shared::wire::grants::ReadScope;

use super::{Linked, OWNER};

const CAROL: &str = "15550000003";

#[tokio::test]
async fn the_server_gets_the_ack_only_after_the_archive_commit() -> anyhow::Result<()> {
    let net = Network::start().await?;
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
    let mcp = linked
        .gw
        .mcp(&linked.stack.token(ReadScope::all()).await?)
        .await?;
    let read = mcp
        .call("read_messages", json!({"chat_id": format!("+{CAROL}")}))
        .await?;
    assert_eq!(read.ok()["messages"][0]["text"], "hold me");
    phone.stop().await;
    carol.stop().await;
    Ok(())
}
