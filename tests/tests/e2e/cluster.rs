//! NATS as a three-node cluster (#27 items 4 and 6): a worker (sim connector) and two gateways
//! given the cluster's URL list (in different orders), the media bucket made with one copy as a
//! deployment from before the cluster had it, and the gateways set to three
//! (`WAZAP_NATS_REPLICAS`). Reads, a pending `wait_for_messages`, a text send and a media send
//! work; then the node the worker is connected to — made the media bucket's JetStream leader
//! too, the worst node to lose — is killed with a send in flight. The service continues: reads
//! answer, the pending wait (or its retry from the same cursor) receives a message injected
//! after the kill, the send in flight retried with its `request_id` is transmitted once, a new
//! media send is accepted once JetStream has elected another leader, the worker never stopped;
//! and the node, started again, catches up.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream::Stream};
use serde_json::{Value, json};
use wazap_shared::bus;
use wazap_tests::fault::NatsCluster;
use wazap_tests::fixtures::{jpeg_b64, minutes_ago, person, text};
use wazap_tests::{Gateway, Stack, post_raw, tools_call_body};
use wazap_worker::config::ConnectorKind;

use crate::send::Sending;

/// What a client retries (DESIGN §7): a send with its `request_id`, a wait with its cursor.
/// `deadline_exceeded` is a media send whose bytes were still waiting for JetStream (a new
/// leader) when the send deadline passed: nothing was sent.
const RETRYABLE: &[&str] = &[
    "busy",
    "worker_unavailable",
    "send_outcome_unknown",
    "deadline_exceeded",
];

