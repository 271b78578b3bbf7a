//! Every tool lists annotations and an outputSchema, every structured result validates
//! against its schema (on the demo archive, which has every kind of message), and every
//! advertised schema is standard JSON Schema that a strict draft 2020-12 validator accepts.

use serde_json::{Value, json};
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

/// The eight read tools of DESIGN §5 (with attachments on, the default).
const READ_TOOLS: [&str; 8] = [
    "list_chats",
    "search_contacts",
    "search_groups",
    "read_messages",
    "wait_for_messages",
    "search_messages",
    "search_attachments",
    "get_attachment",
];
/// The four send tools; `get_send_status` only reads.
const SEND_TOOLS: [&str; 4] = [
    "send_message",
    "send_media",
    "send_voice_note",
    "get_send_status",
];

fn validate(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).expect("outputSchema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "structuredContent violates outputSchema: {errors:?}\n{instance}"
    );
}

#[tokio::test]
async fn tools_list_annotations_and_results_match_their_schemas() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Demo).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;

    let tools = mcp.tools().await?;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut expected: Vec<&str> = READ_TOOLS.iter().chain(&SEND_TOOLS).copied().collect();
    let mut listed = names.clone();
    expected.sort_unstable();
    listed.sort_unstable();
    assert_eq!(listed, expected, "all twelve tools, nothing else");
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let a = &tool["annotations"];
        let sends = SEND_TOOLS.contains(&name) && name != "get_send_status";
        assert_eq!(a["readOnlyHint"], !sends, "{tool}");
        assert_eq!(a["destructiveHint"], false, "{tool}");
        assert_eq!(a["idempotentHint"], true, "{tool}");
        if sends {
            assert_eq!(
                a["openWorldHint"], true,
                "sends reach the outside world: {tool}"
            );
        } else {
            assert!(a["openWorldHint"].is_boolean(), "{tool}");
        }
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{tool}"
        );
        // Every input property is described for the agent.
        for (field, prop) in tool["inputSchema"]["properties"]
            .as_object()
            .into_iter()
            .flatten()
        {
            assert!(
                prop["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{field} of {tool}"
            );
        }
    }
    let schema = |name: &str| -> Value {
        tools.iter().find(|t| t["name"] == name).expect("tool")["outputSchema"].clone()
    };

    let chats = mcp.call("list_chats", json!({"limit": 200})).await?;
    let listed = chats.ok().clone();
    validate(&schema("list_chats"), &listed);
    // The text block carries the same JSON as structuredContent.
    assert_eq!(serde_json::from_str::<Value>(&chats.text)?, listed);
    let all = listed["chats"].as_array().expect("chats");
    assert!(all.len() >= 8, "demo has 8+ chats, got {}", all.len());
    assert!(all.iter().filter(|c| c["kind"] == "group").count() >= 3);
    assert_eq!(listed["account_id"], "default");

    let groups = mcp.call("search_groups", json!({"query": "a"})).await?;
    validate(&schema("search_groups"), groups.ok());
    let contacts = mcp.call("search_contacts", json!({"query": "a"})).await?;
    validate(&schema("search_contacts"), contacts.ok());
    assert!(
        !contacts.ok()["contacts"]
            .as_array()
            .expect("contacts")
            .is_empty()
    );

    // Every chat reads and validates, with previews where there are photos.
    let mut previews = 0;
    for chat in all {
        let r = mcp
            .call(
                "read_messages",
                json!({"chat_id": chat["chat_id"], "limit": 200, "include_previews": true}),
            )
            .await?;
        validate(&schema("read_messages"), r.ok());
        assert_eq!(r.ok()["sync"], "demo");
        assert_eq!(
            r.images.len() as u64,
            r.ok()["preview_count"].as_u64().expect("preview_count")
        );
        for (mime, data) in &r.images {
            assert_eq!(mime, "image/jpeg");
            assert!(data.starts_with("/9j/"), "a JPEG in base64");
        }
        previews += r.images.len();
    }
    assert!(previews >= 1, "the demo's photos give previews");
    let status = mcp
        .call("read_messages", json!({"chat_id": "status"}))
        .await?;
    validate(&schema("read_messages"), status.ok());
    assert!(
        status.ok()["count"].as_u64().expect("count") >= 3,
        "demo has 3+ stories in 24 h"
    );

    // The other read tools' results validate too.
    let found = mcp
        .call("search_messages", json!({"query": "ibirapuera"}))
        .await?;
    validate(&schema("search_messages"), found.ok());
    assert!(
        !found.ok()["messages"]
            .as_array()
            .expect("messages")
            .is_empty()
    );
    let files = mcp
        .call("search_attachments", json!({"kinds": ["document"]}))
        .await?;
    validate(&schema("search_attachments"), files.ok());
    let first = files.ok()["attachments"][0]["attachment_id"].clone();
    let file = mcp
        .call("get_attachment", json!({"attachment_id": first}))
        .await?;
    validate(&schema("get_attachment"), file.ok());
    let waited = mcp
        .call("wait_for_messages", json!({"timeout_seconds": 1}))
        .await?;
    validate(&schema("wait_for_messages"), waited.ok());
    assert_eq!(waited.ok()["timed_out"], true);
    Ok(())
}

/// The formats draft 2020-12 defines; schemars' own (`uint32`, `int64`, `double`, …) are not
/// among them, and clients such as the official TypeScript SDK warn about each one.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every string-valued `format` keyword in `value`, with its JSON pointer.
fn formats(value: &Value, pointer: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let at = format!("{pointer}/{key}");
                if let (true, Some(f)) = (key == "format", v.as_str()) {
                    out.push((at.clone(), f.to_owned()));
                }
                formats(v, &at, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                formats(v, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_advertised_schema_compiles_under_a_strict_draft_2020_12_validator()
-> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let token = stack.token(ReadScope::all()).await?;
    // The raw `tools/list` answer, as any client reads it.
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))?;
    let (status, _, answer) = post_raw(
        &gw.mcp_url(),
        &[("authorization", &format!("Bearer {token}"))],
        body,
    )
    .await?;
    assert_eq!(status, 200, "{answer}");
    let tools = answer["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), READ_TOOLS.len() + SEND_TOOLS.len(), "{answer}");
    let strict = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false);
    let mut refused = Vec::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        for key in ["inputSchema", "outputSchema"] {
            let schema = &tool[key];
            assert!(schema.is_object(), "{name} has no {key}");
            if let Err(e) = strict.build(schema) {
                refused.push(format!("{name} {key}: {e}"));
            }
            let mut found = Vec::new();
            formats(schema, "", &mut found);
            for (at, format) in found {
                if !STANDARD_FORMATS.contains(&format.as_str()) {
                    refused.push(format!("{name} {key}{at}: format {format:?}"));
                }
            }
        }
    }
    assert!(
        refused.is_empty(),
        "non-standard schemas:\n{}",
        refused.join("\n")
    );
    Ok(())
}
