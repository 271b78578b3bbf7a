//! Bearer grants: what is refused with 401, what reaches the worker, and a missing worker.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

struct Setup {
    signer: Signer,
    worker: FakeWorker,
    gw: Gateway,
}

async fn setup() -> Setup {
    let prefix = prefix();
    let signer = Signer::generate();
    let worker = FakeWorker::start(&prefix, vec![signer.jwk.clone()]).await;
    let gw = Gateway::start(&prefix, &[]).await;
    gw.wait_ready().await;
    Setup { signer, worker, gw }
}

/// 401 `unauthenticated`, its challenge naming `/mcp`'s metadata on the gateway's own host
/// (`http`: a loopback one), and saying the token is invalid: every case here carries one.
fn assert_unauthenticated(a: &Answer, what: &str) {
    assert_eq!(a.status, 401, "{what}: {}", a.body);
    assert_eq!(a.error_code(), "unauthenticated", "{what}");
    let challenge = a.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(r#"Bearer resource_metadata="http://127.0.0.1:"#)
            && challenge
                .ends_with(r#"/.well-known/oauth-protected-resource/mcp", error="invalid_token""#),
        "{what}: {challenge}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_tokens_are_unauthenticated() {
    let s = setup().await;
    let url = s.gw.mcp_url();
    let call = |token: Option<String>| {
        let mcp = Mcp::new(url.clone(), token);
        async move { mcp.call_raw("list_chats", json!({})).await }
    };

    // No credential at all: the challenge names the metadata and no error (RFC 6750 §3.1).
    let missing = call(None).await;
    assert_eq!(
        (missing.status.as_u16(), missing.error_code()),
        (401, "unauthenticated")
    );
    let challenge = missing.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(r#"Bearer resource_metadata="http://127.0.0.1:"#)
            && challenge.ends_with(r#"/.well-known/oauth-protected-resource/mcp""#),
        "{challenge}"
    );
    assert_unauthenticated(&call(Some("garbage".into())).await, "garbage");
    assert_unauthenticated(&call(Some("a.b.c".into())).await, "three garbage parts");

    let mut expired = Signer::claims("conn_test");
    expired.exp = chrono::Utc::now().timestamp() - 60;
    assert_unauthenticated(&call(Some(s.signer.sign(&expired))).await, "expired");

    let mut other_aud = Signer::claims("conn_test");
    other_aud.aud = "someone-else".into();
    assert_unauthenticated(&call(Some(s.signer.sign(&other_aud))).await, "audience");

    // A key the worker does not publish (unknown kid, after a re-fetch).
    let stranger = Signer::generate();
    assert_unauthenticated(&call(Some(stranger.token())).await, "unknown key");

    // Another key claiming the published kid: the signature does not verify.
    let mut impostor = Signer::generate();
    impostor.kid = s.signer.kid.clone();
    assert_unauthenticated(&call(Some(impostor.token())).await, "wrong key");

    // Nothing of the above reached the worker.
    assert!(s.worker.state.grants.lock().unwrap().is_empty());

    // The real thing works, and the worker receives the verified grant.
    let result = Mcp::new(url.clone(), Some(s.signer.token()))
        .call("list_chats", json!({}))
        .await;
    assert_eq!(result["isError"], false);
    let grants = s.worker.state.grants.lock().unwrap().clone();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].connection_id, "conn_test");
    assert_eq!(grants[0].revision, 3);
    assert!(grants[0].loopback);
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_the_url_are_refused() {
    let s = setup().await;
    let token = s.signer.token();
    for param in ["token", "access_token", "authorization"] {
        // Even alongside a valid header, a URL credential is refused.
        let url = format!("{}?{param}={token}", s.gw.mcp_url());
        let a = Mcp::new(url, Some(token.clone()))
            .call_raw("list_chats", json!({}))
            .await;
        assert_unauthenticated(&a, param);
        assert!(!a.body.to_string().contains(&token), "token echoed");
    }
    let url = format!("{}?access_token={token}", s.gw.mcp_url());
    let a = Mcp::new(url, None).call_raw("list_chats", json!({})).await;
    assert_unauthenticated(&a, "query only");
    assert!(s.worker.state.grants.lock().unwrap().is_empty());
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_worker_at_all_is_worker_unavailable_fast() {
    let prefix = prefix();
    let signer = Signer::generate();
    let gw = Gateway::start(&prefix, &[]).await;
    // Let NATS connect so "no responders" (not a connect race) is what is measured.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mcp = Mcp::new(gw.mcp_url(), Some(signer.token()));
    for _ in 0..3 {
        let started = Instant::now();
        let a = mcp.call_raw("list_chats", json!({})).await;
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(a.status, 503, "{}", a.body);
        assert_eq!(a.error_code(), "worker_unavailable");
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_gone_after_start_is_worker_unavailable_fast() {
    let mut s = setup().await;
    let mcp = Mcp::new(s.gw.mcp_url(), Some(s.signer.token()));
    assert_eq!(mcp.call("list_chats", json!({})).await["isError"], false);

    s.worker.stop().await;
    let started = Instant::now();
    let result = mcp.call("list_chats", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result["isError"], true);
    assert_eq!(text_json(&result)["error"]["code"], "worker_unavailable");
    s.gw.stop().await;
}

/// A client that only speaks OAuth finds the authorization server from a 401 alone: the
/// challenge's `resource_metadata` URL answers, without a token, `/mcp`'s Protected Resource
/// Metadata (RFC 9728) — the resource as reached, the owner listener as its authorization
/// server, bearer tokens in the header only; the root form says the same; another `Host` is
/// refused as on `/mcp`.
#[tokio::test(flavor = "multi_thread")]
async fn a_401_leads_to_the_resource_metadata() {
    let s = setup().await;
    let missing = Mcp::new(s.gw.mcp_url(), None)
        .call_raw("list_chats", json!({}))
        .await;
    let challenge = missing.headers["www-authenticate"].to_str().unwrap();
    let metadata_url = challenge
        .strip_prefix(r#"Bearer resource_metadata=""#)
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{challenge}"));
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let root = metadata_url.trim_end_matches("/mcp").to_owned();
    for url in [metadata_url.to_owned(), root] {
        let r = http.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200, "{url}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["resource"], s.gw.mcp_url(), "{url}");
        assert_eq!(
            body["authorization_servers"],
            json!(["http://localhost:8081"]),
            "{url}"
        );
        assert_eq!(body["bearer_methods_supported"], json!(["header"]));
        assert_eq!(body["scopes_supported"], json!(["mcp"]));
    }
    let r = http
        .get(metadata_url)
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    s.gw.stop().await;
}

/// A token an OAuth client got names the resource it asked for (RFC 8707): it works at that
/// `/mcp` as reached, and nowhere else — not at another server's, and not through another of
/// this listener's own host names — refused 401 with the challenge.
#[tokio::test(flavor = "multi_thread")]
async fn a_resource_token_works_only_at_its_resource() {
    let s = setup().await;
    let url = s.gw.mcp_url();
    let mut ours = Signer::claims("conn_oauth");
    ours.aud = url.clone();
    let ours = s.signer.sign(&ours);
    let result = Mcp::new(url.clone(), Some(ours.clone()))
        .call("list_chats", json!({}))
        .await;
    assert_eq!(result["isError"], false);

    let mut theirs = Signer::claims("conn_oauth");
    theirs.aud = "https://other.example/mcp".into();
    let a = Mcp::new(url.clone(), Some(s.signer.sign(&theirs)))
        .call_raw("list_chats", json!({}))
        .await;
    assert_unauthenticated(&a, "another server's resource");
    assert_eq!(
        a.body["error"]["message"],
        "the token was issued for another resource"
    );

    // `localhost:<port>` is one of the listener's hosts too, but another resource URL.
    let localhost = format!("localhost:{}", s.gw.addr.port());
    let a = Mcp::new(url, Some(ours))
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "list_chats", "arguments": {}}}),
            &[("Host", localhost.as_str())],
        )
        .await;
    assert_eq!(a.status, 401, "{}", a.body);
    assert_eq!(
        a.body["error"]["message"],
        "the token was issued for another resource"
    );
    let grants = s.worker.state.grants.lock().unwrap().clone();
    assert_eq!(grants.len(), 1, "only the call at its own resource");
    s.gw.stop().await;
}