/// How long a call may keep failing (retryably) after the kill: JetStream elects a new leader
/// for a stream whose leader died within its election timeout (4 to 9 s in nats-server).
const RECOVERS_WITHIN: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_cluster_node_leaves_the_service_running() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut cluster = NatsCluster::start().await?;
    let s = Sending::on(Stack::start_on_nats(&cluster.urls(), ConnectorKind::Sim).await?).await?;
    let js = jetstream::new(s.stack.nats.clone());
    let bucket = s.stack.subjects.media_bucket();
    bus::media_store(&js, &bucket)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let stream_name = format!("OBJ_{bucket}");
    assert_eq!(stream(&js, &stream_name).await?.config.num_replicas, 1);

    // A send's answer may wait out a retry after a reconnection; 8 s, not 60, bounds it.
    let short = |c: &mut wazap_gateway::Config| c.send_deadline = Duration::from_secs(8);
    let mut gateways = Vec::new();
    for first in [1, 2] {
        let urls = cluster.urls_from(first);
        let vars = [
            ("WAZAP_NATS_URL", urls.as_str()),
            ("WAZAP_NATS_REPLICAS", "3"),
            ("WAZAP_MCP_MAX_CONCURRENCY", "8"),
        ];
        gateways.push(s.stack.gateway_with(&vars, short).await?);
    }
    let (a, b) = (&gateways[0], &gateways[1]);
    let (base_a, base_b) = (a.url(""), b.url(""));

    // Before: an inbound message read through both gateways, a media send (which fits the
    // bucket to three copies), a text send, and a wait parked on a cursor.
    let before = inject(&s, "before").await?;
    for gw in &gateways {
        assert!(ids(&read(&s, gw).await?).contains(&before));
    }
    assert_eq!(media(&s, a, "media-before", 16).await?, "accepted");
    let info = stream(&js, &stream_name).await?;
    assert_eq!(
        info.config.num_replicas, 3,
        "the bucket was not given 3 copies"
    );
    assert_eq!(message(&s, b, "text-before").await?, json!("accepted"));
    let cursor = tool(&s, b, "wait_for_messages", json!({"timeout_seconds": 1})).await?["cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    let pending = {
        let (token, base) = (s.token.clone(), base_b.clone());
        let args = json!({"cursor": cursor, "timeout_seconds": 25});
        tokio::spawn(async move { call(&token, &base, "wait_for_messages", args).await })
    };

    // The node to kill: the worker's, with the bucket's leader moved onto it.
    let on = cluster.nodes_of("wazap-worker").await?;
    assert_eq!(on.len(), 1, "one worker connection: {on:?}");
    let victim = on[0];
    lead_on(&js, &stream_name, &cluster.name(victim)).await?;
    wait_current(&js, &stream_name, 3).await?;
    let sharing = cluster.nodes_of("wazap-gateway").await?;
    println!(
        "killing {} (the worker's, the bucket's leader); gateways on nodes {sharing:?}",
        cluster.name(victim)
    );

    // A send whose acknowledgement is still coming when the node dies.
    s.arm(wazap_shared::wire::sim::ArmSendFault {
        ack_delay_ms: Some(1_500),
        ..Default::default()
    })
    .await?;
    let transmitted = s.transmissions().await?.len();
    let across = {
        let (token, base, chat) = (s.token.clone(), base_a.clone(), s.chat.clone());
        tokio::spawn(async move { send_message(&token, &base, &chat, "text-across").await })
    };
    let by = Instant::now() + Duration::from_secs(10);
    while s.transmissions().await?.len() == transmitted {
        anyhow::ensure!(Instant::now() < by, "the send across the kill never left");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = Instant::now();
    cluster.kill(victim).await?;

    // After: a message injected now reaches the pending wait, or its retry from the cursor.
    let after = inject(&s, "after").await?;
    let mut waited = match pending.await? {
        Ok(r) => r,
        Err(code) => {
            println!("the pending wait ended {code}; waiting again from its cursor");
            let args = json!({"cursor": cursor, "timeout_seconds": 10});
            retried(|| call(&s.token, &base_a, "wait_for_messages", args.clone())).await?
        }
    };
    if ids(&waited).is_empty() {
        // It was answered (timed out or cut) before the message came: the next call gets it.
        let args = json!({"cursor": waited["cursor"], "timeout_seconds": 10});
        waited = retried(|| call(&s.token, &base_b, "wait_for_messages", args.clone())).await?;
    }
    assert_eq!(ids(&waited), std::slice::from_ref(&after), "{waited}");
    println!(
        "the wait had the new message {:?} after the kill",
        killed.elapsed()
    );

    // Reads answer through both gateways.
    for base in [&base_a, &base_b] {
        let read = retried(|| call(&s.token, base, "read_messages", chat(&s))).await?;
        assert!(ids(&read).contains(&after), "{read}");
    }
    println!("reads answered {:?} after the kill", killed.elapsed());

    // The send across the kill, retried with its request_id, went out once.
    let first = across.await?;
    println!("the send across the kill was answered {first:?}");
    let state = match first {
        Ok(state) => state,
        Err(_) => retried(|| send_message(&s.token, &base_b, &s.chat, "text-across")).await?,
    };
    assert_eq!(state, json!("accepted"));
    let replay = retried(|| send_message(&s.token, &base_b, &s.chat, "text-across")).await?;
    assert_eq!(replay, json!("accepted"));

    // A media send, new bytes for the bucket's new leader to store.
    assert_eq!(media(&s, b, "media-after", 24).await?, "accepted");
    println!(
        "a media send was accepted {:?} after the kill",
        killed.elapsed()
    );
    assert!(s.stack.worker_running(), "the worker stopped");

    // The node back: it catches up, and the service works through either gateway.
    cluster.start_again(victim).await?;
    wait_current(&js, &stream_name, 3).await?;
    assert_eq!(media(&s, a, "media-back", 32).await?, "accepted");
    assert_eq!(message(&s, b, "text-back").await?, json!("accepted"));

    // Every key transmitted exactly once.
    let journal = crate::faults::journal(&s.stack.pool).await?;
    let sent = crate::faults::transmitted_once(&s.stack, &journal).await?;
    assert_eq!(journal.len(), 6, "{journal:?}");
    assert_eq!(sent.len(), journal.len(), "a key never transmitted");
    println!("done in {:?}", started.elapsed());
    drop(gateways);
    Ok(())
}

