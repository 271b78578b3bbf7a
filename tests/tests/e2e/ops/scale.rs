//! Three gateways (as behind a proxy, on different ports) behave exactly as one: the same
//! answers to the same calls, waits woken on every gateway and a cursor carried between them
//! with nothing missed or repeated, and sends spread over them transmitted once each, their
//! repeats answered from the journal whichever gateway takes them.

use std::time::Duration;

use serde_json::{Value, json};
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Gateway, Mcp};

use crate::send::Sending;

/// Room for a few calls at once on each gateway.
const CONCURRENCY: &[(&str, &str)] = &[("WAZAP_MCP_MAX_CONCURRENCY", "8")];

fn message_ids(r: &Value) -> Vec<String> {
    r["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message_id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_gateways_behave_as_one() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let mut gateways: Vec<Gateway> = Vec::new();
    for _ in 0..3 {
        gateways.push(s.stack.gateway(CONCURRENCY).await?);
    }
    assert!(gateways[0].addr != gateways[1].addr && gateways[1].addr != gateways[2].addr);
    let mut clients: Vec<Mcp> = Vec::new();
    for gw in &gateways {
        clients.push(gw.mcp(&s.token).await?);
    }
    let dana = person("972503330001");
    s.stack
        .inject(text(&dana, "first", minutes_ago(2), "hello"))
        .await?;

    // The same call answers the same on every gateway.
    let mut answers = Vec::new();
    for c in &clients {
        answers.push(c.call("list_chats", json!({})).await?.ok().clone());
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert!(!answers[0]["chats"].as_array().expect("chats").is_empty());

    // A cursor from one gateway, then one wait parked on each: one message wakes all three.
    let now = clients[0]
        .call("wait_for_messages", json!({"timeout_seconds": 1}))
        .await?;
    let cursor = now.ok()["cursor"].as_str().expect("cursor").to_owned();
    let waits = clients.iter().map(|c| {
        c.call(
            "wait_for_messages",
            json!({"cursor": cursor, "timeout_seconds": 30}),
        )
    });
    let inject = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.stack
            .inject(text(&dana, "wake", minutes_ago(0), "wake up"))
            .await
    };
    let (woken, injected) = tokio::join!(futures::future::join_all(waits), inject);
    let injected = injected?;
    for w in woken {
        let w = w?;
        assert_eq!(message_ids(w.ok()), vec![injected.clone()]);
    }

    // A cursor carried round the three gateways sees every message once, in order.
    let mut cursor = {
        let w = clients[2]
            .call(
                "wait_for_messages",
                json!({"cursor": cursor, "timeout_seconds": 1}),
            )
            .await?;
        w.ok()["cursor"].as_str().expect("cursor").to_owned()
    };
    let mut sent = Vec::new();
    for i in 0..12 {
        sent.push(
            s.stack
                .inject(text(&dana, &format!("r{i}"), minutes_ago(0), "again"))
                .await?,
        );
    }
    let mut got: Vec<String> = Vec::new();
    for turn in 0..30 {
        if got.len() >= sent.len() {
            break;
        }
        let r = clients[turn % 3]
            .call(
                "wait_for_messages",
                json!({"cursor": cursor, "timeout_seconds": 2}),
            )
            .await?;
        got.extend(message_ids(r.ok()));
        cursor = r.ok()["cursor"].as_str().expect("cursor").to_owned();
    }
    assert_eq!(got, sent, "every message once, in archive order");

    // Sends spread over the gateways: each transmitted once; repeats on another gateway are
    // the saved outcome.
    let sends = (0..9).map(|i| {
        clients[i % 3].call(
            "send_message",
            json!({"chat_id": s.chat, "request_id": format!("spread-{i}"), "text": "hi"}),
        )
    });
    let first: Vec<Value> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.map(|o| o.ok().clone()))
        .collect::<Result<_, _>>()?;
    for (i, r) in first.iter().enumerate() {
        assert_eq!(r["state"], "accepted", "spread-{i}: {r}");
        assert_eq!(r["duplicate"], false);
        let again = clients[(i + 1) % 3]
            .call(
                "send_message",
                json!({"chat_id": s.chat, "request_id": format!("spread-{i}"), "text": "hi"}),
            )
            .await?;
        let again = again.ok();
        assert_eq!(again["duplicate"], true);
        assert_eq!(again["message_id"], r["message_id"]);
    }
    assert_eq!(s.transmissions().await?.len(), 9);

    for c in clients {
        c.close().await;
    }
    for gw in gateways {
        gw.stop().await?;
    }
    Ok(())
}
