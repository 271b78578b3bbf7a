//! Grants and limits at the edge: bad tokens, Host, concurrency, body size, a stopped worker.

use std::time::{Duration, Instant};

use serde_json::json;
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::{Stack, post_raw, tools_call_body};
use wazap_worker::config::ConnectorKind;

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The code of a refused call: an HTTP error body, or an `isError` tool result.
fn code_of(status: u16, body: &serde_json::Value) -> String {
    if let Some(code) = body["error"]["code"].as_str() {
        return format!("{status}:{code}");
    }
    let text = body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let inner: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    format!("tool:{}", inner["error"]["code"].as_str().unwrap_or("none"))
}

/// A stack, a gateway, and a local connection with its token (valid for 10 minutes).
async fn with_a_token() -> anyhow::Result<(Stack, wazap_tests::Gateway, String, String)> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let (conn, good) = stack
        .token_with(
            ReadScope::all(),
            wazap_shared::grant::ConnectionKind::Local,
            Duration::from_secs(600),
        )
        .await?;
    Ok((stack, gw, conn, good))
}

#[tokio::test]
async fn bad_tokens_are_unauthenticated() -> anyhow::Result<()> {
    let (stack, gw, conn, good) = with_a_token().await?;
    let url = gw.mcp_url();
    let call = || tools_call_body("list_chats", json!({}));
    let now = chrono::Utc::now().timestamp();
    let claims = |aud: &str, exp: i64, rev: u32| json!({"sub": conn, "rev": rev, "aud": aud, "exp": exp, "iat": now - 10, "kind": "local"});
    let expired = stack.sign(&claims("wazap", now - 60, 0)).await?;
    let wrong_aud = stack.sign(&claims("someone-else", now + 600, 0)).await?;

    let (s, h, b) = post_raw(&url, &[], call()).await?;
    assert_eq!((s, code_of(s, &b).as_str()), (401, "401:unauthenticated"));
    assert!(
        h.get("www-authenticate")
            .is_some_and(|v| v.to_str().unwrap().starts_with("Bearer"))
    );
    for token in ["garbage", "a.b.c", expired.as_str(), wrong_aud.as_str()] {
        let (s, _, b) = post_raw(&url, &[("authorization", &bearer(token))], call()).await?;
        assert_eq!(code_of(s, &b), "401:unauthenticated", "token {token:.12}…");
    }
    // Tokens never travel in a URL.
    let (s, _, b) = post_raw(&format!("{url}?access_token={good}"), &[], call()).await?;
    assert_eq!(code_of(s, &b), "401:unauthenticated");

    // The good token works through a real MCP client…
    let mcp = gw.mcp(&good).await?;
    assert!(!mcp.call("list_chats", json!({})).await?.is_error);
    // …until its credential revision moves on (a rotation), and after revocation.
    stack
        .sql(&format!(
            "update connections set revision = revision + 1 where connection_id = '{conn}'"
        ))
        .await?;
    let stale = mcp.call("list_chats", json!({})).await?;
    assert_eq!(stale.error_code().as_deref(), Some("unauthenticated"));
    let (conn2, second) = stack
        .token_with(
            ReadScope::all(),
            wazap_shared::grant::ConnectionKind::Local,
            Duration::from_secs(600),
        )
        .await?;
    let mcp2 = gw.mcp(&second).await?;
    assert!(!mcp2.call("list_chats", json!({})).await?.is_error);
    stack
        .sql(&format!(
            "update connections set revoked_at = now() where connection_id = '{conn2}'"
        ))
        .await?;
    let revoked = mcp2.call("list_chats", json!({})).await?;
    assert_eq!(revoked.error_code().as_deref(), Some("unauthenticated"));
    Ok(())
}

