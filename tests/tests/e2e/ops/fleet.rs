//! Several workers share the accounts (#27 items 4 and 6): six accounts on the sim and three
//! workers — this process's and two worker processes ([`spawn_worker`]) — end up serving two
//! each; reads, waits and sends work in every account. Then every account runs a mixed load
//! (a message in, a send, a wait on its cursor, again and again) while a worker is SIGKILLed:
//! its accounts move to the other two within 10 s, every loop goes on missing and repeating
//! nothing, every send ends `accepted`, `outcome_unknown` or `failed` and its retry is answered
//! from the journal, and no send is transmitted twice — nor is a failed one transmitted, nor an
//! accepted one lost. The same runs on one nats-server and on a three-node NATS cluster, where a
//! node some worker is connected to is SIGKILLed too, under the same load: calls a death cuts
//! off are retried as a client would (the same cursor, the same `request_id`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
use crate::send::{connection_with_token, send_text, send_text_within};

const ACCOUNTS: [&str; 6] = ["default", "a1", "a2", "a3", "a4", "a5"];
/// A send under load waits this long for its answer, as a client with a timeout does: one whose
/// worker died before answering would otherwise hold its loop for the whole send deadline (60 s)
/// before its retry reads the outcome from the journal.
const CALL_DEADLINE: Duration = Duration::from_secs(10);

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

/// One account's contact, its cursor loop and what it has seen, and the sends made under load.
struct Account {
    id: &'static str,
    chat: String,
    cursor: String,
    injected: Vec<String>,
    seen: Vec<String>,
    sent: Vec<(String, SendState)>,
}

/// `a`'s mixed load until `stop`: a message in, a send with a fresh key (retried with that key
/// while a worker or node is going away), a wait from the cursor; a short pause; again.
async fn load(
    stack: &Stack,
    grant: &VerifiedGrant,
    a: &mut Account,
    sends: &AtomicUsize,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let tag = format!("{}-load-{n}", a.id);
        a.injected.push(inject(stack, a.id, &tag).await?);
        let sent = retried(&tag, || {
            send_text_within(stack, grant, &a.chat, &tag, "hi", Some(CALL_DEADLINE))
        })
        .await?;
        a.sent.push((tag, sent.state));
        sends.fetch_add(1, Ordering::Relaxed);
        let (next, ids) = poll(stack, grant, a.id, Some(&a.cursor)).await?;
        a.cursor = next;
        a.seen.extend(ids);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Until every loop has made `more` sends from now on (30 s at most).
async fn sent_more(sends: &[AtomicUsize], more: usize, when: &str) -> anyhow::Result<()> {
    let now: Vec<usize> = sends.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (sends.iter().zip(&now)).any(|(n, was)| n.load(Ordering::Relaxed) < was + more) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the load stalled {when}: {now:?} sends, then {sends:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `call` again while it fails as a worker or NATS node going away makes calls fail, for 30 s:
/// a send whose answer a death cut off is `send_outcome_unknown`, which says to repeat it with
/// the same `request_id`.
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
                    ErrorCode::WorkerUnavailable
                        | ErrorCode::Busy
                        | ErrorCode::DeadlineExceeded
                        | ErrorCode::SendOutcomeUnknown
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
            sent: Vec::new(),
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
    // Under load in every account: the worker dies, and on the cluster a node after it.
    let stop = AtomicBool::new(false);
    let sends: Vec<AtomicUsize> = loops.iter().map(|_| AtomicUsize::new(0)).collect();
    let loads = futures::future::try_join_all(
        (loops.iter_mut().zip(&sends)).map(|(a, sends)| load(&stack, &grant, a, sends, &stop)),
    );
    let kills = async {
        sent_more(&sends, 2, "before the kill").await?;
        let killed = Instant::now();
        first.start_kill()?;
        first.wait().await?;
        stack
            .served_without(ACCOUNTS.len(), Some(&pid), Duration::from_secs(10))
            .await?;
        let took = killed.elapsed();
        println!("accounts of a killed worker served again after {took:?}");
        anyhow::ensure!(took <= Duration::from_secs(10), "takeover took {took:?}");
        // On the cluster, a node a worker is connected to dies too: its clients move to the
        // others.
        if let Some(cluster) = cluster.as_mut() {
            let on = cluster.nodes_of("wazap-worker").await?;
            let victim = *on.first().expect("the workers are connected");
            println!(
                "killing NATS node {} (workers on {on:?})",
                cluster.name(victim)
            );
            cluster.kill(victim).await?;
        }
        // The load goes on after the last death until every account has sent 3 more (a call
        // the death cut off first waits out its deadline).
        sent_more(&sends, 3, "after the last death").await
    };
    let stopped = async {
        let done = kills.await;
        stop.store(true, Ordering::Relaxed);
        done
    };
    // A load that failed stalls the kills' wait for more sends: its error is the cause.
    let (loaded, killed) = tokio::join!(loads, stopped);
    loaded?;
    killed?;
    for a in &loops {
        let moved = lost.contains(a.id);
        println!(
            "{}: {} sends under load (moved: {moved})",
            a.id,
            a.sent.len()
        );
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
        for (key, state) in &a.sent {
            let again = retried(key, || send_text(&stack, &grant, &a.chat, key, "hi")).await?;
            assert!(again.duplicate, "{key}: a retried key sent again");
            assert_eq!(again.state, *state, "{key}: the journal changed its answer");
        }
        let key = format!("{}-after", a.id);
        let after = retried(&key, || send_text(&stack, &grant, &a.chat, &key, "hi")).await?;
        assert_eq!(after.state, SendState::Accepted, "{}", a.id);
    }
    // Every send's journal entry against what the sims transmitted (their logs are written
    // behind the sends: wait for the rows): each accepted send transmitted exactly once, a
    // failed one never, one of unknown outcome at most once, and nothing transmitted that no
    // entry explains.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (entries, strays) = loop {
        let db = stack.pool.get().await?;
        let entries: Vec<(String, String, i64)> = db
            .query(
                "select j.request_id, j.state,
                        (select count(*) from sim_transmissions t
                          where t.account_id = j.account_id and t.wa_id = j.wa_id)
                   from send_journal j",
                &[],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let strays: i64 = db
            .query_one(
                "select count(*) from sim_transmissions t
                  where not exists (select 1 from send_journal j
                                     where j.account_id = t.account_id and j.wa_id = t.wa_id)",
                &[],
            )
            .await?
            .get(0);
        let pending = (entries.iter()).any(|(_, state, n)| state == "accepted" && *n == 0);
        if !pending || Instant::now() >= deadline {
            break (entries, strays);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let under_load: usize = loops.iter().map(|a| a.sent.len()).sum();
    assert_eq!(
        entries.len(),
        2 * ACCOUNTS.len() + under_load,
        "a send without its entry"
    );
    for (key, state, n) in &entries {
        let ok = match state.as_str() {
            "accepted" => *n == 1,
            "failed" => *n == 0,
            "outcome_unknown" => *n <= 1,
            _ => false,
        };
        assert!(ok, "{key}: {state} yet transmitted {n} times");
    }
    assert_eq!(strays, 0, "a transmission no journal entry explains");

    // The two left share the six evenly once the dead one's presence has aged out.
    spread(&stack, 2, Duration::from_secs(30)).await?;
    second.start_kill()?;
    let _ = second.wait().await;
    Ok(())
}