/// Inject a text from the test contact (`kind` in its id and text), retrying a call the kill
/// cut off: the same WhatsApp id makes a repeat a duplicate, archived once.
async fn inject(s: &Sending, kind: &str) -> anyhow::Result<String> {
    let msg = text(
        &person("972503330001"),
        &format!("cluster-{kind}"),
        minutes_ago(1),
        &format!("cluster message {kind}"),
    );
    let by = Instant::now() + RECOVERS_WITHIN;
    loop {
        let injected = tokio::time::timeout(Duration::from_secs(3), s.stack.inject(msg.clone()));
        if let Ok(Ok(id)) = injected.await {
            return Ok(id);
        }
        anyhow::ensure!(Instant::now() < by, "inject never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn chat(s: &Sending) -> Value {
    json!({"chat_id": s.chat})
}

/// The `message_id`s of a read or wait result.
fn ids(result: &Value) -> Vec<String> {
    result["messages"]
        .as_array()
        .map(|all| {
            let id = |m: &Value| m["message_id"].as_str().map(str::to_owned);
            all.iter().filter_map(id).collect()
        })
        .unwrap_or_default()
}

/// `read_messages` of the test chat, which must answer at once.
async fn read(s: &Sending, gw: &Gateway) -> anyhow::Result<Value> {
    tool(s, gw, "read_messages", chat(s)).await
}

/// A tool call that must succeed at once.
async fn tool(s: &Sending, gw: &Gateway, name: &str, args: Value) -> anyhow::Result<Value> {
    call(&s.token, &gw.url(""), name, args)
        .await
        .map_err(|code| anyhow::anyhow!("{name} failed: {code}"))
}

/// A `tools/call` on the gateway at `base`: its structured result, or the retryable code it
/// failed with (any other failure panics).
async fn call(token: &str, base: &str, name: &str, args: Value) -> Result<Value, String> {
    let auth = format!("Bearer {token}");
    let (status, _, v) = post_raw(
        &format!("{base}/mcp"),
        &[("authorization", &auth)],
        tools_call_body(name, args),
    )
    .await
    .map_err(|e| format!("connection: {e}"))?;
    assert_eq!(status, 200, "{name}: HTTP {status} {v}");
    let result = &v["result"];
    if result["isError"].as_bool() == Some(true) {
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let error: Value = serde_json::from_str(text).unwrap_or_default();
        let code = error["error"]["code"].as_str().unwrap_or_default();
        assert!(RETRYABLE.contains(&code), "{name}: {v}");
        return Err(code.to_owned());
    }
    Ok(result["structuredContent"].clone())
}

/// `POST /api/send/message` of `key`: its state, or the retryable code it failed with.
async fn send_message(token: &str, base: &str, chat: &str, key: &str) -> Result<Value, String> {
    let body = json!({"chat_id": chat, "request_id": key, "text": "through the cluster"});
    api(token, &format!("{base}/api/send/message"), &body).await
}

/// A text send that must be answered at once.
async fn message(s: &Sending, gw: &Gateway, key: &str) -> anyhow::Result<Value> {
    send_message(&s.token, &gw.url(""), &s.chat, key)
        .await
        .map_err(|code| anyhow::anyhow!("{key}: {code}"))
}

/// `POST /api/send/media` of a `side`×`side` JPEG under `key`, retried (same key) on a
/// retryable code within [`RECOVERS_WITHIN`]; its state.
async fn media(s: &Sending, gw: &Gateway, key: &str, side: u16) -> anyhow::Result<String> {
    let body = json!({"chat_id": s.chat, "request_id": key, "kind": "image",
        "mime_type": "image/jpeg", "data_base64": jpeg_b64(side, side)});
    let url = gw.url("/api/send/media");
    let state = retried(|| api(&s.token, &url, &body)).await?;
    Ok(state.as_str().unwrap_or_default().to_owned())
}

async fn api(token: &str, url: &str, body: &Value) -> Result<Value, String> {
    let auth = format!("Bearer {token}");
    let (status, _, v) = post_raw(url, &[("authorization", &auth)], body.to_string().into())
        .await
        .map_err(|e| format!("connection: {e}"))?;
    if status == 200 {
        return Ok(v["state"].clone());
    }
    let code = v["error"]["code"].as_str().unwrap_or_default();
    assert!(RETRYABLE.contains(&code), "{url}: HTTP {status} {v}");
    Err(code.to_owned())
}

/// `attempt` until it succeeds, within [`RECOVERS_WITHIN`]; how many failed is printed.
async fn retried<F, Fut>(mut attempt: F) -> anyhow::Result<Value>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Value, String>>,
{
    let by = Instant::now() + RECOVERS_WITHIN;
    let mut failed = Vec::new();
    loop {
        match attempt().await {
            Ok(v) => {
                if !failed.is_empty() {
                    println!("retried after {failed:?}");
                }
                return Ok(v);
            }
            Err(code) => failed.push(code),
        }
        anyhow::ensure!(Instant::now() < by, "still failing: {failed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn stream(js: &jetstream::Context, name: &str) -> anyhow::Result<jetstream::stream::Info> {
    let mut stream: Stream = js.get_stream(name).await?;
    Ok(stream.info().await?.clone())
}

/// Move the stream's leader to the server `name` (a stepdown names it preferred; nats-server
/// before 2.11 ignores that, so the stepdown repeats until the election lands there).
async fn lead_on(js: &jetstream::Context, stream_name: &str, name: &str) -> anyhow::Result<()> {
    let by = Instant::now() + Duration::from_secs(20);
    loop {
        let leader = stream(js, stream_name)
            .await?
            .cluster
            .and_then(|c| c.leader);
        if leader.as_deref() == Some(name) {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < by, "{stream_name} never led by {name}");
        if leader.is_some() {
            let subject = format!("STREAM.LEADER.STEPDOWN.{stream_name}");
            let body = json!({"placement": {"preferred": name}});
            let _: Value = js.request(subject, &body).await?;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Wait until the stream has a leader and `copies - 1` current followers.
async fn wait_current(js: &jetstream::Context, name: &str, copies: usize) -> anyhow::Result<()> {
    let by = Instant::now() + Duration::from_secs(20);
    loop {
        let cluster = stream(js, name).await.ok().and_then(|i| i.cluster);
        let current = cluster.as_ref().is_some_and(|c| {
            c.leader.is_some()
                && c.replicas.len() == copies - 1
                && c.replicas.iter().all(|p| p.current && !p.offline)
        });
        if current {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < by, "{name} not current: {cluster:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A single server refuses a second copy: a bucket asked for with three (`WAZAP_NATS_REPLICAS`
/// left at 3 after leaving a cluster) is not made, and the error is JetStream's reason (what
/// the gateway logs); an existing bucket asked for more copies keeps working (whether the
/// server takes the new count or refuses it depends on its version).
#[tokio::test]
async fn a_single_server_refuses_copies_and_says_why() -> anyhow::Result<()> {
    let js = jetstream::new(async_nats::connect(wazap_tests::nats_url()).await?);
    let bucket = format!("t{}-media", wazap_tests::random_hex(6));
    let stream_name = format!("OBJ_{bucket}");
    match bus::media_store_with(&js, &bucket, 3).await {
        Ok(_) => anyhow::bail!("a bucket of three copies on one server"),
        Err(e) => assert!(e.to_string().contains("replicas"), "{e}"),
    }
    bus::media_store_with(&js, &bucket, 1)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    bus::fit_media_bucket(&js, &bucket, 3).await;
    let store = bus::media_store_with(&js, &bucket, 1)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    store.put("probe", &mut &b"bytes"[..]).await?;
    let mut back = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut store.get("probe").await?, &mut back).await?;
    assert_eq!(back, b"bytes");
    js.delete_stream(&stream_name).await?;
    Ok(())
}