#[tokio::test]
async fn host_body_size_and_concurrency_limits_hold() -> anyhow::Result<()> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[("WAZAP_MCP_MAX_CONCURRENCY", "2")]).await?;
    let token = stack.token(ReadScope::all()).await?;
    let auth = bearer(&token);
    let url = gw.mcp_url();

    let (s, _, _) = post_raw(
        &url,
        &[("host", "evil.example:80"), ("authorization", &auth)],
        tools_call_body("list_chats", json!({})),
    )
    .await?;
    assert!(
        s == 403 || s == 421 || s == 400,
        "wrong Host refused, got {s}"
    );
    let (s, _, b) = post_raw(
        &url,
        &[("origin", "http://evil.example"), ("authorization", &auth)],
        tools_call_body("list_chats", json!({})),
    )
    .await?;
    assert_eq!(s, 403, "foreign browser Origin refused: {b}");

    let big = tools_call_body("list_chats", json!({"query": "x".repeat(70 * 1024)}));
    let (s, _, b) = post_raw(&url, &[("authorization", &auth)], big).await?;
    assert_eq!(code_of(s, &b), "413:request_too_large");

    // Hold two calls in flight: the worker is replaced by a responder that answers once released
    // (or after 10 s).
    stack.stop_worker().await?;
    let mut slow = stack
        .nats
        .subscribe(stack.subjects.rpc(Some("default"), "list_chats"))
        .await?;
    // The server has the subscription before any call is made (the gateway's requests come on
    // another connection: without this they may find no responder and answer at once).
    stack.nats.flush().await?;
    let nats = stack.nats.clone();
    // Counts the calls that reached the responder: each holds its permit until answered.
    let (arrived, mut reached) = tokio::sync::watch::channel(0usize);
    let (release, released) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        use futures::StreamExt;
        while let Some(msg) = slow.next().await {
            arrived.send_modify(|n| *n += 1);
            let (nats, mut released) = (nats.clone(), released.clone());
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(10), released.wait_for(|r| *r)).await;
                if let Some(reply) = msg.reply {
                    let _ = nats
                        .publish(
                            reply,
                            r#"{"ok":{"account_id":"default","chats":[]}}"#.into(),
                        )
                        .await;
                }
            });
        }
    });
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (url, auth) = (url.clone(), auth.clone());
            tokio::spawn(async move {
                post_raw(
                    &url,
                    &[("authorization", &auth)],
                    tools_call_body("list_chats", json!({})),
                )
                .await
            })
        })
        .collect();
    // Both held calls are at the responder (not merely started: on a loaded machine they may
    // take longer than any fixed sleep to get their permits).
    tokio::time::timeout(Duration::from_secs(10), reached.wait_for(|n| *n >= 2)).await??;
    let (s, h, b) = post_raw(
        &url,
        &[("authorization", &auth)],
        tools_call_body("list_chats", json!({})),
    )
    .await?;
    assert_eq!(code_of(s, &b), "429:busy");
    assert!(h.get("retry-after").is_some());
    release.send_replace(true);
    for h in held {
        let (s, _, _) = h.await??;
        assert_eq!(s, 200, "the held calls complete");
    }
    Ok(())
}

#[tokio::test]
async fn a_stopped_worker_is_worker_unavailable_within_a_second() -> anyhow::Result<()> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    assert!(!mcp.call("list_chats", json!({})).await?.is_error);
    stack.stop_worker().await?;
    let started = Instant::now();
    let r = mcp
        .call("read_messages", json!({"chat_id": "status"}))
        .await?;
    assert_eq!(r.error_code().as_deref(), Some("worker_unavailable"));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    // The gateway says it is not ready; the worker's return makes it ready again.
    let ready = reqwest::get(gw.url("/readyz")).await?.status().as_u16();
    assert_eq!(ready, 503);
    stack.start_worker().await?;
    gw.wait_ready().await?;
    assert!(!mcp.call("list_chats", json!({})).await?.is_error);
    Ok(())
}

