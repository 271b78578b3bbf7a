//! The edge shapes of the differential test: one tool call (`list_chats`) under changed
//! headers, `_meta` and bodies, most of which the direct route leaves to rmcp.

use http::Method;
use serde_json::{Value, json};

use super::shapes::{JSON_AND_SSE, Shape, Way, call_body, client_meta, headers, post, way_headers};

/// A legacy `list_chats` call under `pairs` instead of the legacy headers.
fn legacy_under(what: &str, pairs: &[(&'static str, &str)], direct: bool) -> Shape {
    let body = call_body(Way::Legacy, json!(7), "list_chats", &json!({}));
    post(
        format!("legacy headers: {what}"),
        headers(pairs),
        &body,
        direct,
    )
}

pub(super) fn legacy_headers() -> Vec<Shape> {
    let ct = ("content-type", "application/json");
    let accept = ("accept", JSON_AND_SSE);
    let version = |v: &'static str| ("mcp-protocol-version", v);
    vec![
        legacy_under("no version (2025-03-26)", &[accept, ct], true),
        legacy_under("2025-06-18", &[accept, ct, version("2025-06-18")], true),
        legacy_under("2025-03-26", &[accept, ct, version("2025-03-26")], true),
        legacy_under("2024-11-05", &[accept, ct, version("2024-11-05")], true),
        legacy_under(
            "charset",
            &[
                accept,
                ("content-type", "application/json; charset=utf-8"),
                version("2025-11-25"),
            ],
            true,
        ),
        legacy_under(
            "future version",
            &[accept, ct, version("2099-01-01")],
            false,
        ),
        legacy_under(
            "malformed version",
            &[accept, ct, version("2025-13-01")],
            false,
        ),
        legacy_under(
            "two versions",
            &[accept, ct, version("2025-06-18"), version("2025-06-18")],
            false,
        ),
        legacy_under(
            "session id",
            &[accept, ct, version("2025-11-25"), ("mcp-session-id", "abc")],
            false,
        ),
        legacy_under(
            "accept json only",
            &[("accept", "application/json"), ct],
            false,
        ),
        legacy_under(
            "accept weighted",
            &[("accept", "application/json;q=0, text/event-stream"), ct],
            false,
        ),
        legacy_under(
            "accept quoted",
            &[
                ("accept", "application/json, text/event-stream;x=\"a,b\""),
                ct,
            ],
            false,
        ),
        legacy_under("no accept", &[ct, version("2025-11-25")], false),
        legacy_under(
            "text body",
            &[accept, ("content-type", "text/plain")],
            false,
        ),
        legacy_under("no content type", &[accept, version("2025-11-25")], false),
    ]
}

/// A standard `list_chats` call with its headers changed by `edit`.
fn standard_under(what: &str, edit: impl FnOnce(&mut Vec<(&'static str, Vec<u8>)>)) -> Shape {
    let mut h = way_headers(Way::Standard, "list_chats");
    edit(&mut h);
    let body = call_body(Way::Standard, json!(7), "list_chats", &json!({}));
    post(format!("standard headers: {what}"), h, &body, false)
}

pub(super) fn standard_headers() -> Vec<Shape> {
    let drop = |name: &'static str| {
        move |h: &mut Vec<(&'static str, Vec<u8>)>| h.retain(|(k, _)| *k != name)
    };
    let add = |name: &'static str, value: &'static [u8]| {
        move |h: &mut Vec<(&'static str, Vec<u8>)>| h.push((name, value.to_vec()))
    };
    let set = |name: &'static str, value: &'static [u8]| {
        move |h: &mut Vec<(&'static str, Vec<u8>)>| {
            h.retain(|(k, _)| *k != name);
            h.push((name, value.to_vec()));
        }
    };
    vec![
        standard_under("no mcp-method", drop("mcp-method")),
        standard_under("no mcp-name", drop("mcp-name")),
        standard_under("two mcp-method", add("mcp-method", b"tools/call")),
        standard_under("two mcp-name", add("mcp-name", b"list_chats")),
        standard_under("mcp-method tools/list", set("mcp-method", b"tools/list")),
        standard_under("mcp-name not text", set("mcp-name", b"\xff")),
        standard_under("mcp-name another tool", set("mcp-name", b"read_messages")),
        standard_under("session id", add("mcp-session-id", b"abc")),
        standard_under("no accept", drop("accept")),
    ]
}

/// A standard `list_chats` call whose `_meta` is `meta`.
fn with_meta(what: &str, meta: Value, direct: bool) -> Shape {
    let mut body = call_body(Way::Standard, json!(7), "list_chats", &json!({}));
    match meta {
        Value::Null if what == "no _meta" => {
            body["params"]
                .as_object_mut()
                .expect("params")
                .remove("_meta");
        }
        meta => body["params"]["_meta"] = meta,
    }
    post(
        format!("standard _meta: {what}"),
        way_headers(Way::Standard, "list_chats"),
        &body,
        direct,
    )
}

pub(super) fn standard_meta() -> Vec<Shape> {
    let without = |keys: &[&str]| {
        let mut meta = client_meta();
        for key in keys {
            meta.as_object_mut().expect("meta").remove(*key);
        }
        meta
    };
    let replaced = |key: &str, value: Value| {
        let mut meta = client_meta();
        meta[key] = value;
        meta
    };
    let version = "io.modelcontextprotocol/protocolVersion";
    let capabilities = "io.modelcontextprotocol/clientCapabilities";
    vec![
        with_meta(
            "minimal",
            without(&["progressToken", "io.modelcontextprotocol/clientInfo"]),
            true,
        ),
        with_meta("no _meta", Value::Null, false),
        with_meta("null", json!(null), false),
        with_meta("no version", without(&[version]), false),
        with_meta("no capabilities", without(&[capabilities]), false),
        with_meta(
            "older version",
            replaced(version, json!("2025-11-25")),
            false,
        ),
        with_meta("numeric version", replaced(version, json!(2026)), false),
        with_meta(
            "bad capabilities",
            replaced(capabilities, json!("all")),
            false,
        ),
        with_meta(
            "another key",
            replaced("x-test/route", json!("rmcp")),
            false,
        ),
    ]
}

/// Bodies the direct route leaves to rmcp, under the legacy headers.
pub(super) fn bodies() -> Vec<Shape> {
    let h = || way_headers(Way::Legacy, "list_chats");
    let call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let mut shapes: Vec<Shape> = [
        (
            "tools/list",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        ),
        (
            "initialize",
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        ),
        (
            "empty _meta",
            call(json!({"name": "list_chats", "arguments": {}, "_meta": {}})),
        ),
        (
            "a task",
            call(json!({"name": "list_chats", "arguments": {}, "task": {}})),
        ),
        ("no arguments", call(json!({"name": "list_chats"}))),
        (
            "null arguments",
            call(json!({"name": "list_chats", "arguments": null})),
        ),
        (
            "array arguments",
            call(json!({"name": "list_chats", "arguments": [1]})),
        ),
        (
            "a batch",
            json!([call(json!({"name": "list_chats", "arguments": {}}))]),
        ),
        (
            "a notification",
            json!({"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        ),
        (
            "null id",
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        ),
        (
            "jsonrpc 1.0",
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_chats", "arguments": {}}}),
        ),
        (
            "an extra member",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "extra": 1,
            "params": {"name": "list_chats", "arguments": {}}}),
        ),
    ]
    .into_iter()
    .map(|(what, body)| post(format!("body: {what}"), h(), &body, false))
    .collect();
    for (what, raw) in [
        ("escaped name", &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list\u005fchats","arguments":{}}}"#[..]),
        ("not JSON", b"{not json"),
        ("empty", b""),
    ] {
        shapes.push(Shape { what: format!("body: {what}"), method: Method::POST, headers: h(), body: raw.to_vec(), direct: false });
    }
    for method in [Method::GET, Method::DELETE] {
        shapes.push(Shape {
            what: format!("method {method}"),
            method,
            headers: h(),
            body: vec![],
            direct: false,
        });
    }
    shapes
}
