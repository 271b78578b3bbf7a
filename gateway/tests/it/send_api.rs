//! `POST /api/send/*`: the same bodies and results as the send tools, HTTP statuses of DESIGN §7,
//! Content-Type, auth, envelope, concurrency and Host guards.

use serde_json::{Value, json};

use crate::send_support::*;
use crate::support::*;

/// POST `body` (raw text) to `/api/send/<route>` with `headers`.
async fn post_raw(
    mcp: &Mcp,
    gw: &Gateway,
    path: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = mcp
        .http
        .post(format!("http://{}{path}", gw.addr))
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("HTTP");
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    record_error_body(status.as_u16(), &text);
    Answer {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

/// POST JSON with the bearer token and `Content-Type: application/json`.
async fn post(mcp: &Mcp, gw: &Gateway, route: &str, body: &Value) -> Answer {
    if let Some(t) = body["text"].as_str() {
        wazap_shared::leak::record_secret("message text", t);
    }
    let auth = format!("Bearer {}", mcp.token.clone().unwrap());
    post_raw(
        mcp,
        gw,
        &format!("/api/send/{route}"),
        body.to_string(),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn each_route_answers_the_tool_result() {
    let (w, gw, mcp, prefix) = setup(&[]).await;
    let a = post(
        &mcp,
        &gw,
        "message",
        &json!({"chat_id": "c_abc", "request_id": "m-1", "text": "hello"}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["state"], "accepted");
    assert_eq!(a.body["request_id"], "m-1");
    assert_eq!(a.body["duplicate"], false);

    let photo = jpeg();
    let a = post(
        &mcp,
        &gw,
        "media",
        &json!({"chat_id": "c_abc", "request_id": "p-1", "kind": "image",
        "data_base64": b64(&photo), "mime_type": "image/jpeg"}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(stored_object(&prefix, &sha256_hex(&photo)).await, photo);

    let a = post(
        &mcp,
        &gw,
        "voice",
        &json!({"chat_id": "c_abc", "request_id": "v-1",
        "data_base64": b64(&ogg_opus()), "seconds": 2}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);

    let a = post(&mcp, &gw, "status", &json!({"request_id": "m-1"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["duplicate"], true);

    let ops: Vec<String> = w
        .state
        .sends
        .lock()
        .unwrap()
        .iter()
        .map(|(op, _)| op.clone())
        .collect();
    assert_eq!(
        ops,
        [
            "send_message",
            "send_media",
            "send_voice_note",
            "get_send_status"
        ]
    );
    let media_body = w.state.sends.lock().unwrap()[1].1.clone();
    assert!(media_body.get("data_base64").is_none());
    assert_eq!(media_body["media"]["size"], photo.len());
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn request_errors_have_their_statuses() {
    let (w, gw, mcp, _) = setup(&[]).await;
    let token = format!("Bearer {}", mcp.token.clone().unwrap());
    let good = json!({"chat_id": "c_abc", "request_id": "m-1", "text": "hello"}).to_string();

    // 415 without (or with another) Content-Type.
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut h = vec![("Authorization", token.as_str())];
        if let Some(ct) = ct {
            h.push(("Content-Type", ct));
        }
        let a = post_raw(&mcp, &gw, "/api/send/message", good.clone(), &h).await;
        assert_eq!(a.status, 415, "{ct:?}");
        assert_eq!(a.error_code(), "invalid_argument");
    }
    let json_ct = ("Content-Type", "application/json; charset=utf-8");
    // 401: no token, a bad token, a token in the query string.
    let a = post_raw(&mcp, &gw, "/api/send/message", good.clone(), &[json_ct]).await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (401, "unauthenticated")
    );
    let a = post_raw(
        &mcp,
        &gw,
        "/api/send/message",
        good.clone(),
        &[json_ct, ("Authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(a.status, 401);
    let raw_token = mcp.token.clone().unwrap();
    let a = post_raw(
        &mcp,
        &gw,
        &format!("/api/send/message?access_token={raw_token}"),
        good.clone(),
        &[json_ct, ("Authorization", &token)],
    )
    .await;
    assert_eq!(a.status, 401);
    assert!(!a.body.to_string().contains(&raw_token));

    // 400: not JSON, wrong types, unknown fields, bad ids.
    let auth = [json_ct, ("Authorization", token.as_str())];
    for body in [
        "{not json".to_owned(),
        json!({"chat_id": "c_abc", "request_id": "m-1", "text": 5}).to_string(),
        json!({"chat_id": "c_abc", "request_id": "m-1", "text": "x", "account_id": "default"})
            .to_string(),
        json!({"chat_id": "+972501234567", "request_id": "m-1", "text": "SECRET-TEXT"}).to_string(),
        format!("{good} trailing"),
    ] {
        let a = post_raw(&mcp, &gw, "/api/send/message", body.clone(), &auth).await;
        assert_eq!(
            (a.status.as_u16(), a.error_code()),
            (400, "invalid_argument"),
            "{body}"
        );
        assert!(!a.body.to_string().contains("SECRET") && !a.body.to_string().contains("972501"));
    }
    let a = post(
        &mcp,
        &gw,
        "media",
        &json!({"chat_id": "c_abc", "request_id": "p", "kind": "image",
        "data_base64": "not base64!", "mime_type": "image/jpeg"}),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.error_code()), (400, "invalid_base64"));
    let a = post(
        &mcp,
        &gw,
        "media",
        &json!({"chat_id": "c_abc", "request_id": "p", "kind": "video",
        "data_base64": b64(&jpeg()), "mime_type": "video/mp4"}),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.error_code()), (400, "invalid_media"));

    // 413: media over 8 MiB decoded, and a body over the 12 MiB envelope.
    let a = post(
        &mcp,
        &gw,
        "media",
        &json!({"chat_id": "c_abc", "request_id": "p", "kind": "image",
        "data_base64": b64(&vec![0xFF; 8 * 1024 * 1024 + 3]), "mime_type": "image/jpeg"}),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (413, "media_too_large")
    );
    let huge =
        json!({"chat_id": "c_abc", "request_id": "p", "text": "x".repeat(12 * 1024 * 1024 + 1)});
    let a = post(&mcp, &gw, "message", &huge).await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (413, "request_too_large")
    );
    let a = post(
        &mcp,
        &gw,
        "status",
        &json!({"request_id": "x".repeat(70 * 1024)}),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (413, "request_too_large"),
        "status keeps 64 KiB"
    );

    // Wrong Host: the DNS-rebinding guard.
    let a = post_raw(
        &mcp,
        &gw,
        "/api/send/message",
        good.clone(),
        &[
            json_ct,
            ("Authorization", &token),
            ("Host", "evil.example.com"),
        ],
    )
    .await;
    assert_eq!(a.status, 403);
    assert!(
        w.state.sends.lock().unwrap().is_empty(),
        "a refused request reached the worker"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_codes_map_to_http_statuses() {
    let (mut w, gw, mcp, _) = setup(&[]).await;
    for (code, status) in [
        ("send_not_permitted", 403),
        ("session_cannot_send", 409),
        ("send_request_conflict", 409),
        ("send_journal_full", 507),
        ("chat_not_found", 404),
        ("internal", 500),
    ] {
        let a = post(
            &mcp,
            &gw,
            "message",
            &json!({"chat_id": "c_abc", "request_id": format!("err-{code}"), "text": "hi"}),
        )
        .await;
        assert_eq!(a.status, status, "{code}");
        assert_eq!(a.error_code(), code);
    }
    w.stop().await;
    let a = post(
        &mcp,
        &gw,
        "message",
        &json!({"chat_id": "c_abc", "request_id": "m", "text": "hi"}),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (503, "worker_unavailable")
    );
    assert_eq!(a.headers["retry-after"], "1");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_concurrency_limit_is_shared_with_mcp() {
    let (w, gw, mcp, _) = setup(&[("WAZAP_MCP_MAX_CONCURRENCY", "2")]).await;
    let mcp = std::sync::Arc::new(mcp);
    let gw = std::sync::Arc::new(gw);
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (mcp, gw) = (std::sync::Arc::clone(&mcp), std::sync::Arc::clone(&gw));
            tokio::spawn(async move {
                post(
                    &mcp,
                    &gw,
                    "message",
                    &json!({"chat_id": "c_abc", "request_id": "hold", "text": "hi"}),
                )
                .await
            })
        })
        .collect();
    w.wait_held(2).await;
    let a = post(&mcp, &gw, "status", &json!({"request_id": "m-1"})).await;
    assert_eq!((a.status.as_u16(), a.error_code()), (429, "busy"));
    assert_eq!(a.headers["retry-after"], "1");
    let a = mcp.call_raw("list_chats", json!({})).await;
    assert_eq!(a.status, 429);
    w.state.release.notify_waiters();
    for h in held {
        assert_eq!(h.await.unwrap().status, 200);
    }
    let a = post(&mcp, &gw, "status", &json!({"request_id": "m-1"})).await;
    assert_eq!(a.status, 200);
}
