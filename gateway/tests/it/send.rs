//! The send tools over `/mcp` against a fake worker: listing and annotations, results, media
//! hand-over through the JetStream object store (never in the RPC body), validation codes with
//! nothing forwarded, worker codes, and `WAZAP_OUTBOUND=off`.

use serde_json::{Value, json};

use crate::send_support::*;
use crate::support::*;

const SEND_TOOLS: [&str; 4] = [
    "send_message",
    "send_media",
    "send_voice_note",
    "get_send_status",
];

#[tokio::test(flavor = "multi_thread")]
async fn send_tools_are_listed_with_their_annotations() {
    let (_w, gw, mcp, _) = setup(&[]).await;
    let result = mcp.list_tools().await;
    let tools = result["tools"].as_array().expect("tools");
    for name in SEND_TOOLS {
        let t = tools.iter().find(|t| t["name"] == name).expect(name);
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], name == "get_send_status", "{name}");
        assert_eq!(a["destructiveHint"], false);
        assert_eq!(a["idempotentHint"], true);
        assert_eq!(a["openWorldHint"], true);
        assert_eq!(t["outputSchema"]["type"], "object");
        assert!(t["outputSchema"]["properties"]["state"].is_object());
        assert!(t["inputSchema"]["properties"]["request_id"].is_object());
        assert!(t["inputSchema"]["properties"].get("account_id").is_none());
        let d = t["description"].as_str().unwrap();
        assert!(d.contains("untrusted"), "{name}");
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn outbound_off_lists_no_send_tool_and_has_no_send_api() {
    let (w, gw, mcp, _) = setup(&[("WAZAP_OUTBOUND", "off")]).await;
    let result = mcp.list_tools().await;
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_messages"));
    assert!(names.iter().all(|n| !SEND_TOOLS.contains(n)), "{names:?}");
    let a = mcp
        .call_raw(
            "send_message",
            json!({"chat_id": "c_1", "request_id": "r", "text": "hi"}),
        )
        .await;
    assert_eq!(a.status, 200);
    assert!(a.body.get("error").is_some(), "{}", a.body);
    for route in ["message", "media", "voice", "status"] {
        let r = mcp
            .http
            .post(format!("http://{}/api/send/{route}", gw.addr))
            .header(
                "Authorization",
                format!("Bearer {}", mcp.token.clone().unwrap()),
            )
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{route}");
    }
    assert!(w.state.sends.lock().unwrap().is_empty());
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn send_message_forwards_and_returns_the_result() {
    let (w, gw, mcp, _) = setup(&[]).await;
    let args = json!({"chat_id": "c_abc123", "request_id": "reply-1", "text": "on my way"});
    let result = mcp.call("send_message", args.clone()).await;
    assert_eq!(result["isError"], false, "{result}");
    let s = &result["structuredContent"];
    assert_eq!(s["state"], "accepted");
    assert_eq!(s["request_id"], "reply-1");
    assert_eq!(s["chat_id"], "c_abc123");
    assert_eq!(s["message_id"], "m_sent1");
    assert_eq!(s["duplicate"], false);
    assert!(s["accepted_at"].is_string());
    assert_eq!(&text_json(&result), s);
    let sends = w.state.sends.lock().unwrap().clone();
    assert_eq!(sends, vec![("send_message".to_owned(), args)]);
    assert_eq!(w.state.grants.lock().unwrap()[0].connection_id, "conn_test");

    let result = mcp
        .call("get_send_status", json!({"request_id": "reply-1"}))
        .await;
    assert_eq!(result["structuredContent"]["duplicate"], true);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn media_goes_through_the_object_store_and_only_a_reference_rides_the_rpc() {
    let (w, gw, mcp, prefix) = setup(&[]).await;
    let photo = jpeg();
    let result = mcp
        .call(
            "send_media",
            json!({"chat_id": "c_abc123", "request_id": "photo-1", "kind": "image",
                   "data_base64": b64(&photo), "mime_type": "image/jpeg",
                   "caption": "the view"}),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["state"], "accepted");

    let voice = ogg_opus();
    let result = mcp
        .call(
            "send_voice_note",
            json!({"chat_id": "c_abc123", "request_id": "voice-1",
                   "data_base64": b64(&voice), "seconds": 4}),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");

    let sends = w.state.sends.lock().unwrap().clone();
    assert_eq!(sends.len(), 2);
    let (op, body) = &sends[0];
    assert_eq!(op, "send_media");
    assert!(body.get("data_base64").is_none(), "bytes rode the RPC body");
    assert_eq!(body["kind"], "image");
    assert_eq!(body["mime_type"], "image/jpeg");
    assert_eq!(body["caption"], "the view");
    assert_eq!(body["media"]["object"], sha256_hex(&photo));
    assert_eq!(body["media"]["size"], photo.len());
    assert_eq!(stored_object(&prefix, &sha256_hex(&photo)).await, photo);

    let (op, body) = &sends[1];
    assert_eq!(op, "send_voice_note");
    assert!(body.get("data_base64").is_none());
    assert_eq!(body["seconds"], 4);
    assert_eq!(body["media"]["object"], sha256_hex(&voice));
    assert_eq!(body["media"]["size"], voice.len());
    assert_eq!(stored_object(&prefix, &sha256_hex(&voice)).await, voice);
    gw.stop().await;
}

/// The `error.code` of an `isError` tool result.
fn tool_error(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    text_json(result)["error"]["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_its_code_and_nothing_reaches_the_worker() {
    let (w, gw, mcp, _) = setup(&[]).await;
    let marker = "MARKER-5f3a9c";
    let text = |chat: &str| json!({"chat_id": chat, "request_id": "r-1", "text": marker});
    let cases: Vec<(&str, Value, &str)> = vec![
        ("send_message", text("+972501234567"), "invalid_argument"),
        (
            "send_message",
            text("972501234567@s.whatsapp.net"),
            "invalid_argument",
        ),
        (
            "send_message",
            text("https://wa.me/972501234567"),
            "invalid_argument",
        ),
        (
            "send_message",
            json!({"chat_id": "c_1", "request_id": "a b", "text": marker}),
            "invalid_argument",
        ),
        (
            "send_message",
            json!({"chat_id": "c_1", "request_id": "r", "text": ""}),
            "invalid_argument",
        ),
        (
            "send_message",
            json!({"chat_id": "c_1", "request_id": "r", "text": "x".repeat(65_537)}),
            "invalid_argument",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "image",
            "data_base64": format!("data:image/jpeg;base64,{}", b64(&jpeg())), "mime_type": "image/jpeg"}),
            "invalid_base64",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "image",
            "data_base64": b64(&jpeg()).replace('=', ""), "mime_type": "image/jpeg"}),
            "invalid_base64",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "image",
            "data_base64": b64(&jpeg()), "mime_type": "image/png"}),
            "invalid_media",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "audio",
            "data_base64": b64(&ogg_opus()), "mime_type": "audio/ogg", "caption": marker}),
            "invalid_media",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "document",
            "data_base64": b64(b"%PDF-1.7"), "mime_type": "application/pdf", "filename": "../x.pdf"}),
            "invalid_media",
        ),
        (
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "image",
            "data_base64": b64(&vec![0xFF; 8 * 1024 * 1024 + 1]), "mime_type": "image/jpeg"}),
            "media_too_large",
        ),
        (
            "send_voice_note",
            json!({"chat_id": "c_1", "request_id": "r",
            "data_base64": b64(&jpeg()), "seconds": 3}),
            "invalid_media",
        ),
        (
            "send_voice_note",
            json!({"chat_id": "c_1", "request_id": "r",
            "data_base64": b64(&ogg_opus()), "seconds": 3601}),
            "invalid_argument",
        ),
        (
            "get_send_status",
            json!({"request_id": "no spaces"}),
            "invalid_argument",
        ),
    ];
    for (tool, args, code) in cases {
        let result = mcp.call(tool, args.clone()).await;
        assert_eq!(
            tool_error(&result),
            code,
            "{tool} {}",
            &args.to_string()[..80.min(args.to_string().len())]
        );
        assert!(
            !result.to_string().contains(marker),
            "{tool} echoed the text"
        );
        assert!(
            !result.to_string().contains("972501234567"),
            "{tool} echoed the chat"
        );
    }
    // Wrong JSON types are protocol errors, not tool results.
    let a = mcp
        .call_raw(
            "send_voice_note",
            json!({"chat_id": "c_1", "request_id": "r", "data_base64": "", "seconds": "ten"}),
        )
        .await;
    assert_eq!(a.body["error"]["code"], -32602, "{}", a.body);
    let a = mcp
        .call_raw("send_media", json!({"chat_id": "c_1", "request_id": "r", "kind": "gif", "data_base64": "", "mime_type": "x/y"}))
        .await;
    assert_eq!(a.body["error"]["code"], -32602, "{}", a.body);
    assert!(
        w.state.sends.lock().unwrap().is_empty(),
        "a bad request reached the worker"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_codes_become_tool_errors() {
    let (_w, gw, mcp, _) = setup(&[]).await;
    for code in [
        "send_not_permitted",
        "session_cannot_send",
        "send_request_conflict",
        "send_journal_full",
    ] {
        let result = mcp
            .call(
                "send_message",
                json!({"chat_id": "c_1", "request_id": format!("err-{code}"), "text": "hi"}),
            )
            .await;
        assert_eq!(tool_error(&result), code);
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_send_envelope_is_12_mib_and_read_tools_keep_64_kib() {
    let (w, gw, mcp, _) = setup(&[]).await;
    // Over 12 MiB: refused before any tool runs, and the client receives the 413.
    let huge = "A".repeat(12 * 1024 * 1024);
    let a = mcp
        .call_raw(
            "send_media",
            json!({"chat_id": "c_1", "request_id": "r", "kind": "image",
                   "data_base64": huge, "mime_type": "image/jpeg"}),
        )
        .await;
    assert_eq!(a.status, 413);
    assert_eq!(a.error_code(), "request_too_large");
    // 128 KiB (the longest text, 65,536 two-byte characters) is fine for a send tool but not
    // for a read tool.
    let text = "é".repeat(65_536);
    let result = mcp
        .call(
            "send_message",
            json!({"chat_id": "c_1", "request_id": "big", "text": text}),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");
    let a = mcp
        .call_raw("search_contacts", json!({"query": "q".repeat(100 * 1024)}))
        .await;
    assert_eq!(a.status, 413);
    assert_eq!(w.state.sends.lock().unwrap().len(), 1);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn media_of_exactly_8_mib_is_stored_whole() {
    let (w, gw, mcp, prefix) = setup(&[]).await;
    let mut doc = b"%PDF-1.7\n".to_vec();
    doc.resize(8 * 1024 * 1024, b'x');
    let result = mcp
        .call(
            "send_media",
            json!({"chat_id": "c_abc123", "request_id": "big-1", "kind": "document",
                   "data_base64": b64(&doc), "mime_type": "application/pdf",
                   "filename": "report.pdf"}),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");
    let body = w.state.sends.lock().unwrap()[0].1.clone();
    assert_eq!(body["media"]["size"], doc.len());
    assert_eq!(body["filename"], "report.pdf");
    let stored = stored_object(&prefix, &sha256_hex(&doc)).await;
    assert!(
        stored == doc,
        "the stored object differs from the bytes sent"
    );
    gw.stop().await;
}
