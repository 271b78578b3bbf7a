//! A NATS server restart under a mixed load (#25 item 7): the worker and three gateways on a
//! nats-server of the test's own, sends (each key retried with its `request_id` on a retryable
//! code), reads and two `wait_for_messages` cursor loops running, inbound messages arriving —
//! then the server is killed and started again on the same port and JetStream store. Every call
//! is answered or gets a retryable code; every key ends accepted, transmitted once, and every
//! answer given agrees with the journal; each loop sees every inbound message once, in order;
//! the gateways are ready again and the worker rode the restart out.
//!
//! The server is back within about a second: a worker without NATS for 3 s gives its lease up
//! and exits by design (ARCHITECTURE "One worker, fenced", `give_up_without_nats`), leaving a
//! restart to its supervisor — compose's `restart: unless-stopped` — which `standby.rs` covers.
//! A quick restart (an upgrade, `docker compose restart nats`) is what a user expects to be
//! ridden out with no restart of anything else, and that is what this test holds.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use wazap_tests::fault::NatsServer;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Gateway, Stack};
use wazap_worker::config::ConnectorKind;

use super::load::{Fate, cursor_now, read, send, wait_loop};
use crate::send::Sending;

const ROOM: &[(&str, &str)] = &[("WAZAP_MCP_MAX_CONCURRENCY", "16")];
/// How long the server stays down: well inside the worker's 3 s grace.
const DOWN_FOR: Duration = Duration::from_millis(500);

/// Every answer each key got, in order.
type Answers = Arc<Mutex<HashMap<String, Vec<Fate>>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nats_restart_under_load_loses_and_repeats_nothing() -> anyhow::Result<()> {
    let mut nats = NatsServer::start().await?;
    let s =
        Arc::new(Sending::on(Stack::start_on_nats(&nats.url(), ConnectorKind::Sim).await?).await?);
    let mut gateways: Vec<Gateway> = Vec::new();
    for _ in 0..3 {
        // A send cut off by the restart answers `send_outcome_unknown` after 5 s, not 60.
        let short = |c: &mut wazap_gateway::Config| c.send_deadline = Duration::from_secs(5);
        gateways.push(s.stack.gateway_with(ROOM, short).await?);
    }
    let bases: Arc<Vec<String>> = Arc::new(gateways.iter().map(|g| g.url("")).collect());
    let answers: Answers = Arc::default();
    let running = tokio_util::sync::CancellationToken::new();

    // Two senders (a key is retried until it gets a state), a reader, two cursor loops.
    // Each task answers (calls refused, its longest call).
    let mut load: Vec<tokio::task::JoinHandle<(usize, Duration)>> = (0..2)
        .map(|c| {
            let (s, bases, answers, running) =
                (s.clone(), bases.clone(), answers.clone(), running.clone());
            tokio::spawn(async move {
                let (mut n, mut longest) = (c, Duration::ZERO);
                while !running.is_cancelled() {
                    let key = format!("nats-{c}-{n}");
                    loop {
                        let call = Instant::now();
                        let fate = send(&s, &bases[n % 3], &key).await;
                        longest = longest.max(call.elapsed());
                        let done = matches!(fate, Fate::State(_));
                        answers
                            .lock()
                            .expect("answers")
                            .entry(key.clone())
                            .or_default()
                            .push(fate);
                        if done {
                            break;
                        }
                        n += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    n += 1;
                }
                (0, longest)
            })
        })
        .collect();
    load.push({
        let (s, bases, running) = (s.clone(), bases.clone(), running.clone());
        tokio::spawn(async move {
            let (mut n, mut refused, mut longest) = (0, 0, Duration::ZERO);
            while !running.is_cancelled() {
                let call = Instant::now();
                if !read(&s, &bases[n % 3]).await {
                    refused += 1;
                }
                longest = longest.max(call.elapsed());
                n += 1;
            }
            (refused, longest)
        })
    });
    let (target, watched) = watch::channel(None);
    let waiters: Vec<_> = (0..2)
        .map(|w| {
            let (s, bases, watched) = (s.clone(), bases.clone(), watched.clone());
            tokio::spawn(async move {
                let pick = |n: usize| bases[(n + w) % 3].clone();
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
                let id = format!("nats-in-{}", ids.len());
                let msg = text(&person("972503330001"), &id, minutes_ago(1), "inbound");
                // An inject cut off by the restart is made again until answered: the same
                // WhatsApp id makes a repeat a duplicate, archived once.
                loop {
                    let inject = s.stack.inject(msg.clone());
                    if let Ok(Ok(id)) = tokio::time::timeout(Duration::from_secs(2), inject).await {
                        ids.push(id);
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            ids
        })
    };

    // The restart, under load.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let down = Instant::now();
    nats.kill().await?;
    tokio::time::sleep(DOWN_FOR).await;
    nats.start_again().await?;
    for g in &gateways {
        g.wait_ready().await?;
    }
    println!(
        "NATS down for {DOWN_FOR:?}; every gateway ready {:?} after the kill",
        down.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    running.cancel();
    let mut refused = 0;
    for task in load {
        let (r, longest) = task.await?;
        refused += r;
        // Each loop runs without pause, so one of its calls met the outage.
        println!("a load task's longest call: {longest:?}");
        assert!(
            longest >= DOWN_FOR / 2,
            "no call was in flight across the restart"
        );
        // A call whose reply the restart lost is answered (retryable) soon after the gateway's
        // client reconnects, not held to its deadline (30 s for a read).
        assert!(
            longest < Duration::from_secs(10),
            "a call was held {longest:?} across the restart"
        );
    }
    let injected = injector.await?;
    target.send_replace(Some(injected.len()));
    for (w, waiter) in waiters.into_iter().enumerate() {
        let waited = waiter.await?;
        println!(
            "wait loop {w}: {} messages, {} calls retried",
            waited.seen.len(),
            waited.retried
        );
        assert_eq!(
            waited.seen, injected,
            "wait loop {w}: missed, repeated or reordered"
        );
    }
    assert!(
        s.stack.worker_running(),
        "the worker did not ride the restart out"
    );

    // Every key ended with a state; every state answered is the journal's; each went out once.
    let answers = answers.lock().expect("answers").clone();
    let retried = answers.values().filter(|a| a.len() > 1).count();
    println!(
        "{} keys ({retried} retried), {refused} reads refused",
        answers.len()
    );
    assert!(answers.len() > 20, "too little load: {}", answers.len());
    let journal: HashMap<String, (String, String)> = s
        .stack
        .pool
        .get()
        .await?
        .query("select request_id, state, wa_id from send_journal", &[])
        .await?
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    assert_eq!(
        journal.len(),
        answers.len(),
        "a key journaled but never answered, or the reverse"
    );
    for (key, fates) in &answers {
        let (state, _) = journal.get(key).expect("journaled");
        assert_eq!(state, "accepted", "{key}: {fates:?}");
        for fate in fates {
            if let Fate::State(answered) = fate {
                assert_eq!(answered, state, "{key}: {fates:?}");
            }
        }
    }
    let transmitted = s.transmissions().await?;
    let mut sent: Vec<&str> = transmitted.iter().map(|t| t.wa_id.as_str()).collect();
    sent.sort_unstable();
    let mut expected: Vec<&str> = journal.values().map(|(_, wa)| wa.as_str()).collect();
    expected.sort_unstable();
    assert_eq!(sent, expected, "each key transmitted exactly once");
    let unique: HashSet<_> = sent.iter().collect();
    assert_eq!(unique.len(), sent.len());
    Ok(())
}
