//! Phase 2: tools end to end through `/mcp` with an MCP client at concurrency 2, and the report.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_tests::Mcp;

use crate::args::Args;
use crate::ingest::IngestFigures;

/// Latency figures of one measured call.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    pub(crate) name: String,
    pub(crate) calls: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) per_sec: f64,
    pub(crate) budget: &'static str,
}

/// Everything measured in one run.
pub(crate) struct Report {
    args: Args,
    ingest: IngestFigures,
    latencies: Vec<Latency>,
}

impl Report {
    /// A report for `args` with the ingest figures.
    pub(crate) fn new(args: &Args, ingest: IngestFigures) -> Self {
        Self {
            args: args.clone(),
            ingest,
            latencies: Vec::new(),
        }
    }

    /// Print the table on stdout.
    pub(crate) fn print(&self) {
        let i = &self.ingest;
        println!(
            "\nwazap-bench — {} messages over {} chats",
            i.stored, i.chats
        );
        println!("| measure | calls | p50 ms | p99 ms | max ms | per s | budget (DESIGN §11) |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        println!(
            "| history ingest (batch path, all indexes) | {} | | | | {:.0} | ≥ 50,000 msg/s |",
            i.offered,
            i.offered as f64 / i.seconds
        );
        println!(
            "| database after ingest (`pg_database_size`, vacuumed) | {} messages | | | | | {:.0} bytes/message, {:.1} MiB |",
            i.messages,
            i.db_bytes as f64 / i.messages.max(1) as f64,
            i.db_bytes as f64 / 1_048_576.0
        );
        for l in &self.latencies {
            println!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {} |",
                l.name, l.calls, l.p50_ms, l.p99_ms, l.max_ms, l.per_sec, l.budget
            );
        }
    }

    /// Add a measured row under `name` with its `budget`.
    pub(crate) fn push(&mut self, name: &str, budget: &'static str, l: Latency) {
        self.latencies.push(Latency {
            name: name.into(),
            budget,
            ..l
        });
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        let i = &self.ingest;
        let source = match (&self.args.jsonl, self.args.phone) {
            (Some(path), _) => path.clone(),
            (None, true) => "phone".into(),
            (None, false) => "synthetic".into(),
        };
        let phone = i.phone.as_ref().map(|p| {
            let s = &p.summary;
            json!({"contacts": s.contacts, "groups": s.groups,
                   "busiest_chat_messages": s.busy.1, "quiet_chat_messages": s.quiet.1,
                   "busiest_share": s.busy.1 as f64 / i.offered as f64})
        });
        json!({
            "dataset": {"source": source,
                        "messages": i.stored, "offered": i.offered, "chats": i.chats,
                        "phone": phone},
            "database": {"bytes": i.db_bytes, "messages": i.messages,
                         "bytes_per_message": i.db_bytes as f64 / i.messages.max(1) as f64},
            "ingest": {"seconds": i.seconds, "messages_per_second": i.offered as f64 / i.seconds},
            "latency": self.latencies.iter().map(|l| json!({
                "name": l.name, "calls": l.calls, "p50_ms": l.p50_ms, "p99_ms": l.p99_ms,
                "max_ms": l.max_ms, "per_second": l.per_sec, "budget": l.budget,
            })).collect::<Vec<_>>(),
        })
    }
}

/// One end-to-end call a phase measures: the tool, a label for it, its arguments. Each phase
/// hands out its list, so the `plans` phase measures the same calls ([`crate::plans`]).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) tool: &'static str,
    pub(crate) label: String,
    pub(crate) args: Value,
}

/// The read cases of `report`'s archive: each call, its budget, and whether rmcp's client is
/// measured beside the minimal one.
fn read_cases(report: &Report) -> Vec<(Call, &'static str, bool)> {
    let busy = report.ingest.busy_chat_id.clone();
    let mut cases = vec![
        (
            Call {
                tool: "read_messages",
                label: "read_messages (50 latest, busy chat)".into(),
                args: json!({"chat_id": busy, "limit": 50}),
            },
            "p50 ≤ 1.5 ms, p99 ≤ 5 ms",
            true,
        ),
        (
            Call {
                tool: "list_chats",
                label: "list_chats (50)".into(),
                args: json!({"limit": 50}),
            },
            "p50 ≤ 2 ms, p99 ≤ 6 ms",
            true,
        ),
    ];
    // The phone shape: a page further back in the busiest chat, and both pages of a quiet one
    // (issue 29 item 2), with the minimal client.
    if let Some(p) = &report.ingest.phone {
        let (busy_n, quiet_n) = (p.summary.busy.1, p.summary.quiet.1);
        let pages = [
            (
                format!("read_messages (50 before the middle, busiest chat, {busy_n} messages)"),
                json!({"chat_id": busy, "limit": 50, "before": p.busy_before}),
            ),
            (
                format!("read_messages (50 latest, quiet chat, {quiet_n} messages)"),
                json!({"chat_id": p.quiet_chat_id, "limit": 50}),
            ),
            (
                format!("read_messages (50 before the middle, quiet chat, {quiet_n} messages)"),
                json!({"chat_id": p.quiet_chat_id, "limit": 50, "before": p.quiet_before}),
            ),
        ];
        for (label, args) in pages {
            let call = Call {
                tool: "read_messages",
                label,
                args,
            };
            cases.push((call, "p50 ≤ 3 ms, p99 ≤ 10 ms (issue 29)", false));
        }
    }
    cases
}

