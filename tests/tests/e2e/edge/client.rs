//! The edge test's clients and probes: the gateway binary and its `/proc` figures, raw HTTP/1.1
//! on sockets (half heads, bodies that never finish, trickles), and calls through `post_raw`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use wazap_tests::{Stack, post_raw, tools_call_body};

/// The declared length of every slow body: the send tools' 12 MiB limit.
pub(super) const SLOW_BODY: usize = 12 * 1024 * 1024;

pub(crate) use wazap_tests::ChildGateway;

/// Start [`ChildGateway`] from [`gateway_binary`] (it may not answer yet: each test polls it in
/// its own way).
pub(crate) fn spawn_gateway(stack: &Stack) -> anyhow::Result<ChildGateway> {
    ChildGateway::spawn(stack, &gateway_binary()?)
}

/// The `wazap-gateway` binary: `WAZAP_GATEWAY_BIN`, else the one beside this test's profile
/// directory (`target/<profile>/wazap-gateway`, which `cargo build -p wazap-gateway` and a
/// workspace test run build).
pub(crate) fn gateway_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("WAZAP_GATEWAY_BIN") {
        return Ok(bin.into());
    }
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| anyhow::anyhow!("no profile directory above the test binary"))?;
    let bin = profile_dir.join("wazap-gateway");
    anyhow::ensure!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p wazap-gateway) or set WAZAP_GATEWAY_BIN",
        bin.display()
    );
    Ok(bin)
}

/// Open descriptors of `pid`.
pub(super) fn open_fds(pid: u32) -> anyhow::Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// Send a request head (`Content-Length: SLOW_BODY`) and the first KiB of its body, then read
/// the answer's status line without sending more; `None` when the connection closed first.
pub(super) async fn status_before_body(
    addr: &str,
    auth: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let mut stream = TcpStream::connect(addr).await?;
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {SLOW_BODY}\r\n\r\n"
    );
    // One write, so the gateway reads the kilobyte with the head and closes with nothing unread
    // (no reset that could beat its answer to us).
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&[b' '; 1024]);
    stream.write_all(&bytes).await?;
    read_status(&mut stream).await
}

/// The status line of the answer on `stream`, or `None` if it closed without one.
pub(super) async fn read_status(stream: &mut TcpStream) -> anyhow::Result<Option<String>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    Ok(text.lines().next().map(str::to_owned))
}

/// A body from `auth` that declares [`SLOW_BODY`] bytes and, after a second (an immediate `busy`
/// is read by then), trickles 100 bytes every 100 ms (1 KB/s) until answered; its status line
/// (`None`: closed without one), and how long after the head it came.
pub(super) async fn trickle(
    addr: String,
    auth: String,
) -> anyhow::Result<(Option<String>, Duration)> {
    let mut stream = TcpStream::connect(&addr).await?;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {SLOW_BODY}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let started = Instant::now();
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        loop {
            if write.write_all(&[b' '; 100]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let status = loop {
        if let Some(line) = got
            .split(|&b| b == b'\r')
            .next()
            .filter(|_| got.contains(&b'\r'))
        {
            break Some(String::from_utf8_lossy(line).into_owned());
        }
        match tokio::time::timeout(Duration::from_secs(30), read.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break None,
        }
    };
    writer.abort();
    Ok((status, started.elapsed()))
}

/// What [`post_raw`] answers: status, headers, body.
pub(super) type Answer = anyhow::Result<(u16, reqwest::header::HeaderMap, serde_json::Value)>;

/// Two `wait_for_messages` of `auth` parked on the gateway, once a third call of `auth` is
/// `busy` (which, with nothing else of `auth` in flight, means both waits hold their permits).
/// A wait that raced the check for a permit and lost is started again.
pub(super) async fn park_share(url: &str, auth: &str) -> anyhow::Result<JoinSet<Answer>> {
    let mut parked = JoinSet::new();
    let share_by = Instant::now() + Duration::from_secs(10);
    loop {
        while parked.len() < 2 {
            let (url, auth) = (url.to_owned(), auth.to_owned());
            parked.spawn(async move {
                post_raw(
                    &url,
                    &[("authorization", &auth)],
                    tools_call_body("wait_for_messages", json!({"timeout_seconds": 50})),
                )
                .await
            });
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        while parked.try_join_next().is_some() {}
        anyhow::ensure!(
            Instant::now() < share_by,
            "the parked waits never held the share (a permit of this credential leaked?)"
        );
        if parked.len() < 2 {
            continue;
        }
        let (status, _, body) = read_messages(url.to_owned(), auth.to_owned()).await?;
        if status == 429 {
            assert_eq!(body["error"]["code"], "busy", "{body}");
            return Ok(parked);
        }
    }
}

/// `read_messages` of the one injected chat with `auth`: status, headers, body.
pub(super) async fn read_messages(url: String, auth: String) -> Answer {
    post_raw(
        &url,
        &[("authorization", &auth)],
        tools_call_body("read_messages", json!({"chat_id": "+972501230001"})),
    )
    .await
}

/// A token that looks like a grant but names a key nobody published (each a fresh `kid`, so
/// the gateway's refetch for unknown keys is asked too).
pub(super) fn foreign_token(i: usize) -> String {
    use base64::Engine as _;
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    format!(
        "{}.{}.{}",
        b64(json!({"alg": "EdDSA", "typ": "JWT", "kid": format!("stranger-{i}")})),
        b64(json!({"sub": "conn_stranger", "aud": "wazap", "exp": 4_000_000_000u64})),
        "c2lnbmF0dXJl"
    )
}
