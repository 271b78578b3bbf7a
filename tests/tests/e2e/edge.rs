//! An edge a stranger cannot exhaust (#26 item 3), against the real `wazap-gateway` binary as a
//! child process (its RSS and descriptors are its own): one credential parks its whole share of
//! the permits, then 50 connections send half a request head, 40 strangers start 12 MiB bodies
//! (no token or a bad one), 200 bad-token requests arrive at once, and another credential's
//! `read_messages` still answers within its 15 s deadline. The first credential's own slow bodies
//! get its share or `busy`, and those admitted are cut off (408) once they fall below the minimum
//! rate. Afterwards every connection is closed (the idle heads by the header timeout), every
//! permit and budget byte is back, and the gateway's peak RSS stayed under [`RSS_BOUND_KIB`].

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Stack, nats_url};
use wazap_tests::{post_raw, tools_call_body};
use wazap_worker::config::ConnectorKind;

/// The gateway's peak RSS (`VmHWM`) allowed through the storm: DESIGN §11's 40 MiB under load.
/// The test runs whichever binary the profile built (debug in `cargo nextest run`), and holds it
/// to the same bound: the debug binary peaked at about 34 MiB here (idle about 30 MiB), and
/// prints its figures on every run.
const RSS_BOUND_KIB: u64 = 40 * 1024;

/// The declared length of every slow body: the send tools' 12 MiB limit.
const SLOW_BODY: usize = 12 * 1024 * 1024;

/// The `wazap-gateway` binary: `WAZAP_GATEWAY_BIN`, else the one beside this test's profile
/// directory (`target/<profile>/wazap-gateway`, which `cargo build -p wazap-gateway` and a
/// workspace test run build).
fn gateway_binary() -> anyhow::Result<PathBuf> {
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

/// A `/proc/<pid>/status` field in KiB (`VmRSS:` or `VmHWM:`).
fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("{field} missing from /proc/{pid}/status"))
}

