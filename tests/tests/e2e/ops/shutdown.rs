//! Graceful shutdown: a gateway told to stop while a `wait_for_messages` and a `send_message`
//! are in flight answers the wait at once with `timed_out: true` (never an error), lets the send
//! finish with its real outcome, stops accepting, and ends cleanly.

use std::time::{Duration, Instant};

use serde_json::json;
use wazap_shared::wire::sim::ArmSendFault;

use crate::send::Sending;

/// Wait until the sim has transmitted `n` messages (the send is then in flight at the worker).
async fn transmitted(s: &Sending, n: usize) -> anyhow::Result<()> {
    let give_up = Instant::now() + Duration::from_secs(20);
    while s.transmissions().await?.len() < n {
        anyhow::ensure!(Instant::now() < give_up, "the send never reached the sim");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_gateway_ends_waits_and_finishes_sends() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let gw = s.stack.gateway(&[]).await?;
    let addr = gw.addr;
    let waiter = gw.mcp(&s.token).await?;
    let sender = gw.mcp(&s.token).await?;
    // The ack comes late, so the send is still in flight when shutdown begins.
    s.arm(ArmSendFault {
        ack_delay_ms: Some(1500),
        ..Default::default()
    })
    .await?;

    let wait = async {
        let started = Instant::now();
        let r = waiter
            .call("wait_for_messages", json!({"timeout_seconds": 55}))
            .await;
        (r, started.elapsed())
    };
    let send = async {
        // Let the wait reach the gateway first.
        tokio::time::sleep(Duration::from_millis(300)).await;
        sender
            .call(
                "send_message",
                json!({"chat_id": s.chat, "request_id": "drain-1", "text": "hello"}),
            )
            .await
    };
    let stop = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        transmitted(&s, 1).await?;
        gw.stop().await
    };
    let ((waited, wait_took), sent, stopped) = tokio::join!(wait, send, stop);

    let waited = waited?;
    let waited = waited.ok();
    assert_eq!(waited["timed_out"], json!(true), "{waited}");
    assert_eq!(waited["count"], json!(0));
    assert!(waited["cursor"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(
        wait_took < Duration::from_secs(40),
        "the wait ended because of the shutdown, not its 55 s timeout ({wait_took:?})"
    );
    let sent = sent?;
    let sent = sent.ok();
    assert_eq!(sent["state"], json!("accepted"), "{sent}");
    stopped?;

    // It no longer accepts connections, and the send was transmitted once.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert_eq!(s.transmissions().await?.len(), 1);
    assert!(
        s.status("drain-1").await?.duplicate,
        "the outcome was journaled"
    );
    Ok(())
}
