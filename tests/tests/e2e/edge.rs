//! An edge a stranger cannot exhaust (#26 item 3), against the real `wazap-gateway` binary as a
//! child process (its RSS and descriptors are its own): one credential parks its whole share of
//! the permits, then 50 connections send half a request head, 40 strangers start 12 MiB bodies
//! (no token or a bad one), 200 bad-token requests arrive at once, and another credential's
//! `read_messages` still answers within its 15 s deadline. The first credential's own slow bodies
//! get its share or `busy`, and those admitted are cut off (408) once they fall below the minimum
//! rate. Afterwards every connection is closed (the idle heads by the header timeout), every
//! permit and budget byte is back, and the gateway's peak RSS stayed under [`RSS_BOUND_KIB`].

pub(crate) mod client;

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

use client::{
    SLOW_BODY, foreign_token, open_fds, park_share, read_messages, spawn_gateway,
    status_before_body, trickle,
};
use wazap_tests::status_kib;

/// The gateway's peak RSS (`VmHWM`) allowed through the storm: DESIGN §11's 40 MiB under load.
/// The test runs whichever binary the profile built (debug in `cargo nextest run`), and holds it
/// to the same bound: the debug binary peaked at about 34 MiB here (idle about 30 MiB), and
/// prints its figures on every run.
const RSS_BOUND_KIB: u64 = 40 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_and_a_greedy_credential_cannot_starve_a_read() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    stack
        .inject(text(&person("972501230001"), "E1", minutes_ago(5), "edge"))
        .await?;
    let reader = format!("Bearer {}", stack.token(ReadScope::all()).await?);
    let greedy = format!("Bearer {}", stack.token(ReadScope::all()).await?);

    let gateway = spawn_gateway(&stack)?;
    let (addr, pid) = (gateway.addr.clone(), gateway.pid);
    let url = format!("http://{addr}/mcp");
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
    let mut parked = park_share(&url, &greedy).await?;

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

    // Nothing leaked: every permit is back (the greedy credential parks its whole share again,
    // and the reader still gets the held-back permit beside it), the budget takes a whole body
    // again (below), and the descriptors are back to idle.
    let mut parked = park_share(&url, &greedy).await?;
    let (status, _, body) = read(&reader).await?;
    assert_eq!(
        status, 200,
        "the held-back permit did not come back: {body}"
    );
    parked.abort_all();
    while parked.join_next().await.is_some() {}
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
    drop(gateway);
    Ok(())
}
