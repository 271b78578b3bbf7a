//! The send deadline end to end (#25): the gateway's deadline travels to the worker, and a send
//! the gateway stops waiting for answers `send_outcome_unknown` — with what to do next — rather
//! than a bare `deadline_exceeded`. The same `request_id` then returns the recorded outcome,
//! transmitted once. A client that disconnects mid-send leaves a send that completes.

use std::time::Duration;

use serde_json::{Value, json};
use wazap_shared::wire::sim::ArmSendFault;
use wazap_tests::post_raw;

use super::Sending;

async fn post(s: &Sending, url: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
    let auth = format!("Bearer {}", s.token);
    let (status, _, body) =
        post_raw(url, &[("authorization", &auth)], serde_json::to_vec(body)?).await?;
    Ok((status, body))
}

#[tokio::test]
async fn a_send_that_outlives_the_gateway_deadline_is_outcome_unknown_then_recovered()
-> anyhow::Result<()> {
    let s = Sending::start().await?;
    let gw = s
        .stack
        .gateway_with(&[], |c| c.send_deadline = Duration::from_secs(2))
        .await?;
    let message = gw.url("/api/send/message");

    // WhatsApp acknowledges after 4 s: the hand-over began in time, the answer comes too late.
    s.arm(ArmSendFault {
        ack_delay_ms: Some(4_000),
        ..Default::default()
    })
    .await?;
    let send = json!({"chat_id": s.chat, "request_id": "slow-1", "text": "running late"});
    let (code, body) = post(&s, &message, &send).await?;
    assert_eq!(
        (code, body["error"]["code"].clone()),
        (504, json!("send_outcome_unknown")),
        "{body}"
    );
    let said = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("same request_id") && said.contains("get_send_status"),
        "{said}"
    );

    // The worker finishes the send; the same key answers its outcome, and nothing went twice.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let outcome = loop {
        let (code, body) = post(&s, &message, &send).await?;
        if code == 200 {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "no outcome: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        (outcome["state"].clone(), outcome["duplicate"].clone()),
        (json!("accepted"), json!(true))
    );
    assert_eq!(s.transmissions().await?.len(), 1, "transmitted once");
    Ok(())
}

/// The MCP client goes away in the middle of a send (#25): the send still completes and is
/// journaled, and the re-issued call — a new JSON-RPC id, the same `request_id` — returns the
/// recorded outcome without sending again.
#[tokio::test]
async fn a_send_whose_client_disconnects_completes_and_its_reissue_returns_the_outcome()
-> anyhow::Result<()> {
    let s = Sending::start().await?;
    let gw = s.stack.gateway(&[]).await?;
    s.arm(ArmSendFault {
        ack_delay_ms: Some(1_500),
        ..Default::default()
    })
    .await?;
    let args = json!({"chat_id": s.chat, "request_id": "gone-1", "text": "are you there"});
    // The client gives up 300 ms in, dropping its connection while WhatsApp has not answered.
    let cut = reqwest::Client::new()
        .post(gw.mcp_url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", s.token))
        .timeout(Duration::from_millis(300))
        .body(wazap_tests::tools_call_body("send_message", args.clone()))
        .send()
        .await;
    assert!(cut.is_err(), "the client was to give up before the answer");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state: Option<String> = s
            .stack
            .pool
            .get()
            .await?
            .query_opt(
                "select state from send_journal where request_id = 'gone-1'",
                &[],
            )
            .await?
            .map(|r| r.get(0));
        if state.as_deref() == Some("accepted") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the send did not complete: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mcp = wazap_tests::mcp::Mcp::connect(&gw.mcp_url(), &s.token).await?;
    let again = mcp.call("send_message", args).await?;
    let result = again.ok();
    assert_eq!(
        (result["state"].clone(), result["duplicate"].clone()),
        (json!("accepted"), json!(true))
    );
    assert_eq!(s.transmissions().await?.len(), 1, "sent once");
    Ok(())
}
