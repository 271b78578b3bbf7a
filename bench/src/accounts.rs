//! Phase `accounts` (#27 item 7; only when named: `--only accounts`): what several accounts
//! cost, on a fresh archive of its own with the sim connector.
//! - **ingest**: `--messages / 4` messages into one account alone, then as many into each of
//!   three accounts at once (each account has its own writer), in messages per second;
//! - **routing by account**: `read_messages` (50 latest of the busy chat) through `/mcp` with the
//!   minimal client, in the default account and in another one of the same size (alternated,
//!   A-B-B-A, each the mean of its two runs), all four served by one worker: a request goes to
//!   `<prefix>.rpc.<account>.read_messages`; and the default account's again with a connection
//!   that may also send;
//! - **takeover**: three workers (this process's and two worker processes) share the four
//!   accounts; a process holding accounts is SIGKILLed: the time until each of its accounts is served again
//!   (its lease held by a live worker that recorded it, `ping` ready), until the first
//!   `read_messages` of a moved account answers through `/mcp` (reads of an account between
//!   two workers are answered from Postgres by any worker), and until a `send_message` to it is
//!   accepted again (sends need the account's own worker); three rounds.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wazap_shared::grant::ConnectionKind;
use wazap_shared::wire::grants::{ReadScope, SendMode};
use wazap_tests::{Stack, TestDb, holder_pid};
use wazap_worker::accounts::{self, NewAccount};
use wazap_worker::archive::Archive;
use wazap_worker::config::ConnectorKind;

use crate::args::Args;
use crate::dataset::{self, Rng};
use crate::faults::WORKER_ROLE;
use crate::latency::{Client, measure_with};

/// The accounts besides `default` (they ingest at once).
const OTHERS: [&str; 3] = ["a1", "a2", "a3"];
/// Every account of the phase.
const ACCOUNTS: usize = 1 + OTHERS.len();
/// Messages per ingest call.
const SLAB: usize = 20_000;

/// The figures.
pub(crate) struct AccountFigures {
    per_account: usize,
    alone_per_sec: f64,
    three_per_sec: f64,
    read_default: [f64; 2],
    read_other: [f64; 2],
    read_sender: [f64; 2],
    served_ms: Vec<f64>,
    first_read_ms: Vec<f64>,
    first_send_ms: Vec<f64>,
}

/// Run the phase.
pub(crate) async fn run(args: &Args) -> anyhow::Result<AccountFigures> {
    let db = TestDb::create().await?;
    let per_account = (args.messages / 4).max(args.chats);
    let (alone_per_sec, three_per_sec) = fill(&db.url, per_account, args.chats).await?;
    let stack = Stack::on(db, ConnectorKind::Sim).await?;
    stack
        .served_without(ACCOUNTS, None, Duration::from_secs(60))
        .await?;
    let gw = stack.gateway(&[("WAZAP_MCP_MAX_CONCURRENCY", "2")]).await?;
    // Reads with a read-only connection, as the `reads` phase measures them; sends with one
    // that may send anywhere.
    let (_, reader) = stack
        .token_with(
            ReadScope::all(),
            ConnectionKind::Local,
            Duration::from_secs(86_400),
        )
        .await?;
    let (_, token) = stack.sending_connection(SendMode::All, vec![]).await?;
    let url = gw.mcp_url();
    let mut busy = HashMap::new();
    for account in ["default", OTHERS[0], OTHERS[1], OTHERS[2]] {
        busy.insert(account, busy_chat(&stack, account).await?);
    }
    let read = |account: &str| json!({"chat_id": busy[account], "limit": 50});
    // The two accounts in A-B-B-A order, each figure the mean of its two runs, so that a drift
    // of the machine's speed during the phase falls on both alike.
    let mut p50_p99 = Vec::new();
    for (as_who, account) in [
        (&reader, "default"),
        (&reader, OTHERS[0]),
        (&reader, OTHERS[0]),
        (&reader, "default"),
        (&token, "default"),
    ] {
        let l = measure_with(
            &url,
            as_who,
            "read_messages",
            &read(account),
            args.requests,
            Client::Raw,
        )
        .await?;
        p50_p99.push([l.p50_ms, l.p99_ms]);
    }
    let mean = |a: [f64; 2], b: [f64; 2]| [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0];
    let [d1, o1, o2, d2, read_sender] = p50_p99[..] else {
        unreachable!("five cases")
    };
    let (read_default, read_other) = (mean(d1, d2), mean(o1, o2));

    let (mut served_ms, mut first_read_ms, mut first_send_ms) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut workers = vec![spawn(&stack)?, spawn(&stack)?];
    for _ in 0..3 {
        let held = wait_spread(&stack, Duration::from_secs(60)).await?;
        // The process to kill: the first one that holds an account.
        let (victim, pid) = workers
            .iter()
            .enumerate()
            .find_map(|(i, w)| {
                let pid = w.id()?.to_string();
                held.values()
                    .any(|h| holder_pid(h) == Some(pid.as_str()))
                    .then_some((i, pid))
            })
            .ok_or_else(|| anyhow::anyhow!("no worker process holds an account: {held:?}"))?;
        let moved: Vec<&str> = held
            .iter()
            .filter(|(_, h)| holder_pid(h) == Some(pid.as_str()))
            .map(|(a, _)| a.as_str())
            .collect();
        let probe = read(moved[0]);
        let to = busy[moved[0]].clone();
        let mut dead = workers.remove(victim);
        dead.start_kill()?;
        let killed = Instant::now();
        dead.wait().await?;
        let reader = {
            let (url, token) = (url.clone(), token.clone());
            tokio::spawn(
                async move { first_ok(&url, &token, "read_messages", |_| probe.clone()).await },
            )
        };
        let sender = {
            let (url, token) = (url.clone(), token.clone());
            let round = served_ms.len();
            tokio::spawn(async move {
                first_ok(&url, &token, "send_message", |n| {
                    json!({"chat_id": to, "request_id": format!("takeover-{round}-{n}"), "text": "bench: takeover"})
                })
                .await
            })
        };
        stack
            .served_without(ACCOUNTS, Some(&pid), Duration::from_secs(30))
            .await?;
        served_ms.push(killed.elapsed().as_secs_f64() * 1e3);
        first_read_ms.push((reader.await?? - killed).as_secs_f64() * 1e3);
        first_send_ms.push((sender.await?? - killed).as_secs_f64() * 1e3);
        eprintln!(
            "wazap-bench: a worker of three killed: served again after {:.0} ms, first read after {:.0} ms, first send after {:.0} ms",
            served_ms.last().unwrap_or(&0.0),
            first_read_ms.last().unwrap_or(&0.0),
            first_send_ms.last().unwrap_or(&0.0)
        );
        workers.push(spawn(&stack)?);
    }
    for mut w in workers {
        let _ = w.start_kill();
        let _ = w.wait().await;
    }
    gw.stop().await?;
    Ok(AccountFigures {
        per_account,
        alone_per_sec,
        three_per_sec,
        read_default,
        read_other,
        read_sender,
        served_ms,
        first_read_ms,
        first_send_ms,
    })
}

