//! What a send leaves in the media bucket (#26 item 4): the object of a send that fails with a
//! known outcome is gone when the answer comes, unless another request in flight relies on the
//! same bytes; one whose outcome is unknown is left for the worker; a full bucket answers
//! `busy` (429 with `Retry-After` on the JSON API, a tool error over MCP) and keeps no chunk of
//! the refused put.

use std::sync::Arc;

use async_nats::jetstream;
use serde_json::{Value, json};
use wazap_shared::subjects::Subjects;

use crate::send_support::*;
use crate::support::*;

/// A PDF of `n` bytes, different from every other call's.
fn pdf(n: usize) -> Vec<u8> {
    let mut doc = format!("%PDF-1.7\n% {}\n", random_hex(8)).into_bytes();
    doc.resize(n, b'x');
    doc
}

fn doc_args(request_id: &str, doc: &[u8]) -> Value {
    json!({"chat_id": "c_abc", "request_id": request_id, "kind": "document",
        "data_base64": b64(doc), "mime_type": "application/pdf", "filename": "a.pdf"})
}

async fn js() -> jetstream::Context {
    jetstream::new(async_nats::connect(nats_url()).await.expect("NATS"))
}

/// Whether object `name` is stored in `prefix`'s send-media bucket.
async fn exists(prefix: &str, name: &str) -> bool {
    let Ok(store) = js()
        .await
        .get_object_store(Subjects::new(prefix).media_bucket())
        .await
    else {
        return false;
    };
    store.info(name).await.is_ok_and(|i| !i.deleted)
}

/// POST `body` to `/api/send/media` with `mcp`'s token.
async fn api_media(mcp: &Mcp, gw: &Gateway, body: &Value) -> Answer {
    let resp = mcp
        .http
        .post(format!("http://{}/api/send/media", gw.addr))
        .header(
            "Authorization",
            format!("Bearer {}", mcp.token.clone().unwrap()),
        )
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("HTTP");
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    Answer {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_send_s_object_is_gone_by_its_answer_and_an_unknown_one_is_kept() {
    let (_w, gw, mcp, prefix) = setup(&[]).await;
    // Refused by the worker: over MCP and over the JSON API.
    let doc = pdf(300 * 1024);
    let result = mcp
        .call("send_media", doc_args("err-session_cannot_send", &doc))
        .await;
    assert_eq!(text_json(&result)["error"]["code"], "session_cannot_send");
    assert!(
        !exists(&prefix, &sha256_hex(&doc)).await,
        "a refused send's object outlived its answer"
    );
    let doc = pdf(300 * 1024);
    let a = api_media(&mcp, &gw, &doc_args("err-internal", &doc)).await;
    assert_eq!(a.status, 500);
    assert!(!exists(&prefix, &sha256_hex(&doc)).await);

    // The worker may still read the bytes of a send whose outcome is unknown, and it deletes
    // those it was sent.
    let doc = pdf(300 * 1024);
    let result = mcp
        .call("send_media", doc_args("err-send_outcome_unknown", &doc))
        .await;
    assert_eq!(text_json(&result)["error"]["code"], "send_outcome_unknown");
    assert!(exists(&prefix, &sha256_hex(&doc)).await);
    let doc = pdf(300 * 1024);
    let result = mcp.call("send_media", doc_args("sent-1", &doc)).await;
    assert_eq!(result["isError"], false, "{result}");
    assert!(exists(&prefix, &sha256_hex(&doc)).await);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_bytes_in_flight_for_another_request_are_not_deleted_by_a_failure() {
    let (w, gw, mcp, prefix) = setup(&[("WAZAP_MCP_MAX_CONCURRENCY", "4")]).await;
    let mcp = Arc::new(mcp);
    let doc = pdf(500 * 1024);
    let name = sha256_hex(&doc);
    let held = {
        let (mcp, args) = (Arc::clone(&mcp), doc_args("hold", &doc));
        tokio::spawn(async move { mcp.call("send_media", args).await })
    };
    w.wait_held(1).await;
    // The same bytes for a send the worker refuses, while the first is still with the worker.
    let result = mcp
        .call("send_media", doc_args("err-send_request_conflict", &doc))
        .await;
    assert_eq!(text_json(&result)["error"]["code"], "send_request_conflict");
    assert!(
        exists(&prefix, &name).await,
        "deleted while another request relied on it"
    );
    assert_eq!(stored_object(&prefix, &name).await, doc);
    w.state.release.notify_waiters();
    let result = held.await.expect("join");
    assert_eq!(result["isError"], false, "{result}");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_bucket_is_busy_and_keeps_nothing_of_the_refused_put() {
    let (_w, gw, mcp, prefix) = setup(&[]).await;
    // A test-only small bucket: made before the gateway first opens it, it keeps its limit.
    let bucket = Subjects::new(&prefix).media_bucket();
    js().await
        .create_object_store(jetstream::object_store::Config {
            bucket: bucket.clone(),
            max_bytes: 1024 * 1024,
            ..Default::default()
        })
        .await
        .expect("small bucket");
    let doc = pdf(2 * 1024 * 1024);
    let a = api_media(&mcp, &gw, &doc_args("big-1", &doc)).await;
    assert_eq!(
        (a.status.as_u16(), a.error_code()),
        (429, "busy"),
        "{}",
        a.body
    );
    assert_eq!(a.headers["retry-after"], "1");
    let result = mcp.call("send_media", doc_args("big-2", &doc)).await;
    assert_eq!(text_json(&result)["error"]["code"], "busy", "{result}");
    let mut stream = js()
        .await
        .get_stream(format!("OBJ_{bucket}"))
        .await
        .expect("stream");
    let state = &stream.info().await.expect("info").state;
    assert_eq!(
        (state.messages, state.bytes),
        (0, 0),
        "a refused put left chunks"
    );
    // What fits still goes.
    let result = mcp
        .call("send_media", doc_args("small-1", &pdf(100 * 1024)))
        .await;
    assert_eq!(result["isError"], false, "{result}");
    gw.stop().await;
}
