//! Phase `faults` (#25; only when named: `--only faults`): how long wazap takes to come back
//! from what goes wrong in production. Three measures, each on a fresh small archive with the
//! sim connector:
//! - **takeover**: a standby worker serving after the holder, a worker process of its own, is
//!   SIGKILLed (three rounds);
//! - **Postgres restart**: a throwaway cluster stopped with `pg_ctl stop -m immediate` under
//!   sends, started again, until a send is accepted again;
//! - **rolling restart**: sends from two clients through the JSON send API while three gateways
//!   are replaced one by one (calls refused by a stopping gateway are retried, as a client
//!   would): the send rate and p99 before and during.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wazap_shared::wire::grants::SendMode;
use wazap_tests::fault::PgCluster;
use wazap_tests::fixtures::person;
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

/// The variable that makes this binary run as a worker (the holder the takeover kills).
pub(crate) const WORKER_ROLE: &str = "WAZAP_BENCH_WORKER";

/// The figures.
pub(crate) struct Faults {
    takeover_ms: Vec<f64>,
    pg_recovery_ms: f64,
    before: Rate,
    during: Rate,
    retried: usize,
}

/// Sends over a stretch of time.
#[derive(Debug, Clone, Copy)]
struct Rate {
    per_sec: f64,
    p99_ms: f64,
}

/// A stack that may send to one contact: (stack, chat id, bearer token).
async fn sending_stack(stack: Stack) -> anyhow::Result<(Stack, String, String)> {
    let contact = wazap_shared::wire::sim::UpsertContact {
        jid: person("972503330001"),
        lid: None,
        name: "Dana".into(),
    };
    let chat = stack
        .sim(wazap_shared::subjects::sim_op::UPSERT_CONTACT, &contact)
        .await?
        .ids
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no chat id"))?;
    let (_, token) = stack.sending_connection(SendMode::All, vec![]).await?;
    Ok((stack, chat, token))
}

/// One JSON-API send: `Ok(true)` accepted, `Ok(false)` answered otherwise, `Err` refused or cut.
async fn send(base: &str, token: &str, chat: &str, key: &str) -> anyhow::Result<bool> {
    let body = json!({"chat_id": chat, "request_id": key, "text": "bench: faults"});
    let (status, _, v): (u16, _, Value) = post_raw(
        &format!("{base}/api/send/message"),
        &[("authorization", &format!("Bearer {token}"))],
        serde_json::to_vec(&body)?,
    )
    .await?;
    anyhow::ensure!(status == 200, "HTTP {status}");
    Ok(v["state"] == "accepted")
}

/// Run the three measures.
pub(crate) async fn run() -> anyhow::Result<Faults> {
    let mut takeover_ms = Vec::new();
    for _ in 0..3 {
        takeover_ms.push(takeover().await?.as_secs_f64() * 1e3);
    }
    let pg_recovery_ms = pg_recovery().await?.as_secs_f64() * 1e3;
    let (before, during, retried) = rolling().await?;
    Ok(Faults {
        takeover_ms,
        pg_recovery_ms,
        before,
        during,
        retried,
    })
}

/// The lease's epoch.
async fn epoch(stack: &Stack) -> anyhow::Result<i64> {
    Ok(stack
        .pool
        .get()
        .await?
        .query_one(
            "select epoch from worker_lease where name = 'account:default'",
            &[],
        )
        .await?
        .get(0))
}

