//! The tool table: listing, annotations, direct entries, argument errors and error results.

use super::*;
use std::collections::HashMap as Map;

fn config(pairs: &[(&'static str, &'static str)]) -> Config {
    let map: Map<&str, &str> = pairs.iter().copied().collect();
    Config::from_source(&map).unwrap()
}

#[test]
fn read_tools_are_listed_with_annotations_and_schemas() {
    // The send tools are checked in `send_message.rs`.
    let set = ToolSet::new(&config(&[("WAZAP_OUTBOUND", "off")]));
    let mut names: Vec<String> = set
        .router
        .list_all()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
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
    for tool in set.router.list_all() {
        let a = tool.annotations.as_ref().expect("annotations");
        assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(a.idempotent_hint, Some(true));
        assert_eq!(a.open_world_hint, Some(false));
        assert!(a.title.is_some());
        let out = tool.output_schema.as_ref().expect("output schema");
        assert_eq!(out.get("type").and_then(|t| t.as_str()), Some("object"));
        assert!(
            tool.description
                .as_deref()
                .unwrap_or("")
                .contains("untrusted")
        );
    }
    assert_eq!(set.body_limit(Some("list_chats")), DEFAULT_BODY_LIMIT);
    assert_eq!(set.body_limit(None), DEFAULT_BODY_LIMIT);
    assert_eq!(set.max_body_limit(), DEFAULT_BODY_LIMIT);
}

#[test]
fn bad_arguments_name_the_field_never_the_value() {
    use wazap_shared::wire::read::ListChatsRequest;
    let args = |v: serde_json::Value| v.as_object().unwrap().clone();
    let e = parse_args::<ListChatsRequest>(args(serde_json::json!({"limt": 5}))).unwrap_err();
    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(e.message.contains("unknown field `limt`"), "{}", e.message);
    assert!(!e.message.starts_with("failed to deserialize parameters"));
    let e = parse_args::<ListChatsRequest>(args(serde_json::json!({"limit": "secret words"})))
        .unwrap_err();
    assert!(e.message.contains("limit"), "{}", e.message);
    assert!(!e.message.contains("secret"), "{}", e.message);
    let e =
        parse_args::<ListChatsRequest>(args(serde_json::json!({"kind": "secret"}))).unwrap_err();
    assert!(
        e.message.contains("kind") && !e.message.contains("secret"),
        "{}",
        e.message
    );
    let ok = parse_args::<ListChatsRequest>(args(serde_json::json!({"limit": 5}))).unwrap();
    assert_eq!(ok.limit, Some(5));
}

#[test]
fn every_enabled_tool_and_no_other_has_a_direct_entry() {
    let all = [
        "list_chats",
        "search_contacts",
        "search_groups",
        "read_messages",
        "wait_for_messages",
        "search_messages",
        "search_attachments",
        "get_attachment",
        "send_message",
        "send_media",
        "send_voice_note",
        "get_send_status",
    ];
    let on = ToolSet::new(&config(&[("WAZAP_OUTBOUND", "on")]));
    for name in all {
        let tool = on.direct(name).expect(name);
        assert_eq!(tool.name(), name);
        assert_eq!(tool.cancel_on_disconnect(), name == "wait_for_messages");
    }
    let off = ToolSet::new(&config(&[
        ("WAZAP_OUTBOUND", "off"),
        ("WAZAP_ATTACHMENTS", "off"),
    ]));
    for name in all {
        let served = off.router.get(name).is_some();
        assert_eq!(off.direct(name).is_some(), served, "{name}");
    }
    assert!(off.direct("send_message").is_none());
    assert!(off.direct("get_attachment").is_none());
    assert!(off.direct("list_chats").is_some());
}

#[test]
fn header_annotated_schemas_are_found_at_any_depth() {
    let schema = |v: serde_json::Value| v.as_object().unwrap().clone();
    assert!(!annotates_headers(&schema(serde_json::json!({
        "type": "object", "properties": {"chat_id": {"type": "string"}}
    }))));
    assert!(annotates_headers(&schema(serde_json::json!({
        "type": "object",
        "properties": {"chat_id": {"type": "string", "x-mcp-header": "Chat"}}
    }))));
    assert!(annotates_headers(&schema(serde_json::json!({
        "$defs": {"a": {"anyOf": [{"x-mcp-header": "A"}]}}
    }))));
}

#[test]
fn errors_become_is_error_results_with_the_code() {
    let r = error_result(&RpcError::new(ErrorCode::ChatNotFound, "no such chat"));
    assert_eq!(r.is_error, Some(true));
    let text = r.content[0].as_text().expect("text").text.clone();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "chat_not_found");
    assert_eq!(v["error"]["message"], "no such chat");
}
