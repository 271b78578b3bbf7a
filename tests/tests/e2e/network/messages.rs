//! Messages both ways through the linked worker: a contact's DM lands in the archive and reads
//! through `/mcp`; `send_message` reaches the contact's phone (and the owner's phone, as its
//! own sent message), the journal says `accepted` on WhatsApp's server ack, and the contact's
//! delivery and read receipts reach the journal.

use std::time::Duration;

use serde_json::json;
use wazap_shared::wire::grants::SendMode;

use super::{Linked, OWNER, count, read_until};

const BOB: &str = "15550000002";

#[tokio::test]
async fn a_dm_reads_through_mcp_and_a_send_reaches_the_phone() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let bob = net.phone(BOB, "Bob").await?;
    let linked = Linked::start(&net, &phone).await?;
    let (_, token) =
        crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
    let mcp = linked.gw.mcp(&token).await?;

    bob.send_text(OWNER, "hi from bob").await?;
    let read = read_until(&mcp, json!({"chat_id": format!("+{BOB}")}), |r| {
        count(r) == 1
    })
    .await?;
    let msg = &read["messages"][0];
    assert_eq!(msg["text"], "hi from bob");
    assert_eq!(msg["from_me"], false);
    let chat_id = read["chat_id"].as_str().expect("chat_id").to_owned();

    let sent = mcp
        .call(
            "send_message",
            json!({"chat_id": chat_id, "request_id": "net-1", "text": "hello bob"}),
        )
        .await?;
    assert_eq!(sent.ok()["state"], "accepted", "{:?}", sent.ok());
    let got = bob
        .wait_for(Duration::from_secs(10), |m| {
            m.text.as_deref() == Some("hello bob")
        })
        .await?;
    assert_eq!(got.chat, format!("{OWNER}@s.whatsapp.net"));
    assert!(!got.from_me);
    let mine = phone
        .wait_for(Duration::from_secs(10), |m| {
            m.text.as_deref() == Some("hello bob")
        })
        .await?;
    assert!(
        mine.from_me,
        "the owner's phone shows it as sent by the account"
    );
    assert_eq!(mine.id, got.id, "one message, one id on every device");

    // Bob's phone says it got the message, then that he read it: the journal records both.
    let receipts = |id: String| {
        let pool = linked.stack.pool.clone();
        async move {
            let row = pool
                .get()
                .await?
                .query_one(
                    "select delivered_at is not null, read_at is not null \
                     from send_journal where wa_id = $1",
                    &[&id],
                )
                .await?;
            anyhow::Ok((row.get::<_, bool>(0), row.get::<_, bool>(1)))
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while receipts(got.id.clone()).await? != (true, false) {
        anyhow::ensure!(std::time::Instant::now() < deadline, "no delivery receipt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bob.mark_read(OWNER, &[&got.id]).await?;
    while receipts(got.id.clone()).await? != (true, true) {
        anyhow::ensure!(std::time::Instant::now() < deadline, "no read receipt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    phone.stop().await;
    bob.stop().await;
    Ok(())
}
