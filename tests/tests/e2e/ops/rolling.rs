//! A rolling restart of three gateways under a mixed load (#25 item 7), as a proxy sees it:
//! each gateway in turn is replaced — the new one joins, the old one leaves the rotation and
//! drains — while sends, reads and `wait_for_messages` cursor loops run and inbound messages
//! arrive. Every call is answered, or cut off with a retryable failure; retrying those keys
//! answers every one and each key is transmitted once; a wait cut short by its gateway leaving
//! is resumed with its cursor elsewhere, and each loop sees every inbound message once, in order.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use wazap_tests::Gateway;
use wazap_tests::fixtures::{minutes_ago, person, text};

use super::load::{Fate, cursor_now, read, send, wait_loop};
use crate::send::Sending;

const ROOM: &[(&str, &str)] = &[("WAZAP_MCP_MAX_CONCURRENCY", "8")];

/// The gateways in rotation (their base URLs), oldest first: the first is the next to leave.
type Rotation = Arc<Mutex<Vec<String>>>;

fn pick(rotation: &Rotation, n: usize) -> String {
    let r = rotation.lock().expect("rotation");
    r[n % r.len()].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_three_gateways_loses_and_repeats_nothing() -> anyhow::Result<()> {
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
                    read(&s, &base).await;
                    n += 3;
                }
            })
        })
        .collect();

    // Two cursor loops: one always on the gateway that leaves next (so a gateway's drain cuts
    // its parked waits), one going round; inbound messages every 150 ms throughout.
    let (target, watched) = watch::channel(None);
    let waiters: Vec<_> = [true, false]
        .into_iter()
        .map(|oldest| {
            let (s, rotation, watched) = (s.clone(), rotation.clone(), watched.clone());
            tokio::spawn(async move {
                let pick = |n| pick(&rotation, if oldest { 0 } else { n });
                let cursor = cursor_now(&s, &pick(0)).await.expect("a first cursor");
                wait_loop(&s, pick, cursor, watched).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let injector = {
        let (s, running) = (s.clone(), running.clone());
        tokio::spawn(async move {
            let mut ids = Vec::new();
            while !running.is_cancelled() {
                let body = format!("inbound {}", ids.len());
                let id = format!("roll-in-{}", ids.len());
                let msg = text(&person("972503330001"), &id, minutes_ago(1), &body);
                ids.push(s.stack.inject(msg).await.expect("inject"));
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            ids
        })
    };

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
    let injected = injector.await?;
    target.send_replace(Some(injected.len()));
    for (w, waiter) in waiters.into_iter().enumerate() {
        let waited = waiter.await?;
        println!(
            "wait loop {w}: {} messages, {} waits cut short, {} calls retried",
            waited.seen.len(),
            waited.cut,
            waited.retried
        );
        assert_eq!(
            waited.seen, injected,
            "wait loop {w}: missed, repeated or reordered"
        );
        if w == 0 {
            assert!(
                waited.cut + waited.retried >= 3,
                "the gateways' drains never met a wait: {waited:?}"
            );
        }
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
