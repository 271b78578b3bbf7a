//! Phase 3: `wait_for_messages`. (1) Inject → wake latency: one agent waits through `/mcp` on
//! the in-process gateway; the clock runs from the sim `inject_message` request to the waiting
//! call's answer. (2) 1,000 concurrent waits on a `wazap-gateway` child process (the release
//! binary beside this one, concurrency limit raised to 1,100), with its RSS from
//! `/proc/<pid>/status` while they wait, and how long all of them take to wake on one message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Mcp, Stack, post_raw, tools_call_body};

/// Measured wake-ups (after [`WARMUP`] unmeasured ones).
const SAMPLES: usize = 500;
/// Unmeasured wake-ups first.
const WARMUP: usize = 50;
/// Concurrent waits on the child gateway.
const CONCURRENT: usize = 1_000;
/// How long the waits are given to park before the RSS is read.
const PARK: Duration = Duration::from_secs(4);

/// What this phase measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct WaitFigures {
    /// Inject → wake, milliseconds: p50, p99, max.
    wake_ms: Option<[f64; 3]>,
    /// Inject → the sim's acknowledgement (the message committed), for attribution.
    ack_ms: Option<[f64; 3]>,
    /// The writer's live commit alone, in process (measured in the ingest phase).
    commit_ms: Option<[f64; 3]>,
    /// Concurrent waits that answered with the message.
    woke: usize,
    /// All-waiters wake time from one inject, milliseconds: p50, p99, max.
    fanout_ms: Option<[f64; 3]>,
    /// The child gateway's RSS (KiB): idle, while the waits are parked, and its peak.
    rss_kib: Option<[u64; 3]>,
    /// Why part of the phase was skipped.
    note: Option<String>,
}

/// Run the phase on `stack` with the in-process gateway at `url` and a connection `token`.
/// `commit_ms` is the ingest phase's measure of the writer's live commit.
pub(crate) async fn run(
    stack: &Stack,
    url: &str,
    token: &str,
    commit_ms: Option<[f64; 3]>,
) -> anyhow::Result<WaitFigures> {
    let (wake, ack) = wake_latency(stack, url, token).await?;
    let mut figures = WaitFigures {
        wake_ms: Some(wake),
        ack_ms: Some(ack),
        commit_ms,
        ..WaitFigures::default()
    };
    let exe = std::env::current_exe()?.with_file_name("wazap-gateway");
    if !exe.exists() {
        figures.note = Some(format!(
            "concurrent waits skipped: {} not built (cargo build --release -p wazap-gateway)",
            exe.display()
        ));
        return Ok(figures);
    }
    concurrent(stack, &exe, token, &mut figures).await?;
    Ok(figures)
}

/// Sequential wake-ups of one waiting agent: inject → wake, and inject → committed.
async fn wake_latency(
    stack: &Stack,
    url: &str,
    token: &str,
) -> anyhow::Result<([f64; 3], [f64; 3])> {
    let mcp = Arc::new(Mcp::connect(url, token).await?);
    let first = mcp
        .call("wait_for_messages", json!({"timeout_seconds": 1}))
        .await?;
    let mut cursor = first.ok()["cursor"].clone();
    let mut times = Vec::with_capacity(SAMPLES);
    let mut acks = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES + WARMUP {
        let waiter = {
            let (mcp, cursor) = (Arc::clone(&mcp), cursor.clone());
            tokio::spawn(async move {
                mcp.call(
                    "wait_for_messages",
                    json!({"cursor": cursor, "timeout_seconds": 10}),
                )
                .await
            })
        };
        // Let the call reach its wait (first poll answered, parked on the event).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        stack
            .inject(text(
                &person(&format!("97250990{:04}", i % 100)),
                &format!("W{i}"),
                minutes_ago(0),
                "wake",
            ))
            .await?;
        let acked = started.elapsed();
        let result = waiter.await??;
        let took = started.elapsed();
        let out = result.ok();
        anyhow::ensure!(out["count"] == 1, "one message per wake, got {out}");
        cursor = out["cursor"].clone();
        if i >= WARMUP {
            times.push(took);
            acks.push(acked);
        }
    }
    Ok((percentiles(times), percentiles(acks)))
}

