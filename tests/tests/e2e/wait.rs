//! `wait_for_messages`: the cursor never misses or repeats a message (across gateways, worker
//! restarts and concurrent history batches), `addressed_to_me`, timeouts, cursor resets,
//! argument checks, scope and `#private`, and a disconnect freeing the concurrency permit.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::{ChatSelection, ReadScope};
use wazap_shared::wire::sim::{HistorySync, InjectMessage, SetAccount, SimMessage};
use wazap_tests::fixtures::{group, group_text, minutes_ago, person, text};
use wazap_tests::{Mcp, Stack, post_raw, tools_call_body};
use wazap_worker::config::ConnectorKind;

/// A small xorshift generator (the pace of injections; no need for a crate).
struct Rng(u64);
impl Rng {
    fn new() -> Self {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("random seed");
        Self(u64::from_le_bytes(b) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One `wait_for_messages` call that must succeed.
async fn wait(mcp: &Mcp, args: Value) -> anyhow::Result<Value> {
    Ok(mcp.call("wait_for_messages", args).await?.ok().clone())
}

/// A cursor for "now" (a 1 s wait with nothing arriving).
async fn cursor_now(mcp: &Mcp) -> anyhow::Result<String> {
    let r = wait(mcp, json!({"timeout_seconds": 1})).await?;
    Ok(r["cursor"].as_str().expect("cursor").to_owned())
}

fn ids(result: &Value) -> Vec<String> {
    result["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message_id"].as_str().expect("id").to_owned())
        .collect()
}

/// Every message from others in the archive, in archive order.
async fn archive_order(stack: &Stack) -> anyhow::Result<Vec<String>> {
    let db = stack.pool.get().await?;
    let rows = db
        .query(
            "select message_id from messages where not from_me order by position",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Collect with `cursor` until `want` messages arrived (or `limit` passes), alternating over
/// `clients`; asserts each call's own guarantees on the way.
async fn collect(
    clients: &[&Mcp],
    mut cursor: String,
    want: usize,
    limit: Duration,
) -> anyhow::Result<(Vec<String>, String)> {
    let started = Instant::now();
    let mut got: Vec<String> = Vec::new();
    let mut turn = 0;
    while got.len() < want {
        anyhow::ensure!(
            started.elapsed() < limit,
            "only {} of {want} messages arrived",
            got.len()
        );
        let mcp = clients[turn % clients.len()];
        turn += 1;
        let r = wait(mcp, json!({"cursor": cursor, "timeout_seconds": 5})).await?;
        assert_eq!(r["cursor_reset"], false);
        let batch = ids(&r);
        assert_eq!(r["count"].as_u64(), Some(batch.len() as u64));
        assert!(batch.len() <= 200, "at most 200 per call");
        assert_eq!(r["timed_out"], batch.is_empty());
        got.extend(batch);
        cursor = r["cursor"].as_str().expect("cursor").to_owned();
    }
    Ok((got, cursor))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_messages_arrive_exactly_once_in_order_across_two_gateways()
-> anyhow::Result<()> {
    const TOTAL: usize = 10_000;
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let (gw1, gw2) = (stack.gateway(&[]).await?, stack.gateway(&[]).await?);
    assert_ne!(gw1.addr, gw2.addr);
    let token = stack.token(ReadScope::all()).await?;
    let (a, b) = (gw1.mcp(&token).await?, gw2.mcp(&token).await?);
    let cursor = cursor_now(&a).await?;

    // Inject in bursts of parallel requests with random pauses.
    let nats = stack.nats.clone();
    let subject = stack.subjects.sim(sim_op::INJECT_MESSAGE);
    let injector = tokio::spawn(async move {
        let mut rng = Rng::new();
        let mut sent = 0usize;
        let mut ids: HashSet<String> = HashSet::new();
        while sent < TOTAL {
            let burst = (1 + rng.below(300) as usize).min(TOTAL - sent);
            let mut set = tokio::task::JoinSet::new();
            for i in sent..sent + burst {
                let body = serde_json::to_vec(&InjectMessage {
                    message: text(
                        &person(&format!("9725033{:05}", i % 40)),
                        &format!("P{i}"),
                        minutes_ago(1),
                        &format!("n{i}"),
                    ),
                })?;
                let (nats, subject) = (nats.clone(), subject.clone());
                set.spawn(async move { nats.request(subject, body.into()).await });
            }
            while let Some(reply) = set.join_next().await {
                let ack: wazap_shared::wire::sim::SimAck =
                    wazap_shared::bus::decode_reply(&reply??.payload)?;
                ids.extend(ack.ids);
            }
            sent += burst;
            match rng.below(10) {
                0 => tokio::time::sleep(Duration::from_millis(200 + rng.below(400))).await,
                1..=4 => tokio::time::sleep(Duration::from_millis(rng.below(40))).await,
                _ => {}
            }
        }
        anyhow::Ok(ids)
    });

    let (got, _) = collect(&[&a, &b], cursor, TOTAL, Duration::from_secs(120)).await?;
    let injected = injector.await??;
    assert_eq!(injected.len(), TOTAL);
    assert_eq!(got.len(), TOTAL, "nothing repeated");
    let unique: HashSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), TOTAL, "no duplicates");
    assert!(got.iter().all(|id| injected.contains(id)));
    assert_eq!(got, archive_order(&stack).await?, "archive order");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_restart_and_concurrent_history_never_lose_a_message() -> anyhow::Result<()> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let token = stack.token(ReadScope::all()).await?;
    let mcp = gw.mcp(&token).await?;
    let cursor = cursor_now(&mcp).await?;
    let mut injected = Vec::new();
    for i in 0..3 {
        injected.push(
            stack
                .inject(text(
                    &person("972504440001"),
                    &format!("R{i}"),
                    minutes_ago(1),
                    "before restart",
                ))
                .await?,
        );
    }
    stack.stop_worker().await?;
    stack.start_worker().await?;
    let (got, cursor) = collect(&[&mcp], cursor, 3, Duration::from_secs(20)).await?;
    assert_eq!(got, injected, "nothing lost across the restart");

    // A history batch written while live messages arrive, and a waiter following along.
    let history: Vec<SimMessage> = (0..6_000)
        .map(|i| {
            text(
                &person(&format!("9725055{:05}", i % 50)),
                &format!("H{i}"),
                minutes_ago(600 + i),
                "old",
            )
        })
        .collect();
    let history = HistorySync {
        messages: history,
        progress: None,
    };
    let batch = stack.sim(sim_op::HISTORY_SYNC, &history);
    let live = async {
        let mut n = 0;
        for i in 0..300 {
            stack
                .inject(text(
                    &person("972504440002"),
                    &format!("L{i}"),
                    minutes_ago(0),
                    "live",
                ))
                .await?;
            n += 1;
        }
        anyhow::Ok(n)
    };
    let clients = [&mcp];
    let follow = collect(&clients, cursor, 6_300, Duration::from_secs(90));
    let (batch, live, follow) = tokio::join!(batch, live, follow);
    assert_eq!(batch?.stored, 6_000);
    assert_eq!(live?, 300);
    let (got, _) = follow?;
    let all = archive_order(&stack).await?;
    assert_eq!(
        got,
        all[3..],
        "every message after the cursor, once, in order"
    );
    Ok(())
}

#[tokio::test]
async fn addressed_to_me_keeps_direct_mentions_and_replies_never_own() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let own = person("972500000001");
    stack
        .sim(
            sim_op::SET_ACCOUNT,
            &SetAccount {
                own_jid: Some(own.clone()),
                own_lid: None,
            },
        )
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let cursor = cursor_now(&mcp).await?;
    let (g, member) = (group(77), person("972506660001"));
    let at = minutes_ago(1);
    stack
        .inject(text(&person("972506660002"), "D1", at, "direct"))
        .await?;
    stack
        .inject(group_text(&g, &member, "G1", at, "group chatter"))
        .await?;
    stack
        .inject(SimMessage {
            mentions: vec![own.clone()],
            ..group_text(&g, &member, "G2", at, "hey @you")
        })
        .await?;
    stack
        .inject(SimMessage {
            from_me: true,
            sender: None,
            ..group_text(&g, &member, "OWN1", at, "my own words")
        })
        .await?;
    stack
        .inject(SimMessage {
            reply_to: Some("OWN1".into()),
            ..group_text(&g, &member, "G3", at, "answer to you")
        })
        .await?;
    stack
        .inject(SimMessage {
            from_me: true,
            ..text(&person("972506660002"), "OWN2", at, "my direct words")
        })
        .await?;

    let texts = |r: &Value| -> Vec<String> {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                assert_eq!(m["from_me"], false, "own messages never come back");
                m["text"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let addressed = wait(
        &mcp,
        json!({"cursor": cursor, "addressed_to_me": true, "timeout_seconds": 5}),
    )
    .await?;
    assert_eq!(
        texts(&addressed),
        ["direct", "hey @you", "answer to you"],
        "direct yes, plain group no, mention yes, reply to own yes, own never"
    );
    assert_eq!(addressed["messages"][1]["mentions_me"], true);
    let everything = wait(&mcp, json!({"cursor": cursor, "timeout_seconds": 5})).await?;
    assert_eq!(
        texts(&everything),
        ["direct", "group chatter", "hey @you", "answer to you"]
    );
    // Both calls end at the same place: the filtered-out tail never makes a waiter spin.
    assert_eq!(addressed["cursor"], everything["cursor"]);
    Ok(())
}

#[tokio::test]
async fn timeouts_cursor_resets_and_bad_arguments() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;

    let started = Instant::now();
    let r = wait(&mcp, json!({"timeout_seconds": 2})).await?;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1_900) && took <= Duration::from_secs(3),
        "timeout honoured within ±1 s: {took:?}"
    );
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["count"], 0);
    assert_eq!(r["cursor_reset"], false);
    assert_eq!(r["account_id"], "default");
    let cursor = r["cursor"].as_str().unwrap().to_owned();