/// Register the other accounts and ingest `n` messages into `default` alone, then into the
/// three others at once: the two rates, in messages per second.
async fn fill(url: &str, n: usize, chats: usize) -> anyhow::Result<(f64, f64)> {
    let pool = wazap_worker::db::pool(url, wazap_worker::server::POOL_SIZE)?;
    wazap_worker::db::migrate(&pool).await?;
    {
        let db = pool.get().await?;
        for id in OTHERS {
            accounts::add(
                &db,
                NewAccount {
                    account_id: id.to_owned(),
                    display_name: None,
                    connector: Some(ConnectorKind::Sim),
                },
            )
            .await?;
        }
    }
    let shutdown = CancellationToken::new();
    let supervisor = wazap_worker::supervise::Supervisor::new(shutdown.clone());
    wazap_worker::db::statistics::spawn(pool.clone(), &supervisor);
    let mut archives = Vec::new();
    for id in ["default", OTHERS[0], OTHERS[1], OTHERS[2]] {
        archives.push(Archive::start(pool.clone(), id, &supervisor).await?);
    }
    eprintln!(
        "wazap-bench: ingesting {n} messages into one account, then into each of three at once"
    );
    let started = Instant::now();
    ingest(&archives[0], n, chats).await?;
    let alone = n as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    futures::future::try_join_all(archives[1..].iter().map(|a| ingest(a, n, chats))).await?;
    let three = (3 * n) as f64 / started.elapsed().as_secs_f64();
    shutdown.cancel();
    let db = pool.get().await?;
    db.batch_execute("vacuum analyze").await?;
    db.batch_execute("checkpoint").await?;
    Ok((alone, three))
}

/// The benchmark's synthetic data set, `n` messages over `chats` chats, into `archive`'s
/// account (generated on a thread of its own, a slab ahead).
async fn ingest(archive: &Archive, n: usize, chats: usize) -> anyhow::Result<()> {
    let (slabs, mut next) = tokio::sync::mpsc::channel(1);
    let now = chrono::Utc::now();
    let producer = std::thread::spawn(move || {
        let mut rng = Rng::new(0x5eed);
        let mut done = 0;
        while done < n {
            let to = (done + SLAB).min(n);
            if slabs
                .blocking_send(dataset::synthetic(done, to, n, chats, now, &mut rng))
                .is_err()
            {
                return;
            }
            done = to;
        }
    });
    while let Some(slab) = next.recv().await {
        archive.ingest_batch(archive.account(), slab).await?;
    }
    producer
        .join()
        .map_err(|_| anyhow::anyhow!("the data set generator panicked"))
}