/// A token-matrix case: its name, its headers and the URL it posts to.
type Case<'a> = (&'a str, Vec<(&'a str, String)>, String);

/// The forged and malformed tokens an attacker tries first, each refused at the edge with
/// `401 unauthenticated` and `WWW-Authenticate: Bearer resource_metadata="…", error="invalid_token"`, before anything
/// but a key fetch reaches the worker.
#[tokio::test]
async fn the_token_matrix_is_refused_before_the_worker() -> anyhow::Result<()> {
    use base64::Engine as _;
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    let (stack, gw, conn, good) = with_a_token().await?;
    let url = gw.mcp_url();
    let call = || tools_call_body("list_chats", json!({}));
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"sub": conn, "rev": 0, "aud": "wazap", "exp": now + 600, "iat": now - 10, "kind": "local"});
    let (kid, public_x): (String, String) = {
        let row = stack
            .pool
            .get()
            .await?
            .query_one(
                "select kid, public_x from signing_keys where retired_at is null",
                &[],
            )
            .await?;
        (row.get(0), row.get(1))
    };
    // `alg: none`, unsigned.
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&claims)
    );
    // HS256 keyed with the published public key, as text and as bytes.
    let hs256 = |secret: &[u8]| -> anyhow::Result<String> {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(kid.clone());
        let key = jsonwebtoken::EncodingKey::from_secret(secret)?;
        Ok(jsonwebtoken::encode(&header, &claims, &key)?)
    };
    let public = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&public_x)?;
    let (hs_text, hs_bytes) = (hs256(public_x.as_bytes())?, hs256(&public)?);
    // Signed by the real key, with `nbf` ahead or without `exp`.
    let mut early = claims.clone();
    early["nbf"] = json!(now + 600);
    let early = stack.sign(&early).await?;
    let mut endless = claims.clone();
    endless.as_object_mut().unwrap().remove("exp");
    let endless = stack.sign(&endless).await?;
    // The good token's claims and signature under a key id nobody published.
    let unknown_kid = {
        let (_, rest) = good.split_once('.').unwrap();
        format!(
            "{}.{rest}",
            b64(&json!({"alg": "EdDSA", "typ": "JWT", "kid": "k-unknown"}))
        )
    };

    let rpc = stack.nats.subscribe(stack.subjects.rpc_all()).await?;
    // One bearer header carrying `token`, to the plain URL.
    let bearing = |case: &'static str, token: &str| -> Case<'static> {
        (case, vec![("authorization", bearer(token))], url.clone())
    };
    let cases: [Case<'_>; 9] = [
        bearing("alg none", &none),
        bearing("HS256, public key text", &hs_text),
        bearing("HS256, public key bytes", &hs_bytes),
        bearing("nbf ahead", &early),
        bearing("no exp", &endless),
        bearing("unknown kid", &unknown_kid),
        (
            "two Authorization headers",
            vec![
                ("authorization", bearer(&good)),
                ("authorization", bearer(&good)),
            ],
            url.clone(),
        ),
        (
            "lower-case scheme, bad token",
            vec![("authorization", format!("bearer {none}"))],
            url.clone(),
        ),
        ("token in the query", vec![], format!("{url}?token={good}")),
    ];
    // Each carries a credential: the challenge names `/mcp`'s metadata and the invalid token.
    let challenge = format!(
        r#"Bearer resource_metadata="{}", error="invalid_token""#,
        url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    );
    for (case, headers, to) in &cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (s, h, b) = post_raw(to, &headers, call()).await?;
        assert_eq!(code_of(s, &b), "401:unauthenticated", "{case}");
        assert_eq!(
            h.get("www-authenticate").map(|v| v.to_str().unwrap()),
            Some(challenge.as_str()),
            "{case}"
        );
    }
    // The scheme is case-insensitive (RFC 7235): a good token under `bearer` works.
    let (s, _, b) = post_raw(
        &url,
        &[("authorization", &format!("bearer {good}"))],
        call(),
    )
    .await?;
    assert_eq!(
        (s, b["result"]["isError"].as_bool()),
        (200, Some(false)),
        "{b}"
    );

    // Nothing but key fetches (for the unknown key id) and the good call reached the worker.
    drop(gw);
    let ops: Vec<String> = {
        use futures::StreamExt as _;
        let mut rpc = rpc;
        let mut ops = Vec::new();
        while let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(300), rpc.next()).await {
            ops.push(m.subject.to_string());
        }
        ops
    };
    let calls: Vec<&String> = ops
        .iter()
        .filter(|s| !s.ends_with(&format!(".{}", wazap_shared::subjects::op::JWKS)))
        .collect();
    assert_eq!(calls.len(), 1, "worker calls: {calls:?}");
    Ok(())
}
