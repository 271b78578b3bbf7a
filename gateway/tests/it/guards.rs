//! Host/Origin guard, concurrency limit, body limit, health endpoints.

use std::time::Duration;

use serde_json::json;

use crate::support::*;

async fn setup(env: &[(&str, &str)]) -> (FakeWorker, Gateway, Mcp) {
    let prefix = prefix();
    let signer = Signer::generate();
    let worker = FakeWorker::start(&prefix, vec![signer.jwk.clone()]).await;
    let gw = Gateway::start(&prefix, env).await;
    gw.wait_ready().await;
    let mcp = Mcp::new(gw.mcp_url(), Some(signer.token()));
    (worker, gw, mcp)
}

fn list_chats() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "list_chats", "arguments": {}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn host_must_be_an_exact_public_host() {
    let (_w, gw, mcp) = setup(&[]).await;
    let a = mcp
        .post(&list_chats(), &[("Host", "evil.example.com")])
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.error_code(), "invalid_argument");
    assert!(!a.body.to_string().contains("evil"), "the Host was echoed");

    let wrong_port = format!("localhost:{}", gw.addr.port() + 1);
    let a = mcp.post(&list_chats(), &[("Host", &wrong_port)]).await;
    assert_eq!(a.status, 403);

    let right = format!("localhost:{}", gw.addr.port());
    let a = mcp.post(&list_chats(), &[("Host", &right)]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["result"]["isError"], false);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn foreign_browser_origin_is_refused() {
    let (_w, gw, mcp) = setup(&[]).await;
    let a = mcp
        .post(&list_chats(), &[("Origin", "http://evil.example.com")])
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.error_code(), "invalid_argument");
    let a = mcp.post(&list_chats(), &[("Origin", "null")]).await;
    assert_eq!(a.status, 403);

    let own = format!("http://127.0.0.1:{}", gw.addr.port());
    let a = mcp.post(&list_chats(), &[("Origin", &own)]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn third_concurrent_request_is_busy() {
    let (worker, gw, mcp) = setup(&[("WAZAP_MCP_MAX_CONCURRENCY", "2")]).await;
    let mcp = std::sync::Arc::new(mcp);
    let held: Vec<_> = (0..2)
        .map(|_| {
            let mcp = std::sync::Arc::clone(&mcp);
            tokio::spawn(async move { mcp.call("list_chats", json!({"query": "hold"})).await })
        })
        .collect();
    worker.wait_held(2).await;

    let a = mcp.call_raw("list_chats", json!({})).await;
    assert_eq!(a.status, 429);
    assert_eq!(a.error_code(), "busy");
    assert_eq!(a.headers["retry-after"], "1");

    worker.state.release.notify_waiters();
    for h in held {
        let result = h.await.unwrap();
        assert_eq!(result["isError"], false);
    }
    // Both permits came back.
    for _ in 0..2 {
        let result = mcp.call("list_chats", json!({})).await;
        assert_eq!(
            result["structuredContent"]["chats"][0]["chat_id"],
            "c_family"
        );
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oversize_body_is_request_too_large() {
    let (_w, gw, mcp) = setup(&[]).await;
    let big = "a".repeat(70 * 1024);
    let a = mcp.call_raw("search_contacts", json!({"query": big})).await;
    assert_eq!(a.status, 413);
    assert_eq!(a.error_code(), "request_too_large");

    // Just under the limit passes through to the worker.
    let fits = "a".repeat(60 * 1024);
    let result = mcp.call("search_contacts", json!({"query": fits})).await;
    assert_eq!(result["isError"], false);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_readiness() {
    let (mut worker, gw, _mcp) = setup(&[]).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = format!("http://{}", gw.addr);
    let r = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "ready");

    // A worker that answers but is not ready (a supervised task down): 503 with its reason.
    let why = "the worker is not ready: the archive writer stopped";
    *worker.state.not_ready.lock().unwrap() = Some(why.into());
    let r = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "worker_unavailable");
    assert_eq!(body["error"]["message"], why);
    *worker.state.not_ready.lock().unwrap() = None;

    worker.stop().await;
    let started = std::time::Instant::now();
    let r = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(started.elapsed() < Duration::from_millis(1500));
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "worker_unavailable");
    let r = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    gw.stop().await;
}
