//! A message the worker's device cannot decrypt: it is archived as a placeholder, the device asks
//! the sender to resend (a retry receipt through the server), the sender's phone resends it, and
//! the real message takes the placeholder's place under the same `message_id`.

use std::time::Duration;

use serde_json::json;
use wanet::Network;
use wazap_shared::wire::grants::SendMode;

use super::{Linked, OWNER, count, read_until};

const KIM: &str = "15550000011";

#[tokio::test]
async fn an_undecryptable_message_is_resent_and_replaces_its_placeholder() -> anyhow::Result<()> {
    let net = Network::start().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let kim = net.phone(KIM, "Kim").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];
    let mcp = linked.reader().await?;
    kim.send_text(OWNER, "first").await?;
    let args = json!({"chat_id": format!("+{KIM}")});
    read_until(&mcp, args.clone(), |r| count(r) == 1).await?;

    // The worker answers, so Kim's session with its device is established (a plain `msg`).
    let (_, token) =
        crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
    let sender = linked.gw.mcp(&token).await?;
    let chat = sender
        .call("read_messages", json!({"chat_id": format!("+{KIM}")}))
        .await?
        .ok()["chat_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let r = sender
        .call(
            "send_message",
            json!({"chat_id": chat, "request_id": "r-1", "text": "hi kim"}),
        )
        .await?;
    assert_eq!(r.ok()["state"], "accepted");
    kim.wait_for(Duration::from_secs(10), |m| {
        m.text.as_deref() == Some("hi kim")
    })
    .await?;

    net.garble_next_to(OWNER, device);
    kim.send_text(OWNER, "second, resent").await?;
    let read = read_until(&mcp, args, |r| {
        count(r) == 3 && r["messages"][2]["text"] == "second, resent"
    })
    .await?;
    let got = read["messages"].as_array().cloned().unwrap_or_default();
    assert!(net.retries() >= 1, "the device asked for a resend");
    assert_eq!(
        got.len(),
        3,
        "the placeholder was replaced, not kept beside: {got:?}"
    );
    phone.stop().await;
    kim.stop().await;
    Ok(())
}
