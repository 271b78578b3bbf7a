//! Sends against a server that misbehaves: a nack, a socket dropped after the stanza reached the
//! server (no ack), a socket dropped before, an ack withheld, an ack delayed. The journal's state is what the contract says, and a
//! retry with the same `request_id` never transmits a second message. A nack's code is journaled,
//! not echoed.

use std::time::Duration;

use serde_json::{Value, json};
use wanet::{Fault, Network, Phone};
use wazap_shared::wire::grants::SendMode;
use wazap_tests::Mcp;

use super::{Linked, OWNER, account_until, count, read_until};

const ERIN: &str = "15550000005";

/// A linked worker, Erin's phone, an MCP client that may send, and Erin's chat id.
async fn setup(net: &Network) -> anyhow::Result<(Linked, Phone, Phone, Mcp, String)> {
    let phone = net.phone(OWNER, "Owner").await?;
    let erin = net.phone(ERIN, "Erin").await?;
    let linked = Linked::start(net, &phone).await?;
    let (_, token) =
        crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
    let mcp = linked.gw.mcp(&token).await?;
    erin.send_text(OWNER, "hello").await?;
    let read = read_until(&mcp, json!({"chat_id": format!("+{ERIN}")}), |r| {
        count(r) == 1
    })
    .await?;
    let chat = read["chat_id"].as_str().unwrap_or_default().to_owned();
    Ok((linked, phone, erin, mcp, chat))
}

async fn send(mcp: &Mcp, chat: &str, key: &str, text: &str) -> anyhow::Result<Value> {
    Ok(mcp
        .call(
            "send_message",
            json!({"chat_id": chat, "request_id": key, "text": text}),
        )
        .await?
        .ok()
        .clone())
}

/// The WhatsApp id the journal reserved for `key`.
async fn journaled_id(linked: &Linked, key: &str) -> anyhow::Result<String> {
    let db = linked.stack.pool.get().await?;
    let row = db
        .query_one(
            "select wa_id from send_journal where request_id = $1",
            &[&key],
        )
        .await?;
    Ok(row.get(0))
}

#[tokio::test]
async fn a_nack_and_a_lost_ack_read_outcome_unknown_and_a_retry_never_sends_twice()
-> anyhow::Result<()> {
    let net = super::start_network().await?;
    let (linked, phone, erin, mcp, chat) = setup(&net).await?;
    let mcp = std::sync::Arc::new(mcp);
    let device = net.companions(OWNER)[0];

    // Refused by the server: nothing relayed, the outcome is not "accepted".
    net.arm(OWNER, device, Fault::Nack(479));
    let r = send(&mcp, &chat, "nack-1", "refused").await?;
    assert_eq!(r["state"], "outcome_unknown", "{r}");
    assert!(
        !r.to_string().contains("479"),
        "WhatsApp's code is not echoed: {r}"
    );
    let db = linked.stack.pool.get().await?;
    let code: Option<String> = db
        .query_one(
            "select wa_error from send_journal where request_id = 'nack-1'",
            &[],
        )
        .await?
        .get(0);
    assert_eq!(
        code.as_deref(),
        Some("479"),
        "the journal keeps WhatsApp's code"
    );

    // The stanza reached the server and was relayed, then the socket dropped before the ack.
    net.arm(OWNER, device, Fault::DropAfterRelay);
    let r = send(&mcp, &chat, "drop-1", "relayed, never acked").await?;
    assert_eq!(r["state"], "outcome_unknown", "{r}");
    let got = erin
        .wait_for(Duration::from_secs(10), |m| {
            m.text.as_deref() == Some("relayed, never acked")
        })
        .await?;
    assert_eq!(
        got.id,
        journaled_id(&linked, "drop-1").await?,
        "the journaled id is the id the phone gets"
    );
    account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    // The agent retries with the same key: the saved outcome, no second transmission.
    let again = send(&mcp, &chat, "drop-1", "relayed, never acked").await?;
    assert_eq!(again["state"], "outcome_unknown");
    assert_eq!(again["duplicate"], true);

    // The socket dropped before the server relayed anything: the worker cannot tell this from a
    // lost ack, so outcome_unknown; the phone gets nothing, and a retry does not transmit.
    net.arm(OWNER, device, Fault::DropBeforeRelay);
    let r = send(&mcp, &chat, "drop-0", "never relayed").await?;
    assert_eq!(r["state"], "outcome_unknown", "{r}");
    account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    let again = send(&mcp, &chat, "drop-0", "never relayed").await?;
    assert_eq!(again["state"], "outcome_unknown");
    assert_eq!(again["duplicate"], true);

    // The ack withheld on a live socket: relayed, and the send still waits (it never reads
    // `accepted` without the server's word) until the connection ends.
    net.arm(OWNER, device, Fault::NoAck);
    let pending = {
        let (mcp, chat) = (mcp.clone(), chat.clone());
        tokio::spawn(async move { send(&mcp, &chat, "noack-1", "relayed, ack withheld").await })
    };
    erin.wait_for(Duration::from_secs(10), |m| {
        m.text.as_deref() == Some("relayed, ack withheld")
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!pending.is_finished(), "no ack, no answer yet");
    assert!(net.drop_socket(OWNER, device));
    let r = pending.await??;
    assert_eq!(r["state"], "outcome_unknown", "{r}");
    account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;

    // An ack that comes late (2 s) still makes the send accepted.
    net.arm(OWNER, device, Fault::DelayAck(Duration::from_secs(2)));
    let slow = send(&mcp, &chat, "slow-1", "a slow ack").await?;
    assert_eq!(slow["state"], "accepted", "{slow}");

    // A later send goes through; by then Erin has every message exactly once.
    let ok = send(&mcp, &chat, "ok-1", "after the faults").await?;
    assert_eq!(ok["state"], "accepted", "{ok}");
    erin.wait_for(Duration::from_secs(10), |m| {
        m.text.as_deref() == Some("after the faults")
    })
    .await?;
    let texts: Vec<String> = erin.received().into_iter().filter_map(|m| m.text).collect();
    assert_eq!(
        texts
            .iter()
            .filter(|t| *t == "relayed, never acked")
            .count(),
        1,
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t == "refused"), "{texts:?}");
    assert!(!texts.iter().any(|t| t == "never relayed"), "{texts:?}");
    phone.stop().await;
    erin.stop().await;
    Ok(())
}
