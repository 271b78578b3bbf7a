//! Phase 4: `send_message` with an instant ack (the sim acknowledges at once and archives the
//! echo), journal durable before every answer: end to end through `/mcp` from two MCP clients at
//! once, and the worker alone over NATS for attribution. Every call has its own `request_id`,
//! so each one reserves, transmits and records a new journal row.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_shared::bus;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::{SendMessage, SendMessageRequest, SendState};
use wazap_tests::{Mcp, Stack};
use wazap_worker::grants::{PermissionEdit, set_send_permission};

/// The DESIGN §11 budget.
const BUDGET: &str = "p50 ≤ 3 ms, p99 ≤ 10 ms";

/// One measured way of sending.
#[derive(Debug, Clone)]
struct Row {
    name: &'static str,
    calls: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    per_sec: f64,
}

/// The send figures.
pub(crate) struct SendFigures {
    rows: Vec<Row>,
}

/// Allow `connection` to send everywhere, then measure `requests` sends each way into `chat`.
pub(crate) async fn run(
    stack: &Stack,
    url: &str,
    token: &str,
    connection: &str,
    chat: &str,
    requests: usize,
) -> anyhow::Result<SendFigures> {
    set_send_permission(
        &stack.pool,
        PermissionEdit {
            id: connection.to_owned(),
            revision: None,
            mode: SendMode::All,
            chats: vec![],
            expected_send_revision: None,
        },
    )
    .await?;
    let clients = [
        Mcp::connect(url, token).await?,
        Mcp::connect(url, token).await?,
    ];
    let warm = (requests / 10).max(10);
    let mcp_call = |c: usize, key: String| {
        let client = &clients[c];
        async move {
            let r = client
                .call(
                    "send_message",
                    json!({"chat_id": chat, "request_id": key, "text": "bench: on my way"}),
                )
                .await?;
            anyhow::ensure!(!r.is_error, "send_message failed: {}", r.text);
            anyhow::ensure!(
                r.structured.as_ref().and_then(|s| s["state"].as_str()) == Some("accepted"),
                "send_message was not accepted: {}",
                r.text
            );
            Ok(())
        }
    };
    let e2e = measure(
        "send_message through /mcp (instant ack)",
        requests,
        warm,
        |c, i| mcp_call(c, format!("bench-mcp-{c}-{i}")),
    )
    .await?;
    for c in clients {
        c.close().await;
    }

    let grant = VerifiedGrant {
        connection_id: connection.to_owned(),
        revision: 0,
        loopback: true,
        token: token.to_owned(),
    };
    let rpc_call = |c: usize, i: usize| {
        let req = SendMessageRequest {
            chat_id: chat.to_owned(),
            request_id: format!("bench-rpc-{c}-{i}"),
            text: "bench: on my way".into(),
        };
        let grant = grant.clone();
        async move {
            let r =
                bus::call::<SendMessage>(&stack.nats, &stack.subjects, Some(&grant), &req, None)
                    .await?;
            anyhow::ensure!(r.state == SendState::Accepted, "not accepted: {r:?}");
            Ok(())
        }
    };
    let rpc = measure(
        "send_message, worker only (NATS RPC)",
        requests,
        warm,
        rpc_call,
    )
    .await?;
    Ok(SendFigures {
        rows: vec![e2e, rpc],
    })
}

/// Two callers at once, each making `n / 2` calls after `warm / 2` unmeasured ones.
async fn measure<F, Fut>(name: &'static str, n: usize, warm: usize, call: F) -> anyhow::Result<Row>
where
    F: Fn(usize, usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let per = n / 2;
    let call = &call;
    for c in 0..2 {
        for i in 0..warm / 2 {
            call(c, per + i).await?;
        }
    }
    let started = Instant::now();
    let runs = (0..2).map(|c| async move {
        let mut times = Vec::with_capacity(per);
        for i in 0..per {
            let t = Instant::now();
            call(c, i).await?;
            times.push(t.elapsed());
        }
        anyhow::Ok(times)
    });
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    for t in futures::future::try_join_all(runs).await? {
        times.extend(t);
    }
    let wall = started.elapsed().as_secs_f64();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pick = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
    Ok(Row {
        name,
        calls: times.len(),
        p50_ms: pick(0.50),
        p99_ms: pick(0.99),
        max_ms: ms(*times.last().ok_or_else(|| anyhow::anyhow!("no calls"))?),
        per_sec: times.len() as f64 / wall,
    })
}

impl SendFigures {
    /// Print the rows in the report's table format.
    pub(crate) fn print(&self) {
        println!(
            "\n| send (concurrency 2) | calls | p50 ms | p99 ms | max ms | sends/s | budget |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for r in &self.rows {
            println!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {BUDGET} |",
                r.name, r.calls, r.p50_ms, r.p99_ms, r.max_ms, r.per_sec
            );
        }
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!(
            self.rows
                .iter()
                .map(|r| json!({
                    "name": r.name, "calls": r.calls, "p50_ms": r.p50_ms, "p99_ms": r.p99_ms,
                    "max_ms": r.max_ms, "per_second": r.per_sec, "budget": BUDGET,
                }))
                .collect::<Vec<_>>()
        )
    }
}
