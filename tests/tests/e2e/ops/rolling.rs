//! A rolling restart of three gateways under a send and read load (#25 item 7), as a proxy sees
//! it: each gateway in turn is replaced — the new one joins, the old one leaves the rotation and
//! drains. Every call is answered, or cut off with a retryable failure; retrying those keys
//! answers every one; each key is transmitted once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use wazap_tests::{Gateway, post_raw, tools_call_body};

use crate::send::Sending;

const ROOM: &[(&str, &str)] = &[("WAZAP_MCP_MAX_CONCURRENCY", "8")];

/// The gateways in rotation (their base URLs).
type Rotation = Arc<Mutex<Vec<String>>>;

/// One call's fate: a final JSON answer (its state), or a retryable failure (its code, or
/// `connection` when the gateway was gone).
#[derive(Debug, Clone, PartialEq)]
enum Fate {
    State(String),
    Retry(String),
}

async fn send(s: &Sending, base: &str, key: &str) -> Fate {
    let auth = format!("Bearer {}", s.token);
    let body = json!({"chat_id": s.chat, "request_id": key, "text": "rolling"});
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
                matches!(
                    code.as_str(),
                    "busy" | "worker_unavailable" | "send_outcome_unknown" | "deadline_exceeded"
                ) || status == 503,
                "{key}: HTTP {status} {v}"
            );
            Fate::Retry(code)
        }
        Err(_) => Fate::Retry("connection".into()),
    }
}

fn pick(rotation: &Rotation, n: usize) -> String {
    let r = rotation.lock().expect("rotation");
    r[n % r.len()].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_three_gateways_loses_and_repeats_no_send() -> anyhow::Result<()> {
    let s = Arc::new(Sending::start().await?);
    let mut gateways: Vec<Gateway> = Vec::new();
    for _ in 0..3 {
        gateways.push(s.stack.gateway(ROOM).await?);
    }
    let rotation: Rotation = Arc::new(Mutex::new(gateways.iter().map(|g| g.url("")).collect()));
    let fates: Arc<Mutex<HashMap<String, Fate>>> = Arc::default();
    let running = tokio_util::sync::CancellationToken::new();

    let clients: Vec<_> = (0..3)
        .map(|c| {
            let (s, rotation, fates, running) =
                (s.clone(), rotation.clone(), fates.clone(), running.clone());
            tokio::spawn(async move {
                let mut n = c;
                while !running.is_cancelled() {
                    let base = pick(&rotation, n);
                    let key = format!("roll-{c}-{n}");
                    let fate = send(&s, &base, &key).await;
                    fates.lock().expect("fates").insert(key, fate);
                    // A read between sends, answered or refused by a gateway that left.
                    let auth = format!("Bearer {}", s.token);
                    let read = tools_call_body("read_messages", json!({"chat_id": s.chat}));
                    if let Ok((status, _, _)) =
                        post_raw(&format!("{base}/mcp"), &[("authorization", &auth)], read).await
                    {
                        assert!(status == 200 || status == 503, "read: HTTP {status}");
                    }
                    n += 3;
                }
            })
        })
        .collect();

    // Replace each gateway in turn: the new one joins; the old one is stopped (it drains) and
    // leaves the rotation 200 ms later, as a proxy's health check notices — calls sent to it
    // meanwhile are refused and retried.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for slot in &mut gateways {
        let fresh = s.stack.gateway(ROOM).await?;
        let old = std::mem::replace(slot, fresh);
        rotation.lock().expect("rotation").push(slot.url(""));
        let old_url = old.url("");
        let stopping = tokio::spawn(old.stop());
        tokio::time::sleep(Duration::from_millis(200)).await;
        rotation.lock().expect("rotation").retain(|u| *u != old_url);
        stopping.await??;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.cancel();
    for c in clients {
        c.await?;
    }

    let fates = fates.lock().expect("fates").clone();
    let cut: Vec<&String> = fates
        .iter()
        .filter(|(_, f)| matches!(f, Fate::Retry(_)))
        .map(|(k, _)| k)
        .collect();
    println!("{} sends, {} cut off and retried", fates.len(), cut.len());
    assert!(fates.len() > 20, "too little load: {}", fates.len());
    let base = gateways[0].url("");
    let mut accepted = HashSet::new();
    for (key, fate) in &fates {
        let state = match fate {
            Fate::State(state) => state.clone(),
            Fate::Retry(_) => match send(&s, &base, key).await {
                Fate::State(state) => state,
                other => anyhow::bail!("the retry of {key} failed again: {other:?}"),
            },
        };
        assert_eq!(state, "accepted", "{key}");
        accepted.insert(key.clone());
    }
    let transmitted = s.transmissions().await?;
    let ids: HashSet<_> = transmitted.iter().map(|t| t.wa_id.clone()).collect();
    assert_eq!(ids.len(), transmitted.len(), "a WhatsApp id went out twice");
    assert_eq!(
        transmitted.len(),
        accepted.len(),
        "every key accepted and sent exactly once"
    );
    Ok(())
}