    // The timed-out cursor is usable: a message after it arrives, and wakes the wait early.
    let injected = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stack
            .inject(text(&person("972507770001"), "T1", minutes_ago(0), "wake"))
            .await
    };
    let started = Instant::now();
    let (woken, id) = tokio::join!(
        wait(&mcp, json!({"cursor": cursor, "timeout_seconds": 20})),
        injected
    );
    let woken = woken?;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woke on arrival"
    );
    assert_eq!(woken["timed_out"], false);
    assert_eq!(ids(&woken), [id?]);

    // Another archive's cursor: reset, starting now.
    let foreign = "w1.0123456789abcdef0123456789abcdef.1";
    let r = wait(&mcp, json!({"cursor": foreign, "timeout_seconds": 1})).await?;
    assert_eq!(r["cursor_reset"], true);
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["count"], 0, "the message before now is not replayed");
    let again = wait(&mcp, json!({"cursor": r["cursor"], "timeout_seconds": 1})).await?;
    assert_eq!(again["cursor_reset"], false);

    for args in [
        json!({"cursor": "not-a-cursor"}),
        json!({"cursor": "w1.zz.5"}),
        json!({"timeout_seconds": 0}),
        json!({"timeout_seconds": 56}),
        json!({"chat_id": "../etc/passwd", "timeout_seconds": 1}),
    ] {
        let r = mcp.call("wait_for_messages", args.clone()).await?;
        assert_eq!(
            r.error_code().as_deref(),
            Some("invalid_argument"),
            "{args}: {}",
            r.text
        );
        assert!(!r.text.contains("not-a-cursor"), "never echoes the value");
    }
    let r = mcp
        .call(
            "wait_for_messages",
            json!({"account_id": "nobody", "timeout_seconds": 1}),
        )
        .await?;
    assert_eq!(r.error_code().as_deref(), Some("account_not_found"));
    Ok(())
}

