//! One trace id from the gateway's tool span through the NATS hop to the worker's `rpc` span,
//! seen by an in-memory span exporter installed in this test process (gateway and worker run
//! in it), down to the worker's Postgres queries and the connector's work for a send, and no
//! credential or message text in any span attribute.

use std::time::{Duration, Instant};

use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{post_raw, tools_call_body};

use crate::send::Sending;

/// The value of attribute `key` of `span`, as a string.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// The finished span named `name` whose attribute `key` is `value`, waiting briefly for it.
async fn finished(
    exporter: &InMemorySpanExporter,
    name: &str,
    key: &str,
    value: &str,
) -> anyhow::Result<SpanData> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let spans = exporter.get_finished_spans()?;
        if let Some(s) = spans
            .into_iter()
            .find(|s| s.name == name && attr(s, key).as_deref() == Some(value))
        {
            return Ok(s);
        }
        anyhow::ensure!(
            Instant::now() < give_up,
            "no {name} span with {key}={value}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_is_one_trace_from_gateway_to_worker() -> anyhow::Result<()> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    anyhow::ensure!(
        wazap_shared::telemetry::init_with("wazap-tests", provider),
        "a subscriber was already installed: run this test in its own process (cargo nextest)"
    );
    let s = Sending::start().await?;
    let stack = &s.stack;
    let secret_words = "the quick secret sentence";
    stack
        .inject(text(
            &person("972501112233"),
            "m1",
            minutes_ago(1),
            secret_words,
        ))
        .await?;
    let token = s.token.clone();
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&token).await?;
    let listed = mcp.call("list_chats", json!({})).await?;
    let chat = listed.ok()["chats"][0]["chat_id"]
        .as_str()
        .expect("a chat")
        .to_owned();
    mcp.call("read_messages", json!({ "chat_id": chat }))
        .await?
        .ok();

    for (tool, op) in [
        ("list_chats", "list_chats"),
        ("read_messages", "read_messages"),
    ] {
        let edge = finished(&exporter, "tool", "tool", tool).await?;
        let rpc = finished(&exporter, "rpc", "op", op).await?;
        assert_ne!(edge.span_context.trace_id(), TraceId::INVALID);
        assert_eq!(
            rpc.span_context.trace_id(),
            edge.span_context.trace_id(),
            "{tool}: the worker's span is in the gateway's trace"
        );
        assert_eq!(
            rpc.parent_span_id,
            edge.span_context.span_id(),
            "{tool}: the worker's span is a child of the tool span"
        );
        assert!(
            rpc.parent_span_is_remote,
            "{tool}: the parent came over NATS"
        );
        assert_eq!(attr(&edge, "outcome").as_deref(), Some("ok"));
    }
    // The worker's Postgres work is in the trace too, under its rpc span.
    let rpc = finished(&exporter, "rpc", "op", "read_messages").await?;
    let chat_query = finished(&exporter, "postgres", "db.operation", "read.find_chat").await?;
    assert_eq!(
        chat_query.span_context.trace_id(),
        rpc.span_context.trace_id()
    );
    assert_eq!(chat_query.parent_span_id, rpc.span_context.span_id());
    assert_eq!(
        attr(&chat_query, "db.system").as_deref(),
        Some("postgresql")
    );

    // A send: the connector's work is in the same trace too.
    let sent = mcp
        .call(
            "send_message",
            json!({"chat_id": s.chat, "request_id": "t1", "text": secret_words}),
        )
        .await?;
    assert_eq!(sent.ok()["state"], "accepted");
    let edge = finished(&exporter, "tool", "tool", "send_message").await?;
    let rpc = finished(&exporter, "rpc", "op", "send_message").await?;
    let spans = exporter.get_finished_spans()?;
    let connector = spans
        .iter()
        .find(|sp| sp.name == "connector.send")
        .expect("a connector.send span");
    assert_eq!(rpc.span_context.trace_id(), edge.span_context.trace_id());
    assert_eq!(
        connector.span_context.trace_id(),
        edge.span_context.trace_id()
    );
    assert_eq!(connector.parent_span_id, rpc.span_context.span_id());

    // A caller's own trace context on the HTTP request is continued.
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{caller_trace}-00f067aa0ba902b7-01");
    let auth = format!("Bearer {token}");
    let (status, _, _) = post_raw(
        &gw.mcp_url(),
        &[("authorization", &auth), ("traceparent", &traceparent)],
        tools_call_body("search_groups", json!({"query": "x"})),
    )
    .await?;
    assert_eq!(status, 200);
    let edge = finished(&exporter, "tool", "tool", "search_groups").await?;
    let rpc = finished(&exporter, "rpc", "op", "search_groups").await?;
    assert_eq!(edge.span_context.trace_id().to_string(), caller_trace);
    assert_eq!(rpc.span_context.trace_id().to_string(), caller_trace);

    // Nothing secret in any attribute of any span (token, message text, phone number).
    for span in exporter.get_finished_spans()? {
        for kv in &span.attributes {
            let v = kv.value.as_str();
            assert!(!v.contains(&token), "token in {}.{}", span.name, kv.key);
            assert!(!v.contains("secret"), "text in {}.{}", span.name, kv.key);
            assert!(
                !v.contains("972501112233"),
                "phone in {}.{}",
                span.name,
                kv.key
            );
        }
    }
    mcp.close().await;
    gw.stop().await?;
    Ok(())
}
