//! `wait_for_messages` on the gateway's direct route (a plain JSON-RPC call, answered without
//! rmcp's per-request machinery) answers exactly what rmcp's route answers: the same call sent
//! both ways — once plain, once with an empty `_meta`, which the direct route leaves to rmcp —
//! gives the same status, content type and JSON, for results, timeouts, tool errors and
//! argument errors; and a direct wait wakes on an event.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

/// A `tools/call` of `wait_for_messages` with `id` and `args`; `meta` adds an empty `_meta`
/// (which sends the call through rmcp).
fn body(id: &Value, args: &Value, meta: bool) -> Vec<u8> {
    let mut params = json!({"name": "wait_for_messages", "arguments": args});
    if meta {
        params["_meta"] = json!({});
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
    .expect("json")
}

/// Status, content type and JSON body of one call.
async fn call(url: &str, auth: &str, body: Vec<u8>) -> anyhow::Result<(u16, String, Value)> {
    let (status, headers, json) = post_raw(url, &[("authorization", auth)], body).await?;
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Ok((status, content_type, json))
}

#[tokio::test]
async fn the_direct_route_answers_exactly_as_rmcp_does() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let auth = format!("Bearer {}", stack.token(ReadScope::all()).await?);
    let url = gw.mcp_url();

    let (_, _, first) = call(
        &url,
        &auth,
        body(&json!(1), &json!({"timeout_seconds": 1}), false),
    )
    .await?;
    let start = first["result"]["structuredContent"]["cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    for (i, words) in ["one", "two", "three"].iter().enumerate() {
        stack
            .inject(text(
                &person(&format!("97250661000{i}")),
                &format!("D{i}"),
                minutes_ago(0),
                words,
            ))
            .await?;
    }
    let (_, _, latest) = call(
        &url,
        &auth,
        body(
            &json!(2),
            &json!({"cursor": start, "timeout_seconds": 5}),
            false,
        ),
    )
    .await?;
    let end = latest["result"]["structuredContent"]["cursor"].clone();
    assert_eq!(
        latest["result"]["structuredContent"]["count"], 3,
        "{latest}"
    );

    let cases = [
        // Messages after the cursor; a numeric and a string id.
        (json!(10), json!({"cursor": start, "timeout_seconds": 5})),
        (
            json!("req-a"),
            json!({"cursor": start, "timeout_seconds": 5}),
        ),
        // Nothing new: timed out, with the same cursor.
        (json!(11), json!({"cursor": end, "timeout_seconds": 1})),
        // Another archive's cursor: reset.
        (
            json!(12),
            json!({"cursor": "w1.0123456789abcdef0123456789abcdef.1", "timeout_seconds": 1}),
        ),
        // Tool errors (`isError` results): the worker's and the gateway's own checks.
        (json!(13), json!({"cursor": "not-a-cursor"})),
        (json!(14), json!({"timeout_seconds": 0})),
        (
            json!(15),
            json!({"account_id": "nobody", "timeout_seconds": 1}),
        ),
        // Arguments that do not decode: a JSON-RPC invalid-params error.
        (json!(16), json!({"limt": 1})),
        (json!(17), json!({"timeout_seconds": "soon"})),
    ];
    for (id, args) in cases {
        let direct = call(&url, &auth, body(&id, &args, false)).await?;
        let rmcp = call(&url, &auth, body(&id, &args, true)).await?;
        assert_eq!(direct, rmcp, "{args}");
        assert_eq!(direct.0, 200);
        assert_eq!(direct.2["id"], id);
    }

    // A direct wait parks, then wakes on the event of a new message.
    let parked = {
        let (url, auth, end) = (url.clone(), auth.clone(), end.clone());
        tokio::spawn(async move {
            call(
                &url,
                &auth,
                body(
                    &json!(20),
                    &json!({"cursor": end, "timeout_seconds": 20}),
                    false,
                ),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let id = stack
        .inject(text(&person("972506610009"), "D9", minutes_ago(0), "wake"))
        .await?;
    let (status, _, woke) = parked.await??;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woke on arrival"
    );
    assert_eq!(status, 200);
    let out = &woke["result"]["structuredContent"];
    assert_eq!(out["timed_out"], false);
    assert_eq!(out["messages"][0]["message_id"], id);
    assert_eq!(woke["result"]["isError"], false);
    Ok(())
}