/// The calls the `reads` phase measures (those of [`run_reads`]).
pub(crate) fn read_calls(report: &Report) -> Vec<Call> {
    read_cases(report).into_iter().map(|(c, ..)| c).collect()
}

/// Measure the read tools.
pub(crate) async fn run_reads(
    url: &str,
    token: &str,
    args: &Args,
    report: &mut Report,
) -> anyhow::Result<()> {
    for (call, budget, with_rmcp) in read_cases(report) {
        let clients: &[(Client, &str)] = if with_rmcp {
            &[
                (Client::Raw, "minimal client"),
                (Client::Rmcp, "rmcp client"),
            ]
        } else {
            &[(Client::Raw, "minimal client")]
        };
        for &(client, how) in clients {
            let l = measure_with(url, token, call.tool, &call.args, args.requests, client).await?;
            report.latencies.push(Latency {
                name: format!("{}, {how}", call.label),
                budget,
                ..l
            });
        }
    }
    Ok(())
}

/// Measure what the gateway alone costs per request (no worker involved): `tools/list`
/// (always rmcp's), and a `tools/call` the gateway refuses before NATS on the direct route and
/// forced through rmcp, to show what the HTTP and MCP layers cost on their own.
pub(crate) async fn run_gateway_only(
    url: &str,
    token: &str,
    args: &Args,
    report: &mut Report,
) -> anyhow::Result<()> {
    let rows: [(&str, RawCall); 3] = [
        (
            "tools/list, gateway only (HTTP + auth + rmcp, no NATS)",
            RawCall::ListTools,
        ),
        (
            "tools/call refused, gateway only (HTTP + auth + direct route, no NATS)",
            RawCall::Refused { via_rmcp: false },
        ),
        (
            "tools/call refused, gateway only (HTTP + auth + rmcp, no NATS)",
            RawCall::Refused { via_rmcp: true },
        ),
    ];
    for (name, call) in rows {
        let l = measure_raw(url, token, args.requests, call).await?;
        report.latencies.push(Latency {
            name: name.into(),
            budget: "(for attribution)",
            ..l
        });
    }
    Ok(())
}

/// A gateway-only request of [`run_gateway_only`].
#[derive(Debug, Clone, Copy)]
enum RawCall {
    ListTools,
    Refused { via_rmcp: bool },
}

/// One gateway-only request.
async fn raw_once(c: &crate::raw_mcp::RawMcp, call: RawCall) -> anyhow::Result<()> {
    match call {
        RawCall::ListTools => c.list_tools().await,
        RawCall::Refused { via_rmcp } => c.refused_call("list_chats", via_rmcp).await,
    }
}

/// Send `call` `n` times from two minimal clients at once (after a 5% warm-up) and summarise.
async fn measure_raw(url: &str, token: &str, n: usize, call: RawCall) -> anyhow::Result<Latency> {
    let clients = [
        crate::raw_mcp::RawMcp::new(url, token)?,
        crate::raw_mcp::RawMcp::new(url, token)?,
    ];
    for c in &clients {
        for _ in 0..(n / 20).max(5) {
            raw_once(c, call).await?;
        }
    }
    let started = Instant::now();
    let runs = clients.iter().map(|c| async move {
        let mut times = Vec::with_capacity(n / 2);
        for _ in 0..n / 2 {
            let t = Instant::now();
            raw_once(c, call).await?;
            times.push(t.elapsed());
        }
        Ok::<_, anyhow::Error>(times)
    });
    let mut times: Vec<Duration> = Vec::new();
    for t in futures::future::try_join_all(runs).await? {
        times.extend(t);
    }
    Ok(summarise(times, started.elapsed().as_secs_f64()))
}