/// `account`'s busy chat's opaque id.
async fn busy_chat(stack: &Stack, account: &str) -> anyhow::Result<String> {
    Ok(stack
        .pool
        .get()
        .await?
        .query_one(
            "select chat_id from chat_aliases where account_id = $1 and jid = $2",
            &[&account, &dataset::chat_jid(dataset::BUSY_CHAT)],
        )
        .await?
        .get(0))
}

/// A worker process of this stack (this binary in its worker role).
fn spawn(stack: &Stack) -> anyhow::Result<tokio::process::Child> {
    Ok(tokio::process::Command::new(std::env::current_exe()?)
        .env(WORKER_ROLE, "1")
        .envs(stack.worker_env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?)
}

/// Until every account is served and both worker processes have announced themselves (their
/// presence, refreshed every second), so a dead worker's accounts may go to either of the others;
/// who holds what. (Four accounts over three workers may settle 2/2/0: each holds at most its
/// share, ⌈4 / 3⌉.)
async fn wait_spread(stack: &Stack, within: Duration) -> anyhow::Result<HashMap<String, String>> {
    let deadline = Instant::now() + within;
    loop {
        stack.served_without(ACCOUNTS, None, within).await?;
        let present: i64 = stack
            .pool
            .get()
            .await?
            .query_one(
                "select count(*) from worker_presence where seen_at > now() - interval '2 seconds'",
                &[],
            )
            .await?
            .get(0);
        if present >= 3 {
            // A moment for a worker above its share to hand an account over.
            tokio::time::sleep(Duration::from_secs(3)).await;
            stack.served_without(ACCOUNTS, None, within).await?;
            return stack.account_holders().await;
        }
        anyhow::ensure!(Instant::now() < deadline, "three workers never present");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Call `tool` with `args(attempt)` until it succeeds (within 30 s); when it did.
async fn first_ok(
    url: &str,
    token: &str,
    tool: &str,
    args: impl Fn(usize) -> Value,
) -> anyhow::Result<Instant> {
    let client = crate::raw_mcp::RawMcp::new(url, token)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    for attempt in 0.. {
        if client.call(tool, &args(attempt)).await.is_ok() {
            return Ok(Instant::now());
        }
        anyhow::ensure!(Instant::now() < deadline, "no {tool} answered in 30 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    unreachable!("the attempts never end")
}

impl AccountFigures {
    /// Print this phase's rows on stdout.
    pub(crate) fn print(&self) {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        println!(
            "\nwazap-bench accounts — {} messages in each of four accounts",
            self.per_account
        );
        println!("| measure | figure |");
        println!("| --- | --- |");
        println!(
            "| ingest, one account alone | {:.0} msg/s |",
            self.alone_per_sec
        );
        println!(
            "| ingest, three accounts at once (together) | {:.0} msg/s |",
            self.three_per_sec
        );
        println!(
            "| read_messages p50 / p99, default account | {:.2} / {:.2} ms |",
            self.read_default[0], self.read_default[1]
        );
        println!(
            "| read_messages p50 / p99, another account | {:.2} / {:.2} ms |",
            self.read_other[0], self.read_other[1]
        );
        println!(
            "| read_messages p50 / p99, default account, a connection that may also send | {:.2} / {:.2} ms |",
            self.read_sender[0], self.read_sender[1]
        );
        println!(
            "| a worker of three killed → its accounts served (mean, max of {}) | {:.0}, {:.0} ms |",
            self.served_ms.len(),
            mean(&self.served_ms),
            max(&self.served_ms)
        );
        println!(
            "| a worker of three killed → first read of a moved account (mean, max) | {:.0}, {:.0} ms |",
            mean(&self.first_read_ms),
            max(&self.first_read_ms)
        );
        println!(
            "| a worker of three killed → first send to a moved account accepted (mean, max) | {:.0}, {:.0} ms |",
            mean(&self.first_send_ms),
            max(&self.first_send_ms)
        );
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "messages_per_account": self.per_account,
            "ingest_alone_per_second": self.alone_per_sec,
            "ingest_three_at_once_per_second": self.three_per_sec,
            "read_messages_default_ms": {"p50": self.read_default[0], "p99": self.read_default[1]},
            "read_messages_other_ms": {"p50": self.read_other[0], "p99": self.read_other[1]},
            "read_messages_sender_ms": {"p50": self.read_sender[0], "p99": self.read_sender[1]},
            "takeover_served_ms": self.served_ms,
            "takeover_first_read_ms": self.first_read_ms,
            "takeover_first_send_ms": self.first_send_ms,
        })
    }
}
