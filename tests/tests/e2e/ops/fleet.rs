//! Several workers share the accounts (#27 items 4 and 6): six accounts on the sim and three
//! workers — this process's and two worker processes ([`spawn_worker`]) — end up serving two
//! each; reads, waits and sends work in every account; a worker SIGKILLed in the middle of it
//! hands its accounts to the other two within 10 s, after which every account is served again,
//! each cursor loop goes on missing and repeating nothing, and no send is transmitted twice.
//! The same runs on one nats-server and on a three-node NATS cluster, where a node some worker
//! is connected to is SIGKILLed too, after the worker: calls a node's death cuts off are
//! retried as a client would (the same cursor, the same `request_id`).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use wazap_shared::bus;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::read::{ReadMessages, ReadMessagesRequest};
use wazap_shared::wire::send::SendState;
use wazap_shared::wire::sim::{InjectMessage, UpsertContact};
use wazap_shared::wire::wait::{WaitForMessages, WaitForMessagesRequest};
use wazap_shared::{ErrorCode, RpcError};
use wazap_tests::fault::NatsCluster;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Stack, holder_pid};
use wazap_worker::accounts::{self, NewAccount};
use wazap_worker::config::ConnectorKind;

use super::standby::spawn_worker;
use crate::send::{connection_with_token, send_text};

const ACCOUNTS: [&str; 6] = ["default", "a1", "a2", "a3", "a4", "a5"];

