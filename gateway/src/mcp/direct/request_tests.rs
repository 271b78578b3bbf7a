//! Every rule of [`super`]: which headers and bodies the direct route takes, one rule per case.

use std::collections::HashMap;

use http::HeaderValue;
use serde_json::{Value, json};

use super::*;
use crate::config::Config;
use crate::mcp::ToolSet;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_static(v));
    }
    h
}

const PLAIN: [(&str, &str); 2] = [
    ("accept", "application/json, text/event-stream"),
    ("content-type", "application/json"),
];

/// The headers rmcp's client sends on a 2026-07-28 call of `list_chats`.
const STANDARD: [(&str, &str); 5] = [
    ("accept", "text/event-stream, application/json"),
    ("content-type", "application/json"),
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "list_chats"),
];

fn with(
    base: &[(&'static str, &'static str)],
    extra: &[(&'static str, &'static str)],
) -> HeaderMap {
    let mut pairs = base.to_vec();
    pairs.extend_from_slice(extra);
    headers(&pairs)
}

fn without(base: &[(&'static str, &'static str)], name: &str) -> HeaderMap {
    let pairs: Vec<_> = base.iter().copied().filter(|(k, _)| *k != name).collect();
    headers(&pairs)
}

#[test]
fn legacy_headers_take_the_direct_route() {
    assert_eq!(header_route(&headers(&PLAIN)), Some(HeaderRoute::Legacy));
    for version in ["2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"] {
        let h = {
            let mut h = headers(&PLAIN);
            h.insert("mcp-protocol-version", HeaderValue::from_static(version));
            h
        };
        assert_eq!(header_route(&h), Some(HeaderRoute::Legacy), "{version}");
    }
    // Content-Type parameters are fine, as for rmcp.
    let h = headers(&[
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json; charset=utf-8"),
    ]);
    assert_eq!(header_route(&h), Some(HeaderRoute::Legacy));
}

#[test]
fn other_headers_go_to_rmcp() {
    for h in [
        // Unknown or future versions, two version headers, a session id.
        with(&PLAIN, &[("mcp-protocol-version", "2099-01-01")]),
        with(&PLAIN, &[("mcp-protocol-version", "2025-13-01")]),
        with(
            &PLAIN,
            &[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        ),
        with(&PLAIN, &[("mcp-session-id", "abc")]),
        // Accept without one of the types, weighted, quoted; another body type.
        headers(&[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ]),
        headers(&[
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "application/json"),
        ]),
        headers(&[
            ("accept", "application/json, text/event-stream;x=\"a,b\""),
            ("content-type", "application/json"),
        ]),
        headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "text/plain"),
        ]),
        without(&PLAIN, "content-type"),
    ] {
        assert_eq!(header_route(&h), None, "{h:?}");
    }
}

#[test]
fn standard_headers_need_one_matching_method_and_a_name() {
    assert_eq!(
        header_route(&headers(&STANDARD)),
        Some(HeaderRoute::Standard { name: "list_chats" })
    );
    for h in [
        // SEP-2243: Mcp-Method and Mcp-Name are required, single, and the method is the body's.
        without(&STANDARD, "mcp-method"),
        without(&STANDARD, "mcp-name"),
        with(&STANDARD, &[("mcp-method", "tools/call")]),
        with(&STANDARD, &[("mcp-name", "list_chats")]),
        {
            let mut h = headers(&STANDARD);
            h.insert("mcp-method", HeaderValue::from_static("tools/list"));
            h
        },
        {
            let mut h = headers(&STANDARD);
            h.insert("mcp-name", HeaderValue::from_bytes(&[0xff]).unwrap());
            h
        },
        // The session rule and the media types hold for this version too.
        with(&STANDARD, &[("mcp-session-id", "abc")]),
        without(&STANDARD, "accept"),
    ] {
        assert_eq!(header_route(&h), None, "{h:?}");
    }
}

fn tools() -> ToolSet {
    let map: HashMap<&str, &str> = [("WAZAP_OUTBOUND", "off")].into_iter().collect();
    ToolSet::new(&Config::from_source(&map).unwrap())
}

fn parse(route: HeaderRoute<'_>, body: &Value) -> Option<DirectCall> {
    let set = tools();
    DirectCall::parse(
        route,
        &serde_json::to_vec(body).unwrap(),
        |name| set.direct(name),
        ProtocolVersion::KNOWN_VERSIONS,
    )
}

fn call(name: &str, extra_params: Value) -> Value {
    let mut params = json!({"name": name, "arguments": {"limit": 1}});
    if let Value::Object(extra) = extra_params {
        params.as_object_mut().unwrap().extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

/// The `_meta` rmcp's client sends.
fn client_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rmcp", "version": "3.11.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": 3
    })
}

const LIST: HeaderRoute<'static> = HeaderRoute::Standard { name: "list_chats" };

