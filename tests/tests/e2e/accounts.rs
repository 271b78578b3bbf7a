//! Requests travel by account (#27 item 4, DESIGN §8): through the real gateway, each goes to
//! `<prefix>.rpc.<account>.<op>` for the account it is about — the one named, else the one its
//! ids name, else `default` — and requests about no account to `<prefix>.rpc._any.<op>`. A raw
//! subscriber beside the worker sees where each went. (One about an account no worker serves is
//! asked again on `_any`, where any worker says the account does not exist: `search.rs`'s
//! unknown-account checks.)

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::json;
use wazap_shared::bus::Reply;
use wazap_shared::error::{ErrorCode, RpcError};
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

#[tokio::test]
async fn each_request_goes_to_the_subject_of_its_account() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let prefix = stack.subjects.prefix().to_owned();
    // The observer sees every request. It is also a responder on every subject, so for the
    // accounts no worker serves it answers as a worker would (`account_not_found`) at once;
    // otherwise each such call would wait out its deadline for a reply nobody sends.
    let mut seen = stack.nats.subscribe(format!("{prefix}.rpc.>")).await?;
    stack.nats.flush().await?;
    // The observer must be an interest the server routes other connections' messages to
    // before the first call: a message published from another connection has to reach it.
    // (Without this, a CI run once saw the first request answered "no responders" and its
    // subject never reached the observer.)
    let probe = format!("{prefix}.rpc.probe.ready");
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
    let (tx, mut subjects_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let answerer = stack.nats.clone();
    let served = [
        format!("{prefix}.rpc.default."),
        format!("{prefix}.rpc._any."),
    ];
    let observer = tokio::spawn(async move {
        while let Some(msg) = seen.next().await {
            let subject = msg.subject.to_string();
            if let Some(reply) = msg
                .reply
                .filter(|_| !served.iter().any(|s| subject.starts_with(s)))
            {
                let answer = Reply::<()>::Error(RpcError::new(
                    ErrorCode::AccountNotFound,
                    "no such account",
                ));
                let _ = answerer
                    .publish(
                        reply,
                        serde_json::to_vec(&answer).unwrap_or_default().into(),
                    )
                    .await;
            }
            if tx.send(subject).is_err() {
                break;
            }
        }
    });
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
    // Every request reached the observer before (or while) it was answered; wait for each
    // wanted subject, never a fixed pause.
    let wanted: Vec<String> = calls
        .iter()
        .map(|(tool, _, account)| format!("{prefix}.rpc.{account}.{tool}"))
        .collect();
    let mut subjects = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !wanted.iter().all(|w| subjects.contains(w)) {
        match tokio::time::timeout_at(deadline, subjects_rx.recv()).await {
            Ok(Some(subject)) if subject != probe => subjects.push(subject),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    observer.abort();
    for want in &wanted {
        assert!(subjects.contains(want), "{want} not among {subjects:?}");
    }
    // Nothing about an account went to another's subject.
    assert!(
        !subjects.iter().any(|s| s.ends_with(".read_messages")
            && !s.contains(".rpc.work.")
            && !s.contains(".rpc._any.")),
        "{subjects:?}"
    );
    Ok(())
}
