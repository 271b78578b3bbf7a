//! Requests travel by account (#27 item 4, DESIGN §8): through the real gateway, each goes to
//! `<prefix>.rpc.<account>.<op>` for the account it is about — the one named, else the one its
//! ids name, else `default` — and requests about no account to `<prefix>.rpc._any.<op>`; one
//! about an account no worker serves is asked again there (any worker says the account does not
//! exist). A raw subscriber beside the worker sees where each went.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::json;
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

#[tokio::test]
async fn each_request_goes_to_the_subject_of_its_account() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let mut seen = stack
        .nats
        .subscribe(format!("{}.rpc.>", stack.subjects.prefix()))
        .await?;
    stack.nats.flush().await?;
    // The observer must be an interest the server routes other connections' messages to
    // before the first call: a message published from another connection has to reach it.
    // (Without this, a CI run once saw the first request answered "no responders" and its
    // subject never reached the observer.)
    let probe = format!("{}.rpc.probe.ready", stack.subjects.prefix());
    let other = async_nats::connect(&stack.nats_url).await?;
    let mut ready = false;
    for _ in 0..50 {
        other.publish(probe.clone(), "".into()).await?;
        other.flush().await?;
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(100), seen.next()).await
            && m.subject.as_str() == probe
        {
            ready = true;
            break;
        }
    }
    anyhow::ensure!(
        ready,
        "the observer never saw a message from another connection"
    );
    // Another account's chat id, the default one's listing, a named account, a cursor of
    // another account: the worker answers each (not found or empty), wherever it went.
    let calls = [
        (
            "read_messages",
            json!({"chat_id": "c_0123456789abcdef0123-work"}),
            "work",
        ),
        ("list_chats", json!({}), "default"),
        (
            "search_contacts",
            json!({"query": "ana", "account_id": "home"}),
            "home",
        ),
        (
            "wait_for_messages",
            json!({"cursor": "w1.0123456789abcdef0123456789abcdef.5.second", "timeout_seconds": 1}),
            "second",
        ),
        ("get_send_status", json!({"request_id": "r-1"}), "_any"),
    ];
    for (tool, args, _) in &calls {
        mcp.call(tool, args.clone()).await?;
    }
    let mut subjects = Vec::new();
    while let Ok(Some(msg)) = tokio::time::timeout(Duration::from_millis(500), seen.next()).await {
        if msg.subject.as_str() != probe {
            subjects.push(msg.subject.to_string());
        }
    }
    let prefix = stack.subjects.prefix();
    for (tool, _, account) in &calls {
        let want = format!("{prefix}.rpc.{account}.{tool}");
        assert!(subjects.contains(&want), "{want} not among {subjects:?}");
    }
    // Nothing about an account went to another's subject (`_any` is the fallback: nobody
    // serves `work`).
    assert!(
        !subjects.iter().any(|s| s.ends_with(".read_messages")
            && !s.contains(".rpc.work.")
            && !s.contains(".rpc._any.")),
        "{subjects:?}"
    );
    Ok(())
}
