//! A message the worker's device cannot decrypt: it is archived as a placeholder, the device asks
//! the sender to resend (a retry receipt through the server, held until the test has seen the
//! placeholder), the sender's phone resends it, and the real message takes the placeholder's
//! place under the same `message_id`.

use std::time::Duration;

use serde_json::json;
use wazap_shared::wire::grants::SendMode;

use super::{Linked, OWNER, count, read_until};

const KIM: &str = "15550000011";

#[tokio::test]
async fn an_undecryptable_message_is_resent_and_replaces_its_placeholder() -> anyhow::Result<()> {
    let net = super::start_network().await?;
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

    // Kim's next message reaches the device garbled. The server holds the device's request to
    // resend, so the gap is seen first: a placeholder with no words, archived at once.
    net.hold_retries();
    net.garble_next_to(OWNER, device);
    kim.send_text(OWNER, "second, resent").await?;
    let read = read_until(&mcp, args.clone(), |r| {
        count(r) == 3 && r["messages"][2]["type"] == "unknown"
    })
    .await?;
    let gap = read["messages"][2].clone();
    assert_eq!(gap["text"], "", "a gap has no words: {gap}");
    assert!(
        net.release_retries() >= 1,
        "the device asked Kim's phone to resend"
    );
    let read = read_until(&mcp, args, |r| {
        count(r) == 3 && r["messages"][2]["text"] == "second, resent"
    })
    .await?;
    let got = read["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        got.len(),
        3,
        "the placeholder was replaced, not kept beside: {got:?}"
    );
    assert_eq!(
        got[2]["message_id"], gap["message_id"],
        "the resent message takes the placeholder's message_id"
    );
    assert_eq!(got[2]["type"], "text");
    phone.stop().await;
    kim.stop().await;
    Ok(())
}
