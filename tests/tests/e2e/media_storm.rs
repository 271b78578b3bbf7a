//! Twenty 8 MiB media sends at once (#26 item 4), against the real `wazap-gateway` binary as a
//! child process (its RSS is its own) and a sim worker, once on `POST /api/send/media` and once
//! as `/mcp` calls of `send_media`: every send is answered `accepted` or `busy`, at least one goes out, the gateway's peak RSS grows by no more than one send's
//! worth ([`ONE_SEND_KIB`]; DESIGN §11's 40 MiB in all is printed: [`DESIGN_BOUND_KIB`]), and
//! the media bucket holds nothing once the sends are over (the worker deletes what it sent; a
//! busy send stored nothing).
//!
//! Each request is written on a raw socket while its answer is read: the gateway may answer
//! `busy` before reading a byte of the body and close the connection, so a client that only
//! reads once it has written ~11 MiB of base64 meets a broken pipe instead of the answer.

use std::time::{Duration, Instant};

use async_nats::jetstream;
use base64::Engine as _;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use wazap_shared::wire::grants::SendMode;
use wazap_tests::fixtures::person;
use wazap_tests::{Stack, random_hex, status_kib};
use wazap_worker::config::ConnectorKind;

use crate::edge::client::spawn_gateway;

/// DESIGN §11: the gateway within 40 MiB RSS under load. Not met by the debug binary the tests
/// run, by its size: it idles at about 30 MiB, 25 MiB of it the binary's own file-backed pages.
/// Printed on every run; what is asserted is [`ONE_SEND_KIB`].
const DESIGN_BOUND_KIB: u64 = 40 * 1024;
/// What is asserted: the storm costs no more than one send in flight above idle (the body
/// budget admits one 12 MiB body at a time, the rest are `busy` before their bodies are read).
/// One send holds its 11.2 MiB JSON body, whose base64 is decoded in place over it
/// (`http::api_send`), and little else: measured 13.1–13.3 MiB above idle (debug binary, peak
/// about 43.5 MiB); as `/mcp` calls (`mcp::direct`, the same decoding) 13.7 MiB. Before the
/// in-place decoding, which kept the body, a copy of the base64 and the decoded bytes, it was
/// 31.9 MiB (peak 64.5 MiB); a copy of either would pass 18 MiB (a copied base64 on `/mcp`:
/// 24.4 MiB).
const ONE_SEND_KIB: u64 = 18 * 1024;
const SENDS: usize = 20;
const CREDENTIALS: usize = 4;
const MEDIA_BYTES: usize = 8 * 1024 * 1024;

/// Which door the sends take.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `POST /api/send/media`.
    Api,
    /// `tools/call` of `send_media` on `/mcp` (the direct route: protocol headers, no `_meta`).
    Mcp,
}

