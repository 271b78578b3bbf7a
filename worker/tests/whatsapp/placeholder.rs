//! An undecryptable message is archived as an `unknown` placeholder; when the phone resends it
//! (same id, through the hook or in a history blob) the real message takes its place in the
//! real archive: same `message_id`, a new position (so waiting agents see it), reactions kept,
//! unread count unchanged. A plain redelivery of a readable message stays a duplicate.

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::archive::IngestOutcome;
use wazap_worker::connector::whatsapp::history::{Pending, ingest};
use wazap_worker::connector::whatsapp::hook::commit;
use wazap_worker::connector::whatsapp::map;
use wazap_worker::connector::whatsapp::people::Linked;

use super::*;
use crate::common::one;

/// (message_id, position, kind, text, reactions) of the message `wa_id`.
async fn archived(
    h: &common::Harness,
    wa_id: &str,
) -> (String, i64, String, String, Option<String>) {
    let r = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select message_id, position, kind, text, reactions::text
               from messages where wa_id = $1",
            &[&wa_id],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
}

async fn unread(h: &common::Harness) -> i32 {
    h.pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select c.unread_count from chats c join chat_aliases a
                 on a.account_id = c.account_id and a.chat_id = c.chat_id
              where a.jid = $1",
            &[&ALICE],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_resent_message_replaces_its_placeholder_through_the_hook() {
    let h = common::Harness::start().await;
    let linked = Linked::default();
    let placeholder = map::undecryptable(&info(ALICE, Some(ALICE), "U1")).expect("placeholder");
    h.archive
        .ingest_live(DEFAULT_ACCOUNT, placeholder)
        .await
        .unwrap();
    let (id, pos, kind, words, _) = archived(&h, "U1").await;
    assert_eq!((kind.as_str(), words.as_str()), ("unknown", ""));
    // The account reacts to the placeholder before the resend arrives.
    let reaction = wa::Message {
        reaction_message: some(wa::message::ReactionMessage {
            key: some(wa::MessageKey {
                remote_jid: Some(ALICE.into()),
                from_me: Some(false),
                id: Some("U1".into()),
                participant: None,
            }),
            text: Some("👍".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    commit(
        &h.archive,
        DEFAULT_ACCOUNT,
        &linked,
        None,
        &[inbound(reaction, info(ALICE, None, "R1"))],
    )
    .await
    .unwrap();
    let unread_before = unread(&h).await;

    let outcomes = commit(
        &h.archive,
        DEFAULT_ACCOUNT,
        &linked,
        None,
        &[inbound(
            text("the real words"),
            info(ALICE, Some(ALICE), "U1"),
        )],
    )
    .await
    .unwrap();
    match &outcomes[..] {
        [
            IngestOutcome::Stored {
                message_id,
                position,
            },
        ] => {
            assert_eq!(message_id, &id, "the message keeps its id");
            assert!(*position > pos, "and comes again after the cursor");
        }
        other => panic!("expected the placeholder replaced, got {other:?}"),
    }
    let (id2, _, kind, words, reactions) = archived(&h, "U1").await;
    assert_eq!(id2, id);
    assert_eq!((kind.as_str(), words.as_str()), ("text", "the real words"));
    assert!(
        reactions.is_some_and(|r| r.contains("👍")),
        "the reaction stays"
    );
    assert_eq!(
        unread(&h).await,
        unread_before,
        "the same message, not a new one"
    );
    assert_eq!(
        *h.archive.committed().borrow(),
        archived(&h, "U1").await.1,
        "committed position advanced to the replacement"
    );

    // A second resend, or a redelivery of a readable message, changes nothing.
    for _ in 0..2 {
        let again = commit(
            &h.archive,
            DEFAULT_ACCOUNT,
            &linked,
            None,
            &[inbound(
                text("the real words"),
                info(ALICE, Some(ALICE), "U1"),
            )],
        )
        .await
        .unwrap();
        assert!(matches!(&again[..], [IngestOutcome::Duplicate { .. }]));
    }
    h.finish().await;
}

#[tokio::test]
async fn a_history_blob_with_the_message_replaces_the_placeholder() {
    let h = common::Harness::start().await;
    let placeholder = map::undecryptable(&info(GROUP, Some(BOB), "U2")).expect("placeholder");
    h.archive
        .ingest_live(DEFAULT_ACCOUNT, placeholder)
        .await
        .unwrap();
    let (id, pos, ..) = archived(&h, "U2").await;
    let sync = wa::HistorySync {
        conversations: vec![super::history::conversation(
            GROUP,
            vec![super::history::entry(
                GROUP,
                "U2",
                ts().timestamp() as u64,
                Some(BOB),
                text("from the phone"),
            )],
        )],
        ..Default::default()
    };
    ingest(
        &h.archive,
        DEFAULT_ACCOUNT,
        &Pending::default(),
        super::history::event(&sync, 3),
    )
    .await
    .unwrap();
    let (id2, pos2, kind, words, _) = archived(&h, "U2").await;
    assert_eq!(id2, id);
    assert!(pos2 > pos);
    assert_eq!((kind.as_str(), words.as_str()), ("text", "from the phone"));
    assert_eq!(one(&h.pool, "select count(*) from messages").await, 1);
    h.finish().await;
}
