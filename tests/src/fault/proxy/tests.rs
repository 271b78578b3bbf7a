//! The proxy against small servers of its own.

use super::*;
use std::time::Instant;

/// An echo server on a free port.
async fn echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

async fn round_trip(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    s.write_all(b"ping").await.ok()?;
    let mut got = [0u8; 4];
    match tokio::time::timeout(within, s.read_exact(&mut got)).await {
        Ok(Ok(_)) => Some(got.to_vec()),
        _ => None,
    }
}

#[tokio::test]
async fn passes_delays_stalls_resumes_and_resets() {
    let proxy = Proxy::start(echo().await).await.unwrap();
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let second = Duration::from_secs(1);
    assert_eq!(
        round_trip(&mut s, second).await.as_deref(),
        Some(&b"ping"[..])
    );

    proxy.delay(Duration::from_millis(150));
    let t = Instant::now();
    assert!(round_trip(&mut s, second).await.is_some());
    // One delay each way.
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );

    proxy.stall();
    assert!(
        round_trip(&mut s, Duration::from_millis(300))
            .await
            .is_none()
    );
    // A connection opened while stalled stalls too.
    let mut late = TcpStream::connect(proxy.addr()).await.unwrap();
    assert!(
        round_trip(&mut late, Duration::from_millis(300))
            .await
            .is_none()
    );
    proxy.pass();
    // What waited is delivered once the link passes again, in order.
    let mut got = [0u8; 4];
    tokio::time::timeout(second, s.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got, b"ping");
    tokio::time::timeout(second, late.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        round_trip(&mut s, second).await.as_deref(),
        Some(&b"ping"[..])
    );

    proxy.reset();
    let mut rest = [0u8; 1];
    let cut = tokio::time::timeout(second, s.read(&mut rest))
        .await
        .unwrap();
    assert!(
        matches!(cut, Ok(0) | Err(_)),
        "the connection survived a reset"
    );
    // New connections are served after a reset.
    let mut again = TcpStream::connect(proxy.addr()).await.unwrap();
    assert!(round_trip(&mut again, second).await.is_some());
}

#[tokio::test]
async fn a_reset_while_stalled_cuts_the_blackholed_link() {
    let proxy = Proxy::start(echo().await).await.unwrap();
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    proxy.stall();
    assert!(
        round_trip(&mut s, Duration::from_millis(200))
            .await
            .is_none()
    );
    proxy.reset();
    let mut rest = [0u8; 1];
    let cut = tokio::time::timeout(Duration::from_secs(1), s.read(&mut rest))
        .await
        .unwrap();
    assert!(matches!(cut, Ok(0) | Err(_)));
    assert_eq!(proxy.mode(), Mode::Stall);
}

/// A server that records what it reads and answers each chunk with `ok`.
async fn recorder() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = s.read(&mut buf).await {
                    let _ = tx.send(buf[..n].to_vec());
                    let _ = s.write_all(b"ok").await;
                }
            });
        }
    });
    (addr, rx)
}

#[tokio::test]
async fn an_armed_cut_loses_the_answer_or_the_request_once() {
    let (addr, mut seen) = recorder().await;
    let proxy = Proxy::start(addr).await.unwrap();
    let second = Duration::from_secs(1);
    for deliver in [true, false] {
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        s.write_all(b"before").await.unwrap();
        let mut ok = [0u8; 2];
        s.read_exact(&mut ok).await.unwrap();
        assert_eq!(seen.recv().await.unwrap(), b"before");
        if deliver {
            proxy.lose_reply_to(b"NEEDLE");
        } else {
            proxy.drop_request(b"NEEDLE");
        }
        assert!(!proxy.cut_fired());
        s.write_all(b"xNEEDLEx").await.unwrap();
        let mut rest = [0u8; 2];
        let cut = tokio::time::timeout(second, s.read(&mut rest))
            .await
            .unwrap();
        assert!(matches!(cut, Ok(0) | Err(_)), "the answer came through");
        assert!(proxy.cut_fired());
        let got = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await;
        if deliver {
            assert_eq!(got.unwrap().unwrap(), b"xNEEDLEx");
        } else {
            assert!(got.is_err(), "the dropped request reached the server");
        }
    }
    // Fired once: the needle passes now.
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(b"NEEDLE").await.unwrap();
    let mut ok = [0u8; 2];
    tokio::time::timeout(second, s.read_exact(&mut ok))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.recv().await.unwrap(), b"NEEDLE");
}