/// Until every account is served (ping answers: each has recorded its holder) by `workers`
/// workers holding the same number each; who holds what.
async fn spread(
    stack: &Stack,
    workers: usize,
    within: Duration,
) -> anyhow::Result<HashMap<String, String>> {
    let deadline = Instant::now() + within;
    loop {
        let held = stack.account_holders().await?;
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for h in held.values() {
            *counts.entry(h).or_default() += 1;
        }
        let even = counts.len() == workers
            && counts.values().all(|n| *n == ACCOUNTS.len() / workers)
            && held.len() == ACCOUNTS.len();
        if even
            && stack
                .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                .await
                .is_ok()
        {
            return Ok(held);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not spread over {workers} workers in {within:?}: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One account's contact, its cursor loop and what it has seen.
struct Account {
    id: &'static str,
    chat: String,
    cursor: String,
    injected: Vec<String>,
    seen: Vec<String>,
}

/// `call` again while it fails as a worker or NATS node going away makes calls fail, for 30 s.
async fn retried<T, F, Fut>(what: &str, mut call: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, RpcError>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match call().await {
            Ok(answer) => return Ok(answer),
            Err(e)
                if matches!(
                    e.code,
                    ErrorCode::WorkerUnavailable | ErrorCode::Busy | ErrorCode::DeadlineExceeded
                ) && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => anyhow::bail!("{what}: {e:?}"),
        }
    }
}

/// `account`'s contact (its chat id names the account).
async fn contact(stack: &Stack, account: &str) -> anyhow::Result<String> {
    let ack = stack
        .sim_of(
            account,
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: person("972504440001"),
                lid: None,
                name: format!("Noa at {account}"),
            },
        )
        .await?;
    let chat = ack.ids.into_iter().next().expect("a chat id");
    if account != "default" {
        assert!(chat.ends_with(&format!("-{account}")), "{chat}");
    }
    Ok(chat)
}

/// A message from the contact into `account`; its id.
async fn inject(stack: &Stack, account: &str, tag: &str) -> anyhow::Result<String> {
    let message = text(&person("972504440001"), tag, minutes_ago(1), "on the way");
    let inject = InjectMessage { message };
    let ack = retried(tag, || {
        stack.sim_of(account, sim_op::INJECT_MESSAGE, &inject)
    })
    .await?;
    Ok(ack.ids.into_iter().next().expect("a message id"))
}

/// One poll of `account`'s loop from `cursor`, retried while no worker answers (a takeover).
async fn poll(
    stack: &Stack,
    grant: &VerifiedGrant,
    account: &str,
    cursor: Option<&str>,
) -> anyhow::Result<(String, Vec<String>)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let req = WaitForMessagesRequest {
            account_id: Some(account.to_owned()),
            cursor: cursor.map(str::to_owned),
            ..Default::default()
        };
        match bus::call::<WaitForMessages>(&stack.nats, &stack.subjects, Some(grant), &req, None)
            .await
        {
            Ok(r) => {
                assert!(!r.cursor_reset, "{account}'s cursor was reset");
                assert_eq!(r.account_id, account);
                let ids = r.messages.into_iter().map(|m| m.message_id).collect();
                return Ok((r.cursor, ids));
            }
            Err(e) => {
                anyhow::ensure!(Instant::now() < deadline, "{account}: polls failed: {e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Poll `a`'s loop until it has seen everything injected.
async fn catch_up(stack: &Stack, grant: &VerifiedGrant, a: &mut Account) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !a.injected.iter().all(|id| a.seen.contains(id)) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{}: the loop missed a message",
            a.id
        );
        let (next, ids) = poll(stack, grant, a.id, Some(&a.cursor)).await?;
        a.cursor = next;
        a.seen.extend(ids);
    }
    Ok(())
}

#[tokio::test]
async fn six_accounts_spread_over_three_workers_and_a_killed_one_hands_its_own_over()
-> anyhow::Result<()> {
    fleet(Stack::start(ConnectorKind::Sim).await?, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_on_a_three_node_nats_cluster_with_a_node_killed_too() -> anyhow::Result<()> {
    let cluster = NatsCluster::start().await?;
    let stack = Stack::start_on_nats(&cluster.urls(), ConnectorKind::Sim).await?;
    fleet(stack, Some(cluster)).await
}

/// The run, on `cluster` when given (else on the stack's one nats-server).
async fn fleet(stack: Stack, mut cluster: Option<NatsCluster>) -> anyhow::Result<()> {
    {
        let db = stack.pool.get().await?;
        for id in &ACCOUNTS[1..] {
            accounts::add(
                &db,
                NewAccount {
                    account_id: (*id).to_owned(),
                    display_name: None,
                    connector: Some(ConnectorKind::Sim),
                },
            )
            .await?;
        }
    }
    let mut first = spawn_worker(&stack)?;
    let mut second = spawn_worker(&stack)?;
    let held = spread(&stack, 3, Duration::from_secs(40)).await?;

    // Every account works, wherever it is served: a contact, a read, a send, a cursor loop.
    let (grant, _) = connection_with_token(&stack, SendMode::All, vec![]).await?;
    let mut loops = Vec::new();
    for id in ACCOUNTS {
        let chat = contact(&stack, id).await?;
        let (cursor, _) = poll(&stack, &grant, id, None).await?;
        let message = inject(&stack, id, &format!("{id}-pre")).await?;
        let read = bus::call::<ReadMessages>(
            &stack.nats,
            &stack.subjects,
            Some(&grant),
            &ReadMessagesRequest {
                chat_id: chat.clone(),
                ..Default::default()
            },
            None,
        )
        .await?;
        assert_eq!(read.account_id, id);
        assert!(read.messages.iter().any(|m| m.message_id == message));
        let sent = send_text(&stack, &grant, &chat, &format!("{id}-before"), "hi").await?;
        assert_eq!(sent.state, SendState::Accepted, "{id}");
        let mut a = Account {
            id,
            chat,
            cursor,
            injected: vec![message],
            seen: Vec::new(),
        };
        catch_up(&stack, &grant, &mut a).await?;
        loops.push(a);
    }

    // SIGKILL the first worker process: its two accounts move to the other two workers.
    let pid = first.id().expect("running").to_string();
    let lost: HashSet<String> = (held.iter())
        .filter(|(_, h)| holder_pid(h) == Some(pid.as_str()))
        .map(|(a, _)| a.clone())
        .collect();
    assert_eq!(
        lost.len(),
        2,
        "the killed worker served two accounts: {held:?}"
    );
    first.start_kill()?;
    let killed = Instant::now();
    first.wait().await?;
    // Meanwhile messages keep arriving in the accounts the others serve.
    for a in loops.iter_mut().filter(|a| !lost.contains(a.id)) {
        a.injected
            .push(inject(&stack, a.id, &format!("{}-during", a.id)).await?);
    }
    stack
        .served_without(ACCOUNTS.len(), Some(&pid), Duration::from_secs(10))
        .await?;
    let took = killed.elapsed();
    println!("accounts of a killed worker served again after {took:?}");
    assert!(took <= Duration::from_secs(10), "takeover took {took:?}");

    // On the cluster, a node a worker is connected to dies too: its clients move to the others.
    if let Some(cluster) = cluster.as_mut() {
        let on = cluster.nodes_of("wazap-worker").await?;
        let victim = *on.first().expect("the workers are connected");
        println!(
            "killing NATS node {} (workers on {on:?})",
            cluster.name(victim)
        );
        cluster.kill(victim).await?;
        for a in loops.iter_mut() {
            a.injected
                .push(inject(&stack, a.id, &format!("{}-node", a.id)).await?);
        }
    }

    // Every account works again; each loop goes on from its cursor; sends retried with their
    // keys are answered from the journal.
    for a in loops.iter_mut() {
        a.injected
            .push(inject(&stack, a.id, &format!("{}-post", a.id)).await?);
        catch_up(&stack, &grant, a).await?;
        let unique: HashSet<_> = a.seen.iter().collect();
        assert_eq!(unique.len(), a.seen.len(), "{}: a message came twice", a.id);
        let key = format!("{}-before", a.id);
        let again = retried(&key, || send_text(&stack, &grant, &a.chat, &key, "hi")).await?;
        assert!(again.duplicate, "{}: a retried key sent again", a.id);
        let key = format!("{}-after", a.id);
        let after = retried(&key, || send_text(&stack, &grant, &a.chat, &key, "hi")).await?;
        assert_eq!(after.state, SendState::Accepted, "{}", a.id);
    }
    // The sims write their transmission logs behind the sends: wait for the rows.
    let deadline = Instant::now() + Duration::from_secs(10);
    let wa_ids: Vec<String> = loop {
        let ids: Vec<String> = stack
            .pool
            .get()
            .await?
            .query("select wa_id from sim_transmissions", &[])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if ids.len() >= 2 * ACCOUNTS.len() || Instant::now() >= deadline {
            break ids;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let unique: HashSet<_> = wa_ids.iter().collect();
    assert_eq!(
        unique.len(),
        wa_ids.len(),
        "a WhatsApp id transmitted twice"
    );
    assert_eq!(
        wa_ids.len(),
        2 * ACCOUNTS.len(),
        "one send before, one after, each"
    );

    // The two left share the six evenly once the dead one's presence has aged out.
    spread(&stack, 2, Duration::from_secs(30)).await?;
    second.start_kill()?;
    let _ = second.wait().await;
    Ok(())
}