/// SIGKILL a holder process with a standby beside it: the time until a worker with the next
/// epoch answers.
async fn takeover() -> anyhow::Result<Duration> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    stack.stop_worker().await?;
    let before = epoch(&stack).await?;
    let mut holder = tokio::process::Command::new(std::env::current_exe()?)
        .env(WORKER_ROLE, "1")
        .envs(stack.worker_env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let held = serving_after(&stack, before).await?;
    let stop = CancellationToken::new();
    let standby = tokio::spawn(wazap_worker::run(stack.worker_config(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    holder.start_kill()?;
    let killed = Instant::now();
    holder.wait().await?;
    serving_after(&stack, held).await?;
    let took = killed.elapsed();
    stop.cancel();
    standby.await??;
    Ok(took)
}

/// Until the epoch passes `after` and a worker answers `ping`; the epoch.
async fn serving_after(stack: &Stack, after: i64) -> anyhow::Result<i64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = epoch(stack).await?;
        if now > after
            && stack
                .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                .await
                .is_ok()
        {
            return Ok(now);
        }
        anyhow::ensure!(Instant::now() < deadline, "no worker served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Crash Postgres under sends, start it again: the time from its start until a send is
/// accepted again.
async fn pg_recovery() -> anyhow::Result<Duration> {
    let pg = PgCluster::start().await?;
    let stack = Stack::start_on_server(&pg.url(), ConnectorKind::Sim).await?;
    let (stack, chat, token) = sending_stack(stack).await?;
    let gw = stack.gateway(&[]).await?;
    let base = gw.url("");
    for n in 0..20 {
        send(&base, &token, &chat, &format!("before-{n}")).await?;
    }
    pg.stop_immediate().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.start_again().await?;
    let started = Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        if let Ok(true) = send(&base, &token, &chat, &format!("after-{n}")).await {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "no send accepted within 60 s of Postgres starting"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    gw.stop().await?;
    Ok(took)
}

/// Two clients sending for 3 s through three gateways, then while each is replaced in turn.
async fn rolling() -> anyhow::Result<(Rate, Rate, usize)> {
    use std::sync::{Arc, Mutex};
    let (stack, chat, token) = sending_stack(Stack::start(ConnectorKind::Sim).await?).await?;
    let room = [("WAZAP_MCP_MAX_CONCURRENCY", "8")];
    let mut gateways = Vec::new();
    for _ in 0..3 {
        gateways.push(stack.gateway(&room).await?);
    }
    let rotation = Arc::new(Mutex::new(
        gateways.iter().map(|g| g.url("")).collect::<Vec<_>>(),
    ));
    // (when it finished, how long it took in ms, whether it was retried)
    let log: Arc<Mutex<Vec<(Instant, f64, bool)>>> = Arc::default();
    let stop = CancellationToken::new();
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let (rotation, log, stop, chat, token) = (
                rotation.clone(),
                log.clone(),
                stop.clone(),
                chat.clone(),
                token.clone(),
            );
            tokio::spawn(async move {
                let mut n = c;
                while !stop.is_cancelled() {
                    let key = format!("roll-{c}-{n}");
                    let started = Instant::now();
                    let mut retried = false;
                    loop {
                        let base = {
                            let r = rotation.lock().expect("rotation");
                            r[n % r.len()].clone()
                        };
                        if send(&base, &token, &chat, &key).await.is_ok() {
                            break;
                        }
                        retried = true;
                        n += 1;
                    }
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    log.lock().expect("log").push((Instant::now(), ms, retried));
                    n += 2;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rolling_from = Instant::now();
    for slot in &mut gateways {
        let fresh = stack.gateway(&room).await?;
        let old = std::mem::replace(slot, fresh);
        rotation.lock().expect("rotation").push(slot.url(""));
        let old_url = old.url("");
        let stopping = tokio::spawn(old.stop());
        // A proxy's health check notices a second later.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        rotation.lock().expect("rotation").retain(|u| *u != old_url);
        stopping.await??;
    }
    let rolling_to = Instant::now();
    stop.cancel();
    for c in clients {
        c.await?;
    }
    let log = log.lock().expect("log").clone();
    let rate = |from: Instant, to: Instant| {
        let mut ms: Vec<f64> = log
            .iter()
            .filter(|(at, _, _)| *at >= from && *at < to)
            .map(|(_, ms, _)| *ms)
            .collect();
        ms.sort_by(f64::total_cmp);
        let p99 = ms
            .get((ms.len() * 99 / 100).min(ms.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN);
        Rate {
            per_sec: ms.len() as f64 / (to - from).as_secs_f64(),
            p99_ms: p99,
        }
    };
    let started = log.first().map_or(rolling_from, |(at, _, _)| *at);
    let retried = log.iter().filter(|(_, _, r)| *r).count();
    Ok((
        rate(started, rolling_from),
        rate(rolling_from, rolling_to),
        retried,
    ))
}

impl Faults {
    /// The table.
    pub(crate) fn print(&self) {
        let takeovers: Vec<String> = self
            .takeover_ms
            .iter()
            .map(|ms| format!("{:.0}", ms))
            .collect();
        println!("\n| fault | figure |\n| --- | --- |");
        println!(
            "| standby takes over a SIGKILLed worker (3 rounds) | {} ms |",
            takeovers.join(", ")
        );
        println!(
            "| Postgres `stop -m immediate`, started again → a send accepted | {:.0} ms after the start |",
            self.pg_recovery_ms
        );
        println!(
            "| sends through 3 gateways, 2 clients (before) | {:.0}/s, p99 {:.1} ms |",
            self.before.per_sec, self.before.p99_ms
        );
        println!(
            "| the same during a rolling restart (retries counted in) | {:.0}/s, p99 {:.1} ms, {} calls retried |",
            self.during.per_sec, self.during.p99_ms, self.retried
        );
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "takeover_ms": self.takeover_ms,
            "pg_recovery_ms": self.pg_recovery_ms,
            "rolling": {
                "before": {"per_sec": self.before.per_sec, "p99_ms": self.before.p99_ms},
                "during": {"per_sec": self.during.per_sec, "p99_ms": self.during.p99_ms},
                "retried": self.retried,
            },
        })
    }
}
