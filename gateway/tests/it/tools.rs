//! The MCP surface: tool listing, structured results, tool errors, previews, request shapes.

use serde_json::{Value, json};

use crate::support::*;

async fn setup() -> (FakeWorker, Gateway, Mcp) {
    let prefix = prefix();
    let signer = Signer::generate();
    let worker = FakeWorker::start(&prefix, vec![signer.jwk.clone()]).await;
    let gw = Gateway::start(&prefix, &[]).await;
    gw.wait_ready().await;
    let mcp = Mcp::new(gw.mcp_url(), Some(signer.token()));
    (worker, gw, mcp)
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_shows_four_annotated_tools_with_schemas() {
    let (_w, gw, mcp) = setup().await;
    let result = mcp.list_tools().await;
    // The send tools (WAZAP_OUTBOUND=on, not read-only) are checked in `send.rs`.
    let is_send = |name: &str| name.starts_with("send_") || name == "get_send_status";
    let tools: Vec<&Value> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| !is_send(t["name"].as_str().unwrap()))
        .collect();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "get_attachment",
            "list_chats",
            "read_messages",
            "search_attachments",
            "search_contacts",
            "search_groups",
            "search_messages",
            "wait_for_messages"
        ]
    );
    for t in &tools {
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], true, "{t}");
        assert_eq!(a["destructiveHint"], false);
        assert_eq!(a["idempotentHint"], true);
        assert_eq!(a["openWorldHint"], false);
        assert!(a["title"].is_string());
        assert_eq!(t["outputSchema"]["type"], "object", "{}", t["name"]);
        assert_eq!(t["inputSchema"]["type"], "object");
        assert!(t["description"].as_str().unwrap().contains("untrusted"));
    }
    let read = tools.iter().find(|t| t["name"] == "read_messages").unwrap();
    assert!(read["inputSchema"]["properties"]["chat_id"]["description"].is_string());
    assert!(read["outputSchema"]["properties"]["messages"].is_object());
    assert!(read["outputSchema"]["properties"].get("previews").is_none());
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_returns_structured_content_and_the_same_text() {
    let (_w, gw, mcp) = setup().await;
    let result = mcp.call("search_groups", json!({"query": "fam"})).await;
    assert_eq!(result["isError"], false);
    let structured = &result["structuredContent"];
    assert_eq!(structured["groups"][0]["chat_id"], "c_family");
    assert_eq!(structured["groups"][0]["participant_count"], 4);
    assert_eq!(&text_json(&result), structured);
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_errors_become_is_error_results_with_the_code() {
    let (_w, gw, mcp) = setup().await;
    let result = mcp
        .call("search_contacts", json!({"query": "nobody"}))
        .await;
    assert_eq!(result["isError"], true);
    assert_eq!(text_json(&result)["error"]["code"], "account_not_found");
    assert!(result.get("structuredContent").is_none());

    let result = mcp
        .call("read_messages", json!({"chat_id": "c_gone"}))
        .await;
    assert_eq!(result["isError"], true);
    assert_eq!(text_json(&result)["error"]["code"], "chat_not_found");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_are_protocol_errors() {
    let (w, gw, mcp) = setup().await;
    for args in [json!({"limt": 5}), json!({"limit": "five"})] {
        let a = mcp.call_raw("list_chats", args).await;
        assert!(a.body.get("result").is_none(), "{}", a.body);
        assert_eq!(a.body["error"]["code"], -32602, "{}", a.body);
    }
    assert!(
        w.state.grants.lock().unwrap().is_empty(),
        "reached the worker"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn previews_become_image_content() {
    let (_w, gw, mcp) = setup().await;
    let result = mcp
        .call(
            "read_messages",
            json!({"chat_id": "c_family", "include_previews": true}),
        )
        .await;
    assert_eq!(result["isError"], false);
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 3, "{result}");
    assert_eq!(content[0]["type"], "text");
    for (block, data) in content[1..].iter().zip(["/9j/AAAA", "/9j/BBBB"]) {
        assert_eq!(block["type"], "image");
        assert_eq!(block["mimeType"], "image/jpeg");
        assert_eq!(block["data"], data);
    }
    let structured = &result["structuredContent"];
    assert_eq!(structured["preview_count"], 2);
    assert!(structured.get("previews").is_none());
    assert!(!content[0]["text"].as_str().unwrap().contains("/9j/"));
    gw.stop().await;
}

/// The shapes other clients can copy: a legacy `initialize` (optional) and a 2026-07-28
/// per-request call with `_meta` and the SEP-2243 headers.
#[tokio::test(flavor = "multi_thread")]
async fn legacy_initialize_and_2026_requests_work_statelessly() {
    let (_w, gw, mcp) = setup().await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    let a = mcp.post(&init, &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let r = &a.body["result"];
    assert_eq!(r["protocolVersion"], "2025-11-25");
    assert!(r["instructions"].as_str().unwrap().contains("untrusted"));
    assert!(r["capabilities"]["tools"].is_object());
    assert!(a.headers.get("mcp-session-id").is_none(), "stateless");

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "list_chats", "arguments": {}, "_meta": meta}});
    let a = mcp
        .post(
            &body,
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "list_chats"),
            ],
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let r: &Value = &a.body["result"];
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["chats"][0]["name"], "Family");
    gw.stop().await;
}
