//! The mixed load the operations tests run while they restart things (#25 item 7): sends over
//! the JSON API, reads and `wait_for_messages` cursor loops over `/mcp`, each call to a gateway
//! a caller picks, every failure checked to be one a client may retry (DESIGN §7) and retried
//! as a client would — a send with its `request_id`, a wait with its cursor.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;
use wazap_tests::{post_raw, tools_call_body};

use crate::send::Sending;

/// The codes a client retries (with the same `request_id` for a send).
const RETRYABLE: &[&str] = &[
    "busy",
    "worker_unavailable",
    "send_outcome_unknown",
    "deadline_exceeded",
];

/// One call's fate: a final JSON answer (its state), or a retryable failure (its code, or
/// `connection` when the gateway was gone).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fate {
    State(String),
    Retry(String),
}

/// `POST /api/send/message` of `key` on the gateway at `base`.
pub(crate) async fn send(s: &Sending, base: &str, key: &str) -> Fate {
    let auth = format!("Bearer {}", s.token);
    let body = json!({"chat_id": s.chat, "request_id": key, "text": "under load"});
    match post_raw(
        &format!("{base}/api/send/message"),
        &[("authorization", &auth)],
        serde_json::to_vec(&body).expect("json"),
    )
    .await
    {
        Ok((200, _, v)) => Fate::State(v["state"].as_str().unwrap_or_default().to_owned()),
        Ok((status, _, v)) => {
            let code = v["error"]["code"].as_str().unwrap_or_default().to_owned();
            assert!(
                RETRYABLE.contains(&code.as_str()) || status == 503,
                "{key}: HTTP {status} {v}"
            );
            Fate::Retry(code)
        }
        Err(_) => Fate::Retry("connection".into()),
    }
}

/// A `tools/call` of `tool` on the gateway at `base`: the structured result, or the retryable
/// failure it met (asserting it is one).
async fn tool(s: &Sending, base: &str, tool: &str, args: Value) -> Result<Value, String> {
    let auth = format!("Bearer {}", s.token);
    let body = tools_call_body(tool, args);
    let (status, _, v) = post_raw(&format!("{base}/mcp"), &[("authorization", &auth)], body)
        .await
        .map_err(|_| "connection".to_owned())?;
    if status == 503 || status == 429 {
        return Err(format!("HTTP {status}"));
    }
    assert_eq!(status, 200, "{tool}: HTTP {status} {v}");
    let result = &v["result"];
    if result["isError"].as_bool() == Some(true) {
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let error: Value = serde_json::from_str(text).unwrap_or_default();
        let code = error["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(RETRYABLE.contains(&code.as_str()), "{tool}: {v}");
        return Err(code);
    }
    Ok(result["structuredContent"].clone())
}

/// `read_messages` of the test chat: answered, or a retryable failure (asserted).
pub(crate) async fn read(s: &Sending, base: &str) -> bool {
    tool(s, base, "read_messages", json!({"chat_id": s.chat}))
        .await
        .is_ok()
}

/// What a cursor loop saw.
#[derive(Debug, Default)]
pub(crate) struct Waited {
    /// Every message id returned, in order.
    pub(crate) seen: Vec<String>,
    /// Waits answered `timed_out` well before their timeout: cut short by a gateway draining.
    pub(crate) cut: usize,
    /// Calls that failed (retryable) and were made again with the same cursor.
    pub(crate) retried: usize,
}

/// How long each wait may park.
const WAIT_SECONDS: u64 = 3;

/// A cursor for "now" (a 1 s wait with nothing arriving), through the gateway at `base`.
pub(crate) async fn cursor_now(s: &Sending, base: &str) -> anyhow::Result<String> {
    let r = tool(s, base, "wait_for_messages", json!({"timeout_seconds": 1}))
        .await
        .map_err(anyhow::Error::msg)?;
    Ok(r["cursor"].as_str().expect("cursor").to_owned())
}

/// A `wait_for_messages` loop from `cursor`, each call to the gateway `pick` names, until
/// `target` says how many messages there are and that many came (or 30 s pass).
pub(crate) async fn wait_loop(
    s: &Sending,
    pick: impl Fn(usize) -> String,
    mut cursor: String,
    mut target: watch::Receiver<Option<usize>>,
) -> Waited {
    let mut waited = Waited::default();
    let started = Instant::now();
    for n in 0.. {
        if target
            .borrow_and_update()
            .is_some_and(|t| waited.seen.len() >= t)
            || started.elapsed() > Duration::from_secs(30)
        {
            break;
        }
        let args = json!({"cursor": cursor, "timeout_seconds": WAIT_SECONDS});
        let call = Instant::now();
        match tool(s, &pick(n), "wait_for_messages", args).await {
            Ok(r) => {
                let early = call.elapsed() < Duration::from_secs(WAIT_SECONDS) / 2;
                if r["timed_out"].as_bool() == Some(true) && early {
                    waited.cut += 1;
                }
                assert_ne!(r["cursor_reset"].as_bool(), Some(true), "cursor reset");
                cursor = r["cursor"].as_str().expect("cursor").to_owned();
                for m in r["messages"].as_array().expect("messages") {
                    waited
                        .seen
                        .push(m["message_id"].as_str().expect("id").to_owned());
                }
            }
            Err(_) => {
                waited.retried += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    waited
}
