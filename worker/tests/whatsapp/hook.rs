//! Archive before ack: the durability hook returns `Ok` (releasing WhatsApp's ack) only after
//! the messages are committed, and `Err` (no ack, redelivery) when the commit fails.

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::connector::whatsapp::hook::{ArchiveHook, commit};
use whatsapp_rust::InboundDurabilityHook as _;
use whatsapp_rust::bot::Bot;
use whatsapp_rust::wacore::store::InMemoryBackend;

use super::*;

async fn stored(h: &common::Harness, wa_id: &str) -> i64 {
    h.pool
        .get()
        .await
        .unwrap()
        .query_one("select count(*) from messages where wa_id = $1", &[&wa_id])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn ok_only_after_the_commit_and_err_when_it_fails() {
    let h = common::Harness::start().await;
    // A client that never connects: the hook gets one, as in production.
    let client = Bot::builder()
        .with_backend(InMemoryBackend::new())
        .build()
        .await
        .expect("an offline client")
        .client();
    let hook = ArchiveHook {
        archive: h.archive.clone(),
        account: DEFAULT_ACCOUNT.to_owned(),
        linked: Default::default(),
        redeliver: wazap_worker::connector::whatsapp::hook::Redeliver::new(h.pool.clone()),
        stall: Default::default(),
    };
    let batch = [
        inbound(text("first"), info(ALICE, Some(ALICE), "A1")),
        inbound(
            wa::Message {
                sender_key_distribution_message: some(Default::default()),
                ..Default::default()
            },
            info(GROUP, Some(BOB), "KEYS"),
        ),
        inbound(text("second"), info(GROUP, Some(BOB), "A2")),
    ];
    hook.on_messages(client.clone(), &batch)
        .await
        .expect("committed");
    // Visible the moment the hook returned: the ack can only follow the commit.
    assert_eq!(stored(&h, "A1").await, 1);
    assert_eq!(stored(&h, "A2").await, 1);
    assert_eq!(
        stored(&h, "KEYS").await,
        0,
        "protocol traffic is not a message"
    );

    // A redelivery (the ack was lost) is absorbed by the archive's natural key.
    let outcomes = commit(&h.archive, DEFAULT_ACCOUNT, &hook.linked, None, &batch)
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 2);
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, wazap_worker::archive::IngestOutcome::Duplicate { .. }))
    );

    // The database goes away: the hook fails, so WhatsApp keeps the message for redelivery.
    h.pool.close();
    let failed = hook
        .on_messages(
            client,
            &[inbound(text("third"), info(ALICE, Some(ALICE), "A3"))],
        )
        .await;
    assert!(failed.is_err(), "a failed commit must not release the ack");
    h.finish().await;
}