/// Open descriptors of `pid`.
fn open_fds(pid: u32) -> anyhow::Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// Send a request head (`Content-Length: SLOW_BODY`) and the first KiB of its body, then read
/// the answer's status line without sending more; `None` when the connection closed first.
async fn status_before_body(addr: &str, auth: Option<&str>) -> anyhow::Result<Option<String>> {
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
async fn read_status(stream: &mut TcpStream) -> anyhow::Result<Option<String>> {
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
async fn trickle(addr: String, auth: String) -> anyhow::Result<(Option<String>, Duration)> {
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

/// `read_messages` of the one injected chat with `auth`: status, headers, body.
async fn read_messages(
    url: String,
    auth: String,
) -> anyhow::Result<(u16, reqwest::header::HeaderMap, serde_json::Value)> {
    post_raw(
        &url,
        &[("authorization", &auth)],
        tools_call_body("read_messages", json!({"chat_id": "+972501230001"})),
    )
    .await
}

/// A token that looks like a grant but names a key nobody published (each a fresh `kid`, so
/// the gateway's refetch for unknown keys is asked too).
fn foreign_token(i: usize) -> String {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_and_a_greedy_credential_cannot_starve_a_read() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    stack
        .inject(text(&person("972501230001"), "E1", minutes_ago(5), "edge"))
        .await?;
    let reader = format!("Bearer {}", stack.token(ReadScope::all()).await?);
    let greedy = format!("Bearer {}", stack.token(ReadScope::all()).await?);

    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("http://{addr}/mcp");
    let child = tokio::process::Command::new(gateway_binary()?)
        .env("WAZAP_NATS_URL", nats_url())
        .env("WAZAP_NATS_PREFIX", &stack.prefix)
        .env("WAZAP_MCP_ADDR", &addr)
        .env("WAZAP_OWNER_ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| anyhow::anyhow!("the gateway exited at once"))?;
    let read = |auth: &str| read_messages(url.clone(), auth.to_owned());
    let ready_by = Instant::now() + Duration::from_secs(20);
    while !matches!(read(&reader).await, Ok((200, _, _))) {
        anyhow::ensure!(
            Instant::now() < ready_by,
            "the child gateway never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_kib = status_kib(pid, "VmRSS:")?;
    let idle_fds = open_fds(pid)?;

    // The greedy credential parks its whole share (2, the default limit): a third call is busy.
    // (A wait that raced the check for a permit and lost is started again.)
    let mut parked = JoinSet::new();
    let share_by = Instant::now() + Duration::from_secs(10);
    loop {
        while parked.len() < 2 {
            let (url, auth) = (url.clone(), greedy.clone());
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
            "the parked waits never held the share"
        );
        if parked.len() < 2 {
            continue;
        }
        // Busy for this credential means it holds 2: only the waits are its.
        let (status, _, body) = read(&greedy).await?;
        if status == 429 {
            assert_eq!(body["error"]["code"], "busy", "{body}");
            break;
        }
    }

    // The storm: half heads, strangers' bodies, bad tokens.
    let mut idle_heads = Vec::new();
    for _ in 0..50 {
        let mut s = TcpStream::connect(&addr).await?;
        s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
            .await?;
        idle_heads.push(s);
    }
    let heads_sent = Instant::now();
    let mut strangers = JoinSet::new();
    for i in 0..40 {
        let addr = addr.clone();
        strangers.spawn(async move {
            let auth = (i % 2 == 1).then(|| format!("Bearer {}", foreign_token(i)));
            status_before_body(&addr, auth.as_deref()).await
        });
    }
    let mut bad = JoinSet::new();
    for i in 0..200 {
        let url = url.clone();
        bad.spawn(async move {
            let auth = if i % 2 == 0 {
                format!("Bearer not-a-token-{i}")
            } else {
                format!("Bearer {}", foreign_token(1000 + i))
            };
            post_raw(&url, &[("authorization", &auth)], b"{}".to_vec()).await
        });
    }
    // Meanwhile, the other credential reads, within read_messages' 15 s deadline.
    let (status, _, body) = tokio::time::timeout(Duration::from_secs(15), read(&reader))
        .await
        .map_err(|_| anyhow::anyhow!("read_messages missed its deadline in the storm"))??;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(
        body["result"]["structuredContent"]["messages"][0]["text"],
        "edge"
    );

    // Strangers were refused on their headers: 401 after 1 KiB of a 12 MiB body.
    while let Some(r) = strangers.join_next().await {
        let line = r??;
        assert!(
            line.as_deref()
                .is_some_and(|l| l.starts_with("HTTP/1.1 401")),
            "a stranger's body was not refused on its headers: {line:?}"
        );
    }
    while let Some(r) = bad.join_next().await {
        let (status, _, body) = r??;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (401, Some("unauthenticated"))
        );
    }

    // The greedy credential lets go of its waits and starts 10 slow bodies of its own: at most its
    // share is read (the budget's 16 MiB admits one 12 MiB body at a time), the rest are busy, and
    // the admitted ones are cut off once they fall below the minimum rate.
    parked.abort_all();
    while parked.join_next().await.is_some() {}
    let back_by = Instant::now() + Duration::from_secs(10);
    while read(&greedy).await?.0 != 200 {
        anyhow::ensure!(
            Instant::now() < back_by,
            "the parked waits' permits never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut slow = JoinSet::new();
    for _ in 0..10 {
        slow.spawn(trickle(addr.clone(), greedy.clone()));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, _, body) = tokio::time::timeout(Duration::from_secs(15), read(&reader))
        .await
        .map_err(|_| anyhow::anyhow!("read_messages missed its deadline beside slow bodies"))??;
    assert_eq!(
        status, 200,
        "a read beside another credential's slow bodies: {body}"
    );
    let (mut busy, mut cut_off) = (0, 0);
    while let Some(r) = slow.join_next().await {
        let (line, took) = r??;
        // A cut-off body is answered 408 and closed; the close can overtake the answer (the
        // gateway leaves the rest of the body unread, so its socket resets), hence a close
        // without an answer after the grace counts too. A `busy` comes before any body byte.
        let grace = Duration::from_secs(9);
        match line.as_deref().and_then(|l| l.split(' ').nth(1)) {
            Some("429") => busy += 1,
            Some("408") => cut_off += 1,
            None if took >= grace => cut_off += 1,
            other => anyhow::bail!("a slow body was answered {other:?} after {took:?}"),
        }
        assert!(
            took < Duration::from_secs(25),
            "a slow body ran for {took:?}"
        );
    }
    assert!(
        (1..=2).contains(&cut_off),
        "{cut_off} slow bodies were read"
    );
    assert_eq!(busy + cut_off, 10);

    // The half heads were closed by the gateway (its header timeout), not by us.
    for mut s in idle_heads {
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await;
        assert!(
            matches!(closed, Ok(Ok(0) | Err(_))),
            "a half head was still open {:?} after it was sent",
            heads_sent.elapsed()
        );
    }

    // Nothing leaked: every permit is back (the greedy credential's share and the reader's at
    // once), the budget takes a whole body again, and the descriptors are back to idle.
    let mut all = JoinSet::new();
    for auth in [&greedy, &greedy, &reader] {
        all.spawn(read_messages(url.clone(), auth.clone()));
    }
    while let Some(r) = all.join_next().await {
        let (status, _, body) = r??;
        assert_eq!(status, 200, "a permit did not come back: {body}");
    }
    let fds_by = Instant::now() + Duration::from_secs(5);
    while open_fds(pid)? > idle_fds + 4 {
        anyhow::ensure!(
            Instant::now() < fds_by,
            "descriptors leaked: {} open, {idle_fds} when idle",
            open_fds(pid)?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let peak_kib = status_kib(pid, "VmHWM:")?;
    let now_kib = status_kib(pid, "VmRSS:")?;
    eprintln!("edge: gateway RSS idle {idle_kib} KiB, peak {peak_kib} KiB, after {now_kib} KiB");
    assert!(
        peak_kib <= RSS_BOUND_KIB,
        "the gateway's peak RSS was {peak_kib} KiB (bound {RSS_BOUND_KIB} KiB)"
    );

    // And the body budget is whole: a full 12 MiB body (not JSON, so too large for any tool) is
    // read to its 413, not refused as `busy`.
    let (status, _, body) =
        post_raw(&url, &[("authorization", &greedy)], vec![b' '; SLOW_BODY]).await?;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("request_too_large"))
    );
    drop(child);
    Ok(())
}
