//! The gateway's direct route (plain `tools/call` requests answered without rmcp's per-request
//! service) answers every tool exactly as rmcp's route does: the same call is sent twice, once
//! as the direct route takes it and once forced through rmcp, and the status, content type and
//! body bytes must be equal — for each read tool on sim data, `get_attachment`, the send tools
//! with permission (fresh sends accepted and journaled, replays and statuses byte-equal), tool
//! errors, invalid arguments, and tools the deployment disables; both as a pre-2026-07-28 peer
//! (forced to rmcp by an empty `_meta`) and as a 2026-07-28 peer with the headers and `_meta`
//! rmcp's client sends (forced to rmcp by a `_meta` key rmcp ignores and the route does not
//! take).

use base64::Engine as _;
use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::sim::Transmissions;
use wazap_tests::fixtures::{jpeg_b64, minutes_ago, ogg_opus, person, photo, text};
use wazap_tests::{Stack, post_raw};

use crate::send::Sending;

/// How a call is sent.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// Protocol 2025-11-25 headers, no `_meta` (as the bench's minimal client).
    Legacy,
    /// Protocol 2026-07-28: `Mcp-Method`, `Mcp-Name` and `_meta`, as rmcp's client sends.
    Standard,
}

const WAYS: [Way; 2] = [Way::Legacy, Way::Standard];

/// Status, content type and body of one answer.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A raw client of one gateway's `/mcp` with one bearer token.
struct Raw {
    url: String,
    auth: String,
}

impl Raw {
    /// Call `tool` with `args` under JSON-RPC id `id`, sent `way`; `rmcp` forces rmcp's route.
    async fn post(
        &self,
        way: Way,
        id: &Value,
        tool: &str,
        args: &Value,
        rmcp: bool,
    ) -> anyhow::Result<Answer> {
        let mut params = json!({"name": tool, "arguments": args});
        let mut headers = vec![("authorization", self.auth.clone())];
        match way {
            Way::Legacy => {
                headers.push(("mcp-protocol-version", "2025-11-25".into()));
                if rmcp {
                    params["_meta"] = json!({});
                }
            }
            Way::Standard => {
                headers.push(("mcp-protocol-version", "2026-07-28".into()));
                headers.push(("mcp-method", "tools/call".into()));
                headers.push(("mcp-name", tool.into()));
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "progressToken": 0
                });
                if rmcp {
                    params["_meta"]["x-wazap-test/route"] = json!("rmcp");
                }
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let mut req = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &headers {
            req = req.header(*k, v);
        }
        let resp = req.body(serde_json::to_vec(&body)?).send().await?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = resp.bytes().await?.to_vec();
        Ok(Answer {
            status,
            content_type,
            body,
        })
    }

    /// The same call on both routes: the answers must be equal byte for byte. Returns the
    /// answer as JSON.
    async fn same(&self, way: Way, id: Value, tool: &str, args: Value) -> anyhow::Result<Value> {
        let direct = self.post(way, &id, tool, &args, false).await?;
        let rmcp = self.post(way, &id, tool, &args, true).await?;
        assert_eq!(
            direct,
            rmcp,
            "{way:?} {tool} {args}:\n direct {}\n rmcp   {}",
            String::from_utf8_lossy(&direct.body),
            String::from_utf8_lossy(&rmcp.body)
        );
        let json = direct.json();
        assert_eq!(json["id"], id, "{json}");
        Ok(json)
    }
}

/// `structuredContent` of a successful result.
fn content(answer: &Value) -> &Value {
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    &answer["result"]["structuredContent"]
}

