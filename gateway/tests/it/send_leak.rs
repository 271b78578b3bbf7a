//! Nothing sent leaks: a unique marker in the text, caption, file name and media bytes never
//! shows in an answer body, a log line or a span field of the gateway, on success or failure
//! (all levels down to TRACE captured as JSON lines, through the project's telemetry filter).

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::send_support::*;

/// A `MakeWriter` appending to a shared buffer.
#[derive(Clone)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_answer_or_log_line_carries_what_was_sent() {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = Capture(Arc::clone(&logs));
    // As `wazap_shared::telemetry::init` with RUST_LOG=trace, into a buffer.
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    tracing_subscriber::registry()
        .with(wazap_shared::telemetry::body_quoting_filter())
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(true)
                .with_writer(move || sink.clone()),
        )
        .with(wazap_shared::telemetry::capture::layer("gateway-test"))
        .init();

    let (w, gw, mcp, _) = setup(&[]).await;
    let marker = format!("LEAKMARK{}", crate::support::random_hex(6));
    let doc = format!("{marker} in the document body").into_bytes();
    let doc_b64 = b64(&doc);
    let mut answers: Vec<Value> = Vec::new();
    let calls = [
        (
            "send_message",
            json!({"chat_id": "c_abc", "request_id": "ok-1", "text": marker}),
        ),
        (
            "send_message",
            json!({"chat_id": "+972501234567", "request_id": "r", "text": marker}),
        ),
        (
            "send_message",
            json!({"chat_id": "c_abc", "request_id": "err-internal", "text": marker}),
        ),
        (
            "send_message",
            json!({"chat_id": "c_abc", "request_id": "r", "text": [marker]}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_abc", "request_id": "ok-2", "kind": "document",
            "data_base64": doc_b64, "mime_type": "text/plain", "filename": format!("{marker}.txt"),
            "caption": marker}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_abc", "request_id": "r", "kind": "document",
            "data_base64": doc_b64, "mime_type": "text/plain", "filename": format!("../{marker}.txt")}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_abc", "request_id": "r", "kind": "audio",
            "data_base64": b64(&ogg_opus()), "mime_type": "audio/ogg", "caption": marker}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_abc", "request_id": "r", "kind": "image",
            "data_base64": doc_b64, "mime_type": format!("image/{marker}")}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_abc", "request_id": "r", "kind": "image",
            "data_base64": format!("{doc_b64}\n"), "mime_type": "image/png"}),
        ),
    ];
    for (tool, args) in &calls {
        answers.push(mcp.call_raw(tool, args.clone()).await.body);
    }
    let api = format!("http://{}/api/send/message", gw.addr);
    let token = format!("Bearer {}", mcp.token.clone().unwrap());
    for body in [
        json!({"chat_id": "c_abc", "request_id": "ok-3", "text": marker}).to_string(),
        json!({"chat_id": "c_abc", "request_id": "r", "text": marker, "extra": marker}).to_string(),
        format!("{{\"chat_id\": \"c_abc\", \"text\": \"{marker}"),
    ] {
        let r = mcp
            .http
            .post(&api)
            .header("Authorization", &token)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        answers.push(Value::String(r.text().await.unwrap()));
    }
    let sent = w.state.sends.lock().unwrap().len();
    assert_eq!(
        sent, 4,
        "the three valid sends and the err-internal one reached the worker"
    );
    gw.stop().await;

    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("\"op\":\"send_message\""),
        "logs were captured"
    );
    for (i, a) in answers.iter().enumerate() {
        let a = a.to_string();
        assert!(!a.contains(&marker), "answer {i} carries the marker: {a}");
        assert!(!a.contains(&doc_b64[..24]), "answer {i} carries the bytes");
        assert!(
            !a.contains("972501234567"),
            "answer {i} carries the phone number"
        );
    }
    for line in logs.lines() {
        assert!(
            !line.contains(&marker),
            "a log line carries the marker: {line}"
        );
        assert!(
            !line.contains(&doc_b64[..24]),
            "a log line carries the bytes: {line}"
        );
        assert!(
            !line.contains("972501234567"),
            "a log line carries the phone: {line}"
        );
    }
}
