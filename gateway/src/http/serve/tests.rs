//! The accept loop against real sockets: peer address in the extensions, 431 for an oversized
//! head, and graceful shutdown (in-flight request answered, port closed afterwards).

use std::net::SocketAddr;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::serve;

/// A served app on an ephemeral loopback port, and its shutdown token and task.
async fn start(app: Router) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let task = tokio::spawn(async move {
        serve(listener, app, &token).await.expect("serve");
    });
    (addr, shutdown, task)
}

/// Send `request` raw on a fresh connection and read until the server closes it.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn handlers_see_the_peer_address_and_the_request_as_sent() {
    let app = Router::new().route(
        "/peer",
        get(
            |ConnectInfo(peer): ConnectInfo<SocketAddr>,
             headers: http::HeaderMap,
             uri: http::Uri| async move {
                let token = headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap_or("?").to_owned());
                format!("{} {} {}", peer.ip(), uri, token.unwrap_or_default())
            },
        ),
    );
    let (addr, shutdown, task) = start(app).await;
    let answer = exchange(
        addr,
        b"GET /peer?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer abc\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with("127.0.0.1 /peer?x=1 Bearer abc"),
        "{answer}"
    );
    shutdown.cancel();
    task.await.expect("serve task");
}

#[tokio::test]
async fn a_head_larger_than_the_read_buffer_gets_431() {
    let (addr, shutdown, task) = start(Router::new().route("/", get(|| async { "ok" }))).await;
    let filler = "a".repeat(super::READ_BUF_MAX);
    let request = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Filler: {filler}\r\n\r\n");
    let answer = exchange(addr, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    shutdown.cancel();
    task.await.expect("serve task");
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_and_closes_the_port() {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let gates = std::sync::Mutex::new(Some((started_tx, release_rx)));
    let gates = std::sync::Arc::new(gates);
    let app = Router::new().route(
        "/slow",
        get(move || {
            let gates = gates.lock().expect("gates").take();
            async move {
                let (started, release) = gates.expect("one request");
                let _ = started.send(());
                let _ = release.await;
                "done"
            }
        }),
    );
    let (addr, shutdown, task) = start(app).await;
    let in_flight = tokio::spawn(exchange(addr, b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"));
    started_rx.await.expect("request started");
    shutdown.cancel();
    // The accept loop has stopped once the listener is gone.
    while TcpStream::connect(addr).await.is_ok() {
        tokio::task::yield_now().await;
    }
    assert!(
        !task.is_finished(),
        "serve returned with a request in flight"
    );
    release_tx.send(()).expect("release");
    let answer = in_flight.await.expect("client task");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("done"), "{answer}");
    task.await.expect("serve task");
}

/// Send a POST's head, then (after a pause, as httpx does) its 5-byte body, and read whatever
/// the server answers within a second.
async fn post_in_two_parts(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!("POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("head");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let _ = stream.write_all(b"hello").await;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&answer).to_ascii_lowercase()
}

#[tokio::test]
async fn an_answer_before_the_body_was_read_closes_the_connection_and_says_so() {
    use axum::routing::post;
    let app = Router::new()
        .route("/early", post(|| async { http::StatusCode::UNAUTHORIZED }))
        .route("/read", post(|body: String| async move { body }));
    let (addr, shutdown, task) = start(app).await;
    let early = post_in_two_parts(addr, "/early").await;
    assert!(early.starts_with("http/1.1 401"), "{early}");
    assert!(early.contains("connection: close"), "{early}");
    // A request whose body was read keeps its connection.
    let read = post_in_two_parts(addr, "/read").await;
    assert!(read.starts_with("http/1.1 200"), "{read}");
    assert!(!read.contains("connection: close"), "{read}");
    assert!(read.ends_with("hello"), "{read}");
    shutdown.cancel();
    task.await.expect("served");
}
