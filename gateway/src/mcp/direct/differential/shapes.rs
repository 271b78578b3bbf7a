//! The request shapes of the differential test, as the raw headers and body a client sends:
//! every tool call of the direct route's rule tests (`request_tests.rs`), the e2e tests
//! (`tests/tests/e2e/direct_route.rs`) and the gateway's integration tests, in both protocol
//! generations; [`super::edges`] adds the changed headers, `_meta` and bodies.

use base64::Engine as _;
use http::Method;
use serde_json::{Value, json};

use super::worker::{GONE_CHAT, UNKNOWN_ACCOUNT_QUERY};

/// One request to `/mcp`, and whether the direct route answers it.
pub(super) struct Shape {
    pub(super) what: String,
    pub(super) method: Method,
    pub(super) headers: Vec<(&'static str, Vec<u8>)>,
    pub(super) body: Vec<u8>,
    pub(super) direct: bool,
}

/// A client's protocol generation.
#[derive(Debug, Clone, Copy)]
pub(super) enum Way {
    /// 2025-11-25 headers, no `_meta` (the bench's and the harness's client).
    Legacy,
    /// 2026-07-28 with `Mcp-Method`, `Mcp-Name` and `_meta`, as rmcp's client sends it.
    Standard,
}

pub(super) const JSON_AND_SSE: &str = "application/json, text/event-stream";

/// The `_meta` rmcp's client sends.
pub(super) fn client_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rmcp", "version": "3.11.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": 3
    })
}

/// `pairs` as owned header values.
pub(super) fn headers(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, Vec<u8>)> {
    pairs
        .iter()
        .map(|(k, v)| (*k, v.as_bytes().to_vec()))
        .collect()
}

/// The headers of a `way` call of `tool`.
pub(super) fn way_headers(way: Way, tool: &str) -> Vec<(&'static str, Vec<u8>)> {
    match way {
        Way::Legacy => headers(&[
            ("accept", JSON_AND_SSE),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-11-25"),
        ]),
        Way::Standard => headers(&[
            ("accept", "text/event-stream, application/json"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ]),
    }
}

/// A `tools/call` body with `id`; a standard call carries rmcp's client `_meta`.
pub(super) fn call_body(way: Way, id: Value, tool: &str, args: &Value) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Way::Standard = way {
        params["_meta"] = client_meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

pub(super) fn post(
    what: String,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: &Value,
    direct: bool,
) -> Shape {
    Shape {
        what,
        method: Method::POST,
        headers,
        body: serde_json::to_vec(body).expect("JSON"),
        direct,
    }
}

/// A `way` call of `tool` with `args`.
fn call(way: Way, tool: &str, args: &Value, direct: bool) -> Shape {
    post(
        format!("{way:?} {tool} {args}"),
        way_headers(way, tool),
        &call_body(way, json!(7), tool, args),
        direct,
    )
}

/// An Ogg/Opus stream's first pages.
fn ogg_opus_b64() -> String {
    base64::engine::general_purpose::STANDARD.encode(crate::media_fixtures::ogg_opus())
}

/// Every tool with good arguments, arguments the worker or the gateway refuses (tool errors),
/// and arguments that do not decode (JSON-RPC errors).
fn tool_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("list_chats", json!({})),
        ("list_chats", json!({"query": "fam", "limit": 5})),
        ("search_contacts", json!({"query": "Dana"})),
        ("search_contacts", json!({"query": UNKNOWN_ACCOUNT_QUERY})),
        ("search_groups", json!({"query": "family"})),
        (
            "read_messages",
            json!({"chat_id": "c_family", "include_previews": true}),
        ),
        ("read_messages", json!({"chat_id": GONE_CHAT})),
        ("search_messages", json!({"query": "sunset"})),
        ("search_attachments", json!({"kinds": ["image"]})),
        ("get_attachment", json!({"attachment_id": "a_1"})),
        ("wait_for_messages", json!({"timeout_seconds": 1})),
        ("wait_for_messages", json!({"timeout_seconds": 99})),
        (
            "send_message",
            json!({"chat_id": "c_family", "request_id": "r-1", "text": "on my way"}),
        ),
        (
            "send_message",
            json!({"chat_id": "+972501234567", "request_id": "r-2", "text": "hi"}),
        ),
        (
            "send_voice_note",
            json!({"chat_id": "c_family", "request_id": "r-3",
            "data_base64": ogg_opus_b64(), "seconds": 3}),
        ),
        (
            "send_media",
            json!({"chat_id": "c_family", "request_id": "r-4", "kind": "image",
            "data_base64": "not base64!", "mime_type": "image/jpeg"}),
        ),
        ("get_send_status", json!({"request_id": "r-1"})),
        // Malformed: an unknown field, a wrong type, a missing field, null where a string goes.
        ("list_chats", json!({"limt": 5})),
        ("list_chats", json!({"limit": "five"})),
        ("send_message", json!({"chat_id": "c_family"})),
        ("read_messages", json!({"chat_id": null})),
    ]
}

/// The shapes on a deployment with every tool on.
pub(super) fn all() -> Vec<Shape> {
    let mut shapes = Vec::new();
    for way in [Way::Legacy, Way::Standard] {
        for (tool, args) in tool_calls() {
            shapes.push(call(way, tool, &args, true));
        }
        for id in [json!("a-1"), json!(9_007_199_254_740_993_u64), json!(-1)] {
            let body = call_body(way, id.clone(), "list_chats", &json!({}));
            let what = format!("{way:?} list_chats with id {id}");
            shapes.push(post(what, way_headers(way, "list_chats"), &body, true));
        }
        shapes.push(call(way, "no_such_tool", &json!({}), false));
    }
    shapes.extend(super::edges::legacy_headers());
    shapes.extend(super::edges::standard_headers());
    shapes.extend(super::edges::standard_meta());
    shapes.extend(super::edges::bodies());
    shapes
}

/// The shapes on a deployment without send and attachment tools: those are unknown to it.
pub(super) fn disabled() -> Vec<Shape> {
    let mut shapes = Vec::new();
    for way in [Way::Legacy, Way::Standard] {
        for (tool, args) in [
            (
                "send_message",
                json!({"chat_id": "c_1", "request_id": "k", "text": "hi"}),
            ),
            ("get_send_status", json!({"request_id": "k"})),
            ("get_attachment", json!({"attachment_id": "a_1"})),
            ("search_attachments", json!({})),
        ] {
            shapes.push(call(way, tool, &args, false));
        }
        shapes.push(call(way, "list_chats", &json!({}), true));
    }
    shapes
}