#[test]
fn a_plain_legacy_call_of_an_enabled_tool_is_direct() {
    for tool in [
        "list_chats",
        "read_messages",
        "wait_for_messages",
        "search_messages",
    ] {
        let c = parse(HeaderRoute::Legacy, &call(tool, json!({}))).expect(tool);
        assert_eq!(c.tool.name(), tool);
        assert_eq!(c.peer, Peer::Legacy);
        assert_eq!(c.id, RequestId::Number(7));
        assert_eq!(c.arguments["limit"], 1);
    }
    let mut string_id = call("list_chats", json!({}));
    string_id["id"] = json!("a");
    let c = parse(HeaderRoute::Legacy, &string_id).expect("string id");
    assert_eq!(c.id, RequestId::String("a".into()));
}

#[test]
fn legacy_calls_with_anything_more_go_to_rmcp() {
    let wait = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    for other in [
        // A disabled tool (outbound is off), an unknown one, another method.
        call("send_message", json!({})),
        call("no_such_tool", json!({})),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        // `_meta` (even empty), a task, no arguments, null or non-object arguments.
        call("list_chats", json!({"_meta": {}})),
        call("list_chats", json!({"task": {}})),
        wait(json!({"name": "wait_for_messages"})),
        wait(json!({"name": "wait_for_messages", "arguments": null})),
        wait(json!({"name": "wait_for_messages", "arguments": [1]})),
        // A batch, a notification, a null id, a wrong version, an extra member.
        json!([call("list_chats", json!({}))]),
        json!({"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "extra": 1,
            "params": {"name": "list_chats", "arguments": {}}}),
    ] {
        assert!(parse(HeaderRoute::Legacy, &other).is_none(), "{other}");
    }
    // An escaped name is not borrowed: rmcp's.
    let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list\u005fchats","arguments":{}}}"#;
    let set = tools();
    assert!(DirectCall::parse(HeaderRoute::Legacy, escaped, |n| set.direct(n), &[]).is_none());
}

#[test]
fn a_standard_call_as_rmcps_client_sends_it_is_direct() {
    let c = parse(LIST, &call("list_chats", json!({"_meta": client_meta()}))).expect("direct");
    assert_eq!(c.peer, Peer::Standard);
    assert_eq!(c.tool.name(), "list_chats");
    // clientInfo and progressToken are optional.
    let mut meta = client_meta();
    meta.as_object_mut().unwrap().remove("progressToken");
    meta.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    assert!(parse(LIST, &call("list_chats", json!({"_meta": meta}))).is_some());
}

#[test]
fn standard_calls_breaking_any_rule_go_to_rmcp() {
    let meta_with = |key: &str, value: Value| {
        let mut meta = client_meta();
        meta[key] = value;
        json!({"_meta": meta})
    };
    let meta_without = |key: &str| {
        let mut meta = client_meta();
        meta.as_object_mut().unwrap().remove(key);
        json!({"_meta": meta})
    };
    let version = "io.modelcontextprotocol/protocolVersion";
    let capabilities = "io.modelcontextprotocol/clientCapabilities";
    for (what, body) in [
        // No `_meta`, or one without the version or the capabilities (rmcp: 400).
        ("no _meta", call("list_chats", json!({}))),
        ("null _meta", call("list_chats", json!({"_meta": null}))),
        ("no version", call("list_chats", meta_without(version))),
        (
            "no capabilities",
            call("list_chats", meta_without(capabilities)),
        ),
        // A version other than the header's (rmcp: header mismatch), or malformed.
        (
            "older version",
            call("list_chats", meta_with(version, json!("2025-11-25"))),
        ),
        (
            "numeric version",
            call("list_chats", meta_with(version, json!(2026))),
        ),
        // Capabilities that do not decode.
        (
            "bad capabilities",
            call("list_chats", meta_with(capabilities, json!("all"))),
        ),
        // A key rmcp's client does not send.
        (
            "other key",
            call("list_chats", meta_with("x-test/route", json!("rmcp"))),
        ),
        // Mcp-Name naming another tool than the body.
        (
            "other name",
            call("read_messages", json!({"_meta": client_meta()})),
        ),
    ] {
        assert!(parse(LIST, &body).is_none(), "{what}");
    }
    // A version the server does not support.
    let set = tools();
    let body = serde_json::to_vec(&call("list_chats", json!({"_meta": client_meta()}))).unwrap();
    assert!(
        DirectCall::parse(
            LIST,
            &body,
            |n| set.direct(n),
            &[ProtocolVersion::V_2025_11_25]
        )
        .is_none()
    );
    // A legacy route never takes `_meta`, a standard one never goes without.
    assert!(
        parse(
            HeaderRoute::Legacy,
            &call("list_chats", json!({"_meta": client_meta()}))
        )
        .is_none()
    );
}

#[test]
fn the_standard_rules_are_for_the_version_rmcp_gives_them() {
    // If rmcp moved the standard-header version, these rules would be for the wrong one.
    assert_eq!(
        ProtocolVersion::STANDARD_HEADERS,
        ProtocolVersion::V_2026_07_28
    );
    assert!(ProtocolVersion::KNOWN_VERSIONS.contains(&ProtocolVersion::V_2026_07_28));
    assert_eq!(
        RequestMetaObject::DRAFT_REQUIRED_KEYS.to_vec(),
        [
            "io.modelcontextprotocol/protocolVersion",
            "io.modelcontextprotocol/clientCapabilities"
        ]
    );
}