/// The `{"error":{"code"}}` of an `isError` result.
fn tool_error(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    v["error"]["code"].as_str().unwrap_or("").to_owned()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_answers_on_the_direct_route_as_rmcp_does() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let dana = person("972503330001");
    s.stack
        .inject(text(&dana, "T1", minutes_ago(30), "dinner at eight?"))
        .await?;
    s.stack
        .inject(photo(&dana, "P1", minutes_ago(20), "sunset at the beach"))
        .await?;
    let gw = s.stack.gateway(&[]).await?;
    let raw = Raw {
        url: gw.mcp_url(),
        auth: format!("Bearer {}", s.token),
    };
    let chat = s.chat.as_str();
    let mut n = 0;
    let mut id = || {
        n += 1;
        json!(n)
    };

    for way in WAYS {
        // The read tools on the sim's data.
        let chats = raw.same(way, id(), "list_chats", json!({})).await?;
        assert!(
            content(&chats)["chats"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        );
        let people = raw
            .same(way, id(), "search_contacts", json!({"query": "Dana"}))
            .await?;
        assert_eq!(content(&people)["contacts"][0]["chat_id"], chat, "{people}");
        raw.same(way, id(), "search_groups", json!({"query": "family"}))
            .await?;
        let read = raw
            .same(
                way,
                id(),
                "read_messages",
                json!({"chat_id": chat, "include_previews": true}),
            )
            .await?;
        assert_eq!(content(&read)["count"], 2, "{read}");
        // The photo's preview follows the text as an image block.
        assert_eq!(read["result"]["content"][1]["type"], "image", "{read}");
        let found = raw
            .same(way, id(), "search_messages", json!({"query": "sunset"}))
            .await?;
        assert_eq!(content(&found)["count"], 1, "{found}");
        let files = raw
            .same(way, id(), "search_attachments", json!({"kinds": ["image"]}))
            .await?;
        let attachment = content(&files)["attachments"][0]["attachment_id"].clone();
        assert!(attachment.is_string(), "{files}");
        let bytes = raw
            .same(
                way,
                id(),
                "get_attachment",
                json!({"attachment_id": attachment}),
            )
            .await?;
        assert_eq!(bytes["result"]["content"][1]["type"], "image", "{bytes}");
        let first = raw
            .same(
                way,
                id(),
                "wait_for_messages",
                json!({"timeout_seconds": 1}),
            )
            .await?;
        let cursor = content(&first)["cursor"].clone();
        let waited = raw
            .same(
                way,
                id(),
                "wait_for_messages",
                json!({"cursor": cursor, "timeout_seconds": 1}),
            )
            .await?;
        assert_eq!(content(&waited)["timed_out"], true, "{waited}");

        // A tool error and arguments that do not decode.
        let missing = raw
            .same(way, id(), "read_messages", json!({"chat_id": "c_nothing"}))
            .await?;
        assert!(!tool_error(&missing).is_empty(), "{missing}");
        let invalid = raw
            .same(way, id(), "list_chats", json!({"limt": 1}))
            .await?;
        assert_eq!(invalid["error"]["code"], -32602, "{invalid}");
        assert!(invalid.get("result").is_none());
        let invalid = raw
            .same(way, id(), "send_message", json!({"chat_id": chat}))
            .await?;
        assert_eq!(invalid["error"]["code"], -32602, "{invalid}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn sends_on_the_direct_route_reach_the_worker_and_replay_as_rmcp_does() -> anyhow::Result<()>
{
    let s = Sending::start().await?;
    let gw = s.stack.gateway(&[]).await?;
    let raw = Raw {
        url: gw.mcp_url(),
        auth: format!("Bearer {}", s.token),
    };
    let chat = s.chat.as_str();
    let jpeg = base64::engine::general_purpose::STANDARD.decode(jpeg_b64(16, 12))?;
    let sends = |key: &str| {
        [
            (
                "send_message",
                json!({"chat_id": chat, "request_id": format!("{key}-text"), "text": "on my way"}),
            ),
            (
                "send_media",
                json!({"chat_id": chat, "request_id": format!("{key}-photo"), "kind": "image",
                       "data_base64": b64(&jpeg), "mime_type": "image/jpeg", "caption": "view"}),
            ),
            (
                "send_voice_note",
                json!({"chat_id": chat, "request_id": format!("{key}-voice"),
                       "data_base64": b64(&ogg_opus()), "seconds": 3}),
            ),
        ]
    };
    let mut sent = 0;
    for (w, way) in WAYS.into_iter().enumerate() {
        // Fresh sends on the direct route: accepted and transmitted once each.
        for (tool, args) in sends(&format!("direct-{w}")) {
            let fresh = raw.post(way, &json!(1), tool, &args, false).await?;
            assert_eq!(fresh.status, 200);
            let fresh = fresh.json();
            assert_eq!(content(&fresh)["state"], "accepted", "{fresh}");
            assert_eq!(content(&fresh)["duplicate"], false, "{fresh}");
            sent += 1;
            // Its replay and status, on both routes alike.
            let again = raw.same(way, json!(2), tool, args.clone()).await?;
            assert_eq!(content(&again)["duplicate"], true, "{again}");
            assert_eq!(content(&again)["message_id"], content(&fresh)["message_id"]);
            let key = args["request_id"].clone();
            raw.same(way, json!(3), "get_send_status", json!({"request_id": key}))
                .await?;
        }
        // Fresh sends forced through rmcp, then replayed both ways.
        for (tool, args) in sends(&format!("rmcp-{w}")) {
            let fresh = raw.post(way, &json!(4), tool, &args, true).await?.json();
            assert_eq!(content(&fresh)["state"], "accepted", "{fresh}");
            sent += 1;
            let again = raw.same(way, json!(5), tool, args).await?;
            assert_eq!(content(&again)["message_id"], content(&fresh)["message_id"]);
        }
        // Refusals: an unknown chat, an unknown key, a reused key with other text.
        let refused = raw
            .same(
                way,
                json!(6),
                "send_message",
                json!({"chat_id": "c_nowhere", "request_id": "x-1", "text": "hi"}),
            )
            .await?;
        assert!(!tool_error(&refused).is_empty(), "{refused}");
        let unknown = raw
            .same(
                way,
                json!(7),
                "get_send_status",
                json!({"request_id": "never"}),
            )
            .await?;
        assert!(!tool_error(&unknown).is_empty(), "{unknown}");
        let conflict = raw
            .same(
                way,
                json!(8),
                "send_message",
                json!({"chat_id": chat, "request_id": format!("direct-{w}-text"), "text": "other"}),
            )
            .await?;
        assert!(!tool_error(&conflict).is_empty(), "{conflict}");
    }
    let log = s
        .stack
        .sim_raw::<_, Transmissions>(sim_op::TRANSMISSIONS, &json!({}))
        .await?
        .transmissions;
    assert_eq!(log.len(), sent, "one transmission per fresh send: {log:?}");
    Ok(())
}

#[tokio::test]
async fn tools_the_deployment_disables_are_rmcps_unknown_tools() -> anyhow::Result<()> {
    let stack = Stack::start(wazap_worker::config::ConnectorKind::Sim).await?;
    let gw = stack
        .gateway(&[("WAZAP_OUTBOUND", "off"), ("WAZAP_ATTACHMENTS", "off")])
        .await?;
    let token = stack
        .token(wazap_shared::wire::grants::ReadScope::all())
        .await?;
    let raw = Raw {
        url: gw.mcp_url(),
        auth: format!("Bearer {token}"),
    };
    for way in WAYS {
        for (tool, args) in [
            (
                "send_message",
                json!({"chat_id": "c_1", "request_id": "k", "text": "hi"}),
            ),
            ("get_send_status", json!({"request_id": "k"})),
            ("get_attachment", json!({"attachment_id": "a_1"})),
            ("search_attachments", json!({})),
        ] {
            let answer = raw.same(way, json!(9), tool, args).await?;
            assert_eq!(answer["error"]["code"], -32602, "{tool}: {answer}");
            assert!(answer.get("result").is_none(), "{tool}: {answer}");
        }
        // An enabled tool on the same gateway is answered (directly).
        let chats = raw.same(way, json!(10), "list_chats", json!({})).await?;
        content(&chats);
    }
    // The plain call the harness sends answers as before.
    let (status, _, plain) = post_raw(
        &gw.mcp_url(),
        &[("authorization", &format!("Bearer {token}"))],
        wazap_tests::tools_call_body("list_chats", json!({})),
    )
    .await?;
    assert_eq!(status, 200);
    content(&plain);
    Ok(())
}