#[tokio::test]
async fn out_of_scope_chats_and_private_words_never_leak() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let (pa, pb) = (person("972508880001"), person("972508880002"));
    stack.contact(&pa, None, "Avi").await?;
    stack.contact(&pb, None, "Bella").await?;
    stack.inject(text(&pa, "A0", minutes_ago(9), "hi")).await?;
    stack.inject(text(&pb, "B0", minutes_ago(9), "hi")).await?;
    let gw = stack.gateway(&[]).await?;
    let all = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let chats = all.call("list_chats", json!({})).await?.ok()["chats"].clone();
    let id_of = |name: &str| {
        chats
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["chat_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (a, b) = (id_of("Avi"), id_of("Bella"));
    let scoped = gw
        .mcp(
            &stack
                .token(ReadScope {
                    chats: ChatSelection::Selected {
                        chats: vec![a.clone()],
                    },
                    since: None,
                    until: None,
                    ..ReadScope::all()
                })
                .await?,
        )
        .await?;
    let cursor = cursor_now(&scoped).await?;

    // A flood from the out-of-scope chat only: the wait times out, yet its cursor moves on.
    for i in 0..30 {
        stack
            .inject(text(
                &pb,
                &format!("B{}", i + 1),
                minutes_ago(0),
                "secret b",
            ))
            .await?;
    }
    let r = wait(&scoped, json!({"cursor": cursor, "timeout_seconds": 1})).await?;
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["count"], 0);
    assert_ne!(
        r["cursor"],
        json!(cursor),
        "scanned past what it may not see"
    );
    let cursor = r["cursor"].as_str().unwrap().to_owned();

    stack
        .inject(text(&pa, "A1", minutes_ago(0), "meet at 5 #private"))
        .await?;
    stack
        .inject(text(&pa, "A2", minutes_ago(0), "plain"))
        .await?;
    stack
        .inject(text(&pb, "B99", minutes_ago(0), "secret b"))
        .await?;
    let r = wait(&scoped, json!({"cursor": cursor, "timeout_seconds": 5})).await?;
    let msgs = r["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{r}");
    assert!(msgs.iter().all(|m| m["chat_id"] == json!(a)));
    assert_eq!(msgs[0]["private"], true);
    assert_eq!(msgs[0]["text"], "");
    assert_eq!(msgs[1]["text"], "plain");
    assert!(!r.to_string().contains("meet at 5"));
    assert!(!r.to_string().contains("secret b"));

    // Naming the out-of-scope chat is the same as naming no chat at all.
    let r = scoped
        .call(
            "wait_for_messages",
            json!({"chat_id": b, "timeout_seconds": 1}),
        )
        .await?;
    assert_eq!(r.error_code().as_deref(), Some("chat_not_found"));
    let r = scoped
        .call(
            "wait_for_messages",
            json!({"chat_id": "+972508880002", "timeout_seconds": 1}),
        )
        .await?;
    assert_eq!(r.error_code().as_deref(), Some("chat_not_found"));
    // By phone number inside the scope: only that chat.
    let r = wait(
        &scoped,
        json!({"chat_id": "+972508880001", "cursor": cursor, "timeout_seconds": 1}),
    )
    .await?;
    assert_eq!(r["count"], 2);
    Ok(())
}

#[tokio::test]
async fn a_waiting_call_holds_its_permit_until_the_client_goes() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[("WAZAP_MCP_MAX_CONCURRENCY", "1")]).await?;
    let auth = format!("Bearer {}", stack.token(ReadScope::all()).await?);
    let url = gw.mcp_url();
    let waiting = {
        let (url, auth) = (url.clone(), auth.clone());
        tokio::spawn(async move {
            post_raw(
                &url,
                &[("authorization", &auth)],
                tools_call_body("wait_for_messages", json!({"timeout_seconds": 50})),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, _, _) = post_raw(
        &url,
        &[("authorization", &auth)],
        tools_call_body("list_chats", json!({})),
    )
    .await?;
    assert_eq!(status, 429, "the waiting call counts against the limit");

    waiting.abort();
    let _ = waiting.await;
    let started = Instant::now();
    loop {
        let (status, _, _) = post_raw(
            &url,
            &[("authorization", &auth)],
            tools_call_body("list_chats", json!({})),
        )
        .await?;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the disconnected wait released its permit"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