impl Route {
    /// The path, the extra header lines and the body of send `i` with `args`.
    fn request(self, i: usize, args: Value) -> (&'static str, &'static str, Vec<u8>) {
        match self {
            Route::Api => ("/api/send/media", "", args.to_string().into_bytes()),
            Route::Mcp => {
                let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "send_media", "arguments": args}});
                (
                    "/mcp",
                    "Accept: application/json, text/event-stream\r\n\
                     MCP-Protocol-Version: 2025-11-25\r\n",
                    call.to_string().into_bytes(),
                )
            }
        }
    }

    /// An answer as `Some(true)` sent, `Some(false)` busy, `None` anything else. A 429 is
    /// `busy` here (the gateway has no rate limit); its body may be cut off by the reset that
    /// follows an answer given before the request's body was read.
    fn outcome(self, status: Option<u16>, body: &Value) -> Option<bool> {
        let busy = |code: &Value| code == "busy";
        match (self, status) {
            (_, Some(429)) => (body.is_null() || busy(&body["error"]["code"])).then_some(false),
            (Route::Api, Some(200)) => (body["state"] == "accepted").then_some(true),
            (Route::Mcp, Some(200)) => {
                let result = &body["result"];
                if result["isError"] == false {
                    (result["structuredContent"]["state"] == "accepted").then_some(true)
                } else {
                    let text = result["content"][0]["text"].as_str().unwrap_or("");
                    let error: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                    busy(&error["error"]["code"]).then_some(false)
                }
            }
            _ => None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_8_mib_sends_at_once_are_sent_or_busy_and_cost_one_send_of_memory()
-> anyhow::Result<()> {
    storm(Route::Api).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_storm_of_mcp_send_media_calls_costs_one_send_too() -> anyhow::Result<()> {
    storm(Route::Mcp).await
}

async fn storm(route: Route) -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = stack.contact(&person("972503334444"), None, "Dana").await?;
    let mut tokens = Vec::new();
    for _ in 0..CREDENTIALS {
        tokens.push(stack.sending_connection(SendMode::All, vec![]).await?.1);
    }

    let gateway = spawn_gateway(&stack)?;
    let (addr, pid) = (gateway.addr.clone(), gateway.pid);
    let ready_by = Instant::now() + Duration::from_secs(20);
    let probe = json!({"request_id": "probe"}).to_string().into_bytes();
    loop {
        let answered = post(&addr, "/api/send/status", "", &tokens[0], probe.clone()).await;
        // 404: the gateway and the worker both answer (no such request yet).
        if matches!(answered, Ok((Some(404), _))) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < ready_by,
            "the child gateway never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_kib = status_kib(pid, "VmRSS:")?;

    // Each send its own bytes (its own object), built before the storm.
    let requests: Vec<_> = (0..SENDS)
        .map(|i| {
            let mut doc = format!("%PDF-1.7\n% {}\n", random_hex(8)).into_bytes();
            doc.resize(MEDIA_BYTES, b'x');
            let args = json!({"chat_id": chat, "request_id": format!("storm-{i}"),
                "kind": "document", "mime_type": "application/pdf", "filename": "big.pdf",
                "data_base64": base64::engine::general_purpose::STANDARD.encode(&doc)});
            (tokens[i % CREDENTIALS].clone(), route.request(i, args))
        })
        .collect();
    let mut storm = JoinSet::new();
    for (token, (path, headers, body)) in requests {
        let addr = addr.clone();
        storm.spawn(async move { post(&addr, path, headers, &token, body).await });
    }
    let (mut sent, mut busy) = (0, 0);
    while let Some(answer) = storm.join_next().await {
        let (status, body) = answer??;
        match route.outcome(status, &body) {
            Some(true) => sent += 1,
            Some(false) => busy += 1,
            None => anyhow::bail!("a send was answered {status:?} {body}"),
        }
    }
    let peak_kib = status_kib(pid, "VmHWM:")?;
    eprintln!(
        "media storm ({route:?}): {sent} sent, {busy} busy; gateway RSS idle {idle_kib} KiB, peak {peak_kib} \
         KiB (DESIGN §11: {DESIGN_BOUND_KIB} KiB{})",
        if peak_kib <= DESIGN_BOUND_KIB {
            ", met"
        } else {
            ", NOT met"
        }
    );
    assert_eq!(sent + busy, SENDS);
    assert!(sent >= 1, "no send went out");
    assert!(
        peak_kib <= idle_kib + ONE_SEND_KIB,
        "the gateway's peak RSS was {peak_kib} KiB, idle {idle_kib} KiB: more than one send's \
         worth ({ONE_SEND_KIB} KiB)"
    );

    // Nothing stays in the bucket: the sent objects go with the worker's delete (1 s after
    // their send), and the busy sends stored nothing.
    let js = jetstream::new(stack.nats.clone());
    let store = js.get_object_store(stack.subjects.media_bucket()).await?;
    let empty_by = Instant::now() + Duration::from_secs(15);
    loop {
        let mut live = 0;
        let mut list = store.list().await?;
        while let Some(info) = list.next().await {
            if !info?.deleted {
                live += 1;
            }
        }
        if live == 0 {
            break;
        }
        anyhow::ensure!(Instant::now() < empty_by, "{live} media objects stayed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(gateway);
    Ok(())
}

/// POST `body` to `path` with `token` (and `headers`, whole lines) on a raw connection, reading the answer while the body is
/// written: its status and JSON body. A write cut short by the gateway's answer-and-close is not
/// an error; `None` only when the connection closed with no answer at all.
async fn post(
    addr: &str,
    path: &str,
    headers: &str,
    token: &str,
    body: Vec<u8>,
) -> anyhow::Result<(Option<u16>, Value)> {
    let stream = TcpStream::connect(addr).await?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n{headers}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        // Errors here are the gateway closing after an early answer.
        if write.write_all(head.as_bytes()).await.is_ok() {
            let _ = write.write_all(&body).await;
        }
        write
    });
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(90), read.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            Ok(_) => break,
            Err(_) => anyhow::bail!("no answer within 90 s"),
        }
    }
    writer.abort();
    let text = String::from_utf8_lossy(&got);
    let status = text
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok());
    let json = text
        .split_once("\r\n\r\n")
        .and_then(|(_, chunked)| serde_json::from_str(&dechunk(chunked)).ok())
        .unwrap_or(Value::Null);
    Ok((status, json))
}

/// A chunked body's content (the gateway's JSON answers are sent chunked); what is cut off
/// ends it.
fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        body.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    body
}
