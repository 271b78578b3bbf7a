//! The media storm of #26 item 4: twenty 8 MiB media sends at once from four credentials, on
//! `POST /api/send/media` or as `/mcp` calls of `send_media`, against a gateway (a
//! [`ChildGateway`](crate::ChildGateway), so its RSS is its own). Used by the e2e test
//! `media_storm` (which asserts on it) and by `wazap-bench --only media` (which measures it).
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

use crate::{Stack, random_hex};

/// Sends at once.
pub const SENDS: usize = 20;
/// Credentials the sends take turns with.
pub const CREDENTIALS: usize = 4;
/// Each send's media, in bytes.
pub const MEDIA_BYTES: usize = 8 * 1024 * 1024;

/// Which door the sends take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /api/send/media`.
    Api,
    /// `tools/call` of `send_media` on `/mcp` (the direct route: protocol headers, no `_meta`).
    Mcp,
}

impl Route {
    /// Both doors.
    pub const ALL: [Route; 2] = [Route::Api, Route::Mcp];

    /// The door as the request names it.
    pub fn door(self) -> &'static str {
        match self {
            Route::Api => "POST /api/send/media",
            Route::Mcp => "/mcp tools/call send_media",
        }
    }

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
    pub fn outcome(self, status: Option<u16>, body: &Value) -> Option<bool> {
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

/// One send of the storm, built before it.
pub struct Request {
    token: String,
    path: &'static str,
    headers: &'static str,
    body: Vec<u8>,
}

/// The storm's [`SENDS`] requests on `route` to `chat`, taking turns with `tokens`: each its
/// own bytes (its own object), a PDF of [`MEDIA_BYTES`], request ids `<tag>-<i>`.
pub fn requests(route: Route, chat: &str, tokens: &[String], tag: &str) -> Vec<Request> {
    (0..SENDS)
        .map(|i| {
            let mut doc = format!("%PDF-1.7\n% {}\n", random_hex(8)).into_bytes();
            doc.resize(MEDIA_BYTES, b'x');
            let args = json!({"chat_id": chat, "request_id": format!("{tag}-{i}"),
                "kind": "document", "mime_type": "application/pdf", "filename": "big.pdf",
                "data_base64": base64::engine::general_purpose::STANDARD.encode(&doc)});
            let (path, headers, body) = route.request(i, args);
            Request {
                token: tokens[i % tokens.len()].clone(),
                path,
                headers,
                body,
            }
        })
        .collect()
}

/// How the storm's sends were answered.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Answered `accepted`.
    pub sent: usize,
    /// Answered `busy`.
    pub busy: usize,
    /// Anything else: the status (`None`: closed unanswered) and the JSON body.
    pub other: Vec<(Option<u16>, Value)>,
}

/// Write every request at once to the gateway at `addr` (`127.0.0.1:<port>`) and count the
/// answers. An error only when a request could not be made at all (no connection, no answer
/// within 90 s).
pub async fn storm(addr: &str, route: Route, requests: Vec<Request>) -> anyhow::Result<Tally> {
    let mut storm = JoinSet::new();
    for r in requests {
        let addr = addr.to_owned();
        storm.spawn(async move { post(&addr, r.path, r.headers, &r.token, r.body).await });
    }
    let mut tally = Tally::default();
    while let Some(answer) = storm.join_next().await {
        let (status, body) = answer??;
        match route.outcome(status, &body) {
            Some(true) => tally.sent += 1,
            Some(false) => tally.busy += 1,
            None => tally.other.push((status, body)),
        }
    }
    Ok(tally)
}

/// Until the gateway at `addr` and a worker behind it answer (`/api/send/status` of an unknown
/// request with `token`: 404), at most 20 s.
pub async fn wait_answering(addr: &str, token: &str) -> anyhow::Result<()> {
    let ready_by = Instant::now() + Duration::from_secs(20);
    let probe = json!({"request_id": "probe"}).to_string().into_bytes();
    loop {
        let answered = post(addr, "/api/send/status", "", token, probe.clone()).await;
        // 404: the gateway and the worker both answer (no such request yet).
        if matches!(answered, Ok((Some(404), _))) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < ready_by,
            "the child gateway never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Until `stack`'s media bucket holds no object, at most `within`: the sent objects go with the
/// worker's delete (1 s after their send), and busy sends store nothing.
pub async fn bucket_empty(stack: &Stack, within: Duration) -> anyhow::Result<()> {
    let js = jetstream::new(stack.nats.clone());
    let store = js.get_object_store(stack.subjects.media_bucket()).await?;
    let empty_by = Instant::now() + within;
    loop {
        let mut live = 0;
        let mut list = store.list().await?;
        while let Some(info) = list.next().await {
            if !info?.deleted {
                live += 1;
            }
        }
        if live == 0 {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < empty_by, "{live} media objects stayed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// POST `body` to `path` with `token` (and `headers`, whole lines) on a raw connection, reading
/// the answer while the body is written: its status and JSON body. A write cut short by the
/// gateway's answer-and-close is not an error; `None` only when the connection closed with no
/// answer at all.
pub async fn post(
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
