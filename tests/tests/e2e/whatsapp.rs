//! The real WhatsApp connector with no phone linked and nothing answering: the worker starts
//! anyway, says `unpaired` everywhere, and keeps serving the archive. And the guard on test
//! builds: this build skips WhatsApp's certificate check (the test network needs that), so it
//! refuses to connect anywhere but a loopback test network.

use serde_json::json;
use wazap_shared::ErrorCode;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::ReadScope;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::system::Ping;
use wazap_tests::Stack;
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_worker::config::{ConnectorKind, Network};

#[tokio::test]
async fn an_unlinked_worker_starts_reports_unpaired_and_keeps_serving_reads() -> anyhow::Result<()>
{
    // Fill the archive through the sim, then restart the same worker on the real connector.
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    stack
        .inject(text(
            &person("972501230001"),
            "W1",
            minutes_ago(5),
            "archived before",
        ))
        .await?;
    stack.stop_worker().await?;
    stack.set_connector(ConnectorKind::Whatsapp);
    // A loopback port where nothing listens (this test build may talk to nothing else).
    stack.set_whatsapp_network(
        Network::parse(Some("ws://127.0.0.1:1")).map_err(anyhow::Error::msg)?,
    );
    stack.start_worker().await?;
    let data_dir = stack.worker_config().data_dir;
    assert!(
        data_dir.join("whatsapp.sqlite").exists(),
        "the device store lives in WAZAP_DATA_DIR"
    );

    let ping = stack.rpc::<Ping>(&Default::default()).await?;
    assert_eq!(ping.sync, SyncState::Unpaired);

    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let chats = mcp.call("list_chats", json!({})).await?;
    assert_eq!(chats.ok()["chats"].as_array().map(Vec::len), Some(1));
    let read = mcp
        .call("read_messages", json!({"chat_id": "+972501230001"}))
        .await?;
    let read = read.ok();
    assert_eq!(read["sync"], "unpaired");
    assert_eq!(read["messages"][0]["text"], "archived before");

    // Sending is refused before anything is reserved or transmitted, and says why.
    let chat_id = read["chat_id"].as_str().expect("chat_id").to_owned();
    let grant = crate::send::connection(&stack, SendMode::All, vec![]).await?;
    let refused = crate::send::send_text(&stack, &grant, &chat_id, "wa-k1", "hello")
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::SessionCannotSend);
    assert!(refused.message.contains("unpaired"), "{}", refused.message);

    // It stops cleanly (the client flushes and lets go of the store) and starts again.
    stack.stop_worker().await?;
    stack.start_worker().await?;
    assert_eq!(
        stack.rpc::<Ping>(&Default::default()).await?.sync,
        SyncState::Unpaired
    );
    stack.stop_worker().await?;
    let _ = std::fs::remove_dir_all(data_dir);
    Ok(())
}

#[tokio::test]
async fn a_build_without_certificate_checks_refuses_whatsapp_itself() -> anyhow::Result<()> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    // One worker at a time: the sim worker gives the lease up first.
    stack.stop_worker().await?;
    let mut config = stack.worker_config();
    config.connector = ConnectorKind::Whatsapp;
    for network in [
        None,
        Some("wss://web.whatsapp.com:443"),
        Some("ws://10.0.0.8:4100"),
    ] {
        config.whatsapp_network = Network::parse(network).map_err(anyhow::Error::msg)?;
        let refused = wazap_worker::run(config.clone(), tokio_util::sync::CancellationToken::new())
            .await
            .expect_err("a test build must not start against this network");
        let line = format!("{refused:#}");
        assert!(
            line.contains("built without WhatsApp's server certificate check"),
            "{line}"
        );
    }
    Ok(())
}