/// Measure `read_messages` as the worker alone answers it (NATS request/reply, no HTTP or MCP),
/// to show how the end-to-end time divides between the gateway and the worker.
pub(crate) async fn run_rpc(
    stack: &wazap_tests::Stack,
    connection: &str,
    token: &str,
    args: &Args,
    report: &mut Report,
) -> anyhow::Result<()> {
    use wazap_shared::bus;
    use wazap_shared::grant::VerifiedGrant;
    use wazap_shared::wire::read::{ReadMessages, ReadMessagesRequest};
    let grant = VerifiedGrant {
        connection_id: connection.to_owned(),
        revision: 0,
        loopback: true,
        token: token.to_owned(),
    };
    let req = ReadMessagesRequest {
        chat_id: report.ingest.busy_chat_id.clone(),
        limit: Some(50),
        ..Default::default()
    };
    let one = || bus::call::<ReadMessages>(&stack.nats, &stack.subjects, Some(&grant), &req, None);
    for _ in 0..(args.requests / 10).max(10) {
        one().await?;
    }
    let started = Instant::now();
    let runs = (0..2).map(|_| async {
        let mut times = Vec::with_capacity(args.requests / 2);
        for _ in 0..args.requests / 2 {
            let t = Instant::now();
            one().await?;
            times.push(t.elapsed());
        }
        Ok::<_, wazap_shared::RpcError>(times)
    });
    let mut times: Vec<Duration> = Vec::new();
    for t in futures::future::try_join_all(runs).await? {
        times.extend(t);
    }
    let l = summarise(times, started.elapsed().as_secs_f64());
    report.latencies.push(Latency {
        name: "read_messages, worker only (NATS RPC, no HTTP/MCP)".into(),
        budget: "(for attribution)",
        ..l
    });
    Ok(())
}

/// Call `tool` `n` times from two rmcp clients at once (after a 10% warm-up) and summarise.
pub(crate) async fn measure(
    url: &str,
    token: &str,
    tool: &str,
    call_args: &Value,
    n: usize,
) -> anyhow::Result<Latency> {
    measure_with(url, token, tool, call_args, n, Client::Rmcp).await
}

/// Call `tool` `n` times from two clients of kind `client` at once (after a 10% warm-up) and
/// summarise.
pub(crate) async fn measure_with(
    url: &str,
    token: &str,
    tool: &str,
    call_args: &Value,
    n: usize,
    client: Client,
) -> anyhow::Result<Latency> {
    let clients = [
        Caller::connect(client, url, token).await?,
        Caller::connect(client, url, token).await?,
    ];
    for c in &clients {
        for _ in 0..(n / 20).max(5) {
            c.call(tool, call_args).await?;
        }
    }
    let started = Instant::now();
    let runs = clients.iter().map(|c| async move {
        let mut times = Vec::with_capacity(n / 2);
        for _ in 0..n / 2 {
            let t = Instant::now();
            c.call(tool, call_args).await?;
            times.push(t.elapsed());
        }
        Ok::<_, anyhow::Error>(times)
    });
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    for t in futures::future::try_join_all(runs).await? {
        times.extend(t);
    }
    let wall = started.elapsed().as_secs_f64();
    for c in clients {
        c.close().await;
    }
    Ok(Latency {
        name: tool.into(),
        ..summarise(times, wall)
    })
}

/// Which MCP client drives a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    /// rmcp's Streamable HTTP client (what an agent framework would use).
    Rmcp,
    /// A minimal JSON-RPC poster: the server path without a client library's overhead.
    Raw,
}

/// A connected client of either kind.
enum Caller {
    Rmcp(Mcp),
    Raw(crate::raw_mcp::RawMcp),
}

impl Caller {
    async fn connect(client: Client, url: &str, token: &str) -> anyhow::Result<Self> {
        Ok(match client {
            Client::Rmcp => Self::Rmcp(Mcp::connect(url, token).await?),
            Client::Raw => Self::Raw(crate::raw_mcp::RawMcp::new(url, token)?),
        })
    }

    async fn call(&self, tool: &str, args: &Value) -> anyhow::Result<()> {
        match self {
            Self::Rmcp(c) => {
                let r = c.call(tool, args.clone()).await?;
                anyhow::ensure!(!r.is_error, "{tool} failed: {}", r.text);
                Ok(())
            }
            Self::Raw(c) => c.call(tool, args).await,
        }
    }

    async fn close(self) {
        if let Self::Rmcp(c) = self {
            c.close().await;
        }
    }
}

/// Percentiles of `times` over `wall` seconds.
fn summarise(mut times: Vec<Duration>, wall: f64) -> Latency {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pick = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
    Latency {
        name: String::new(),
        calls: times.len(),
        p50_ms: pick(0.50),
        p99_ms: pick(0.99),
        max_ms: ms(*times.last().expect("calls")),
        per_sec: times.len() as f64 / wall,
        budget: "",
    }
}