/// 1,000 waits parked on a child gateway, then one message wakes them all.
async fn concurrent(
    stack: &Stack,
    exe: &std::path::Path,
    token: &str,
    figures: &mut WaitFigures,
) -> anyhow::Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut child = std::process::Command::new(exe)
        .env("WAZAP_NATS_URL", wazap_tests::nats_url())
        .env("WAZAP_NATS_PREFIX", &stack.prefix)
        .env("WAZAP_MCP_ADDR", format!("127.0.0.1:{port}"))
        .env("WAZAP_MCP_MAX_CONCURRENCY", "1100")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let result = concurrent_on(stack, child.id(), port, token, figures).await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn concurrent_on(
    stack: &Stack,
    pid: u32,
    port: u16,
    token: &str,
    figures: &mut WaitFigures,
) -> anyhow::Result<()> {
    let url: Arc<str> = format!("http://127.0.0.1:{port}/mcp").into();
    let auth: Arc<str> = format!("Bearer {token}").into();
    let call = move |args: Value| {
        let (url, auth) = (Arc::clone(&url), Arc::clone(&auth));
        async move {
            post_raw(
                &url,
                &[("authorization", &auth)],
                tools_call_body("wait_for_messages", args),
            )
            .await
        }
    };
    // Ready, and a cursor for "now".
    let started = Instant::now();
    let cursor = loop {
        if let Ok((200, _, body)) = call(json!({"timeout_seconds": 1})).await
            && let Some(c) = body["result"]["structuredContent"]["cursor"].as_str()
        {
            break c.to_owned();
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(20),
            "the child gateway did not answer"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let idle = wazap_tests::status_kib(pid, "VmRSS:")?;
    let woke_at = Arc::new(std::sync::Mutex::new(Vec::with_capacity(CONCURRENT)));
    let mut waits = tokio::task::JoinSet::new();
    for _ in 0..CONCURRENT {
        let (call, cursor, woke_at) = (call.clone(), cursor.clone(), Arc::clone(&woke_at));
        waits.spawn(async move {
            let (status, _, body) = call(json!({"cursor": cursor, "timeout_seconds": 50})).await?;
            woke_at
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Instant::now());
            anyhow::Ok(status == 200 && body["result"]["structuredContent"]["count"] == 1)
        });
    }
    tokio::time::sleep(PARK).await;
    let parked = wazap_tests::status_kib(pid, "VmRSS:")?;
    let injected = Instant::now();
    stack
        .inject(text(
            &person("972509900999"),
            "FANOUT",
            minutes_ago(0),
            "everyone",
        ))
        .await?;
    let mut woke = 0;
    while let Some(r) = waits.join_next().await {
        if r?? {
            woke += 1;
        }
    }
    let peak = wazap_tests::status_kib(pid, "VmHWM:")?;
    let times: Vec<Duration> = woke_at
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|t| t.saturating_duration_since(injected))
        .collect();
    figures.woke = woke;
    figures.fanout_ms = Some(percentiles(times));
    figures.rss_kib = Some([idle, parked, peak]);
    Ok(())
}

/// p50, p99 and max in milliseconds.
pub(crate) fn percentiles(mut times: Vec<Duration>) -> [f64; 3] {
    if times.is_empty() {
        return [0.0; 3];
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pick = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
    [pick(0.50), pick(0.99), ms(times[times.len() - 1])]
}

impl WaitFigures {
    /// Print this phase's rows on stdout.
    pub(crate) fn print(&self) {
        println!("\n| wait_for_messages | p50 ms | p99 ms | max ms | budget (DESIGN §11) |");
        println!("| --- | --- | --- | --- | --- |");
        if let Some([p50, p99, max]) = self.wake_ms {
            println!(
                "| inject → wake, one waiter ({SAMPLES} wakes) | {p50:.2} | {p99:.2} | {max:.2} | p50 ≤ 3, p99 ≤ 10 |"
            );
        }
        if let Some([p50, p99, max]) = self.ack_ms {
            println!(
                "| (attribution) inject → sim acknowledged, i.e. committed | {p50:.2} | {p99:.2} | {max:.2} | |"
            );
        }
        if let Some([p50, p99, max]) = self.commit_ms {
            println!(
                "| (attribution) the writer's live commit alone, in process | {p50:.2} | {p99:.2} | {max:.2} | |"
            );
        }
        if let Some([p50, p99, max]) = self.fanout_ms {
            println!(
                "| inject → wake, {} of {CONCURRENT} concurrent waiters (child gateway) | {p50:.2} | {p99:.2} | {max:.2} | |",
                self.woke
            );
        }
        if let Some([idle, parked, peak]) = self.rss_kib {
            println!(
                "\ngateway RSS with {CONCURRENT} waits parked: {:.1} MiB (idle {:.1} MiB, peak {:.1} MiB; budget ≤ 40 MiB)",
                parked as f64 / 1024.0,
                idle as f64 / 1024.0,
                peak as f64 / 1024.0
            );
        }
        if let Some(note) = &self.note {
            println!("\n{note}");
        }
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        let trio = |t: Option<[f64; 3]>| {
            t.map(|[p50, p99, max]| json!({"p50_ms": p50, "p99_ms": p99, "max_ms": max}))
        };
        json!({
            "wake": trio(self.wake_ms).map(|mut v| { v["samples"] = json!(SAMPLES); v }),
            "inject_acknowledged": trio(self.ack_ms),
            "live_commit": trio(self.commit_ms),
            "concurrent": {
                "waits": CONCURRENT,
                "woke": self.woke,
                "wake_all": trio(self.fanout_ms),
                "gateway_rss_kib": self.rss_kib.map(|[idle, parked, peak]| json!({"idle": idle, "parked": parked, "peak": peak})),
            },
            "note": self.note,
        })
    }
}
