//! One person, one chat, with no name known: a live message's alternate sender address, a
//! group sender's alternate address and a history blob's phone ↔ LID mappings make the LID and
//! phone forms one chat in the real archive (merging two chats that already exist).

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::connector::whatsapp::history::{Pending, ingest};
use wazap_worker::connector::whatsapp::hook::commit;
use wazap_worker::connector::whatsapp::people::Linked;

use super::*;
use crate::common::one;

const ALICE_LID: &str = "111111111111111@lid";
const BOB_LID: &str = "222222222222222@lid";

/// A message from `sender` in `chat` whose envelope also names the sender's other form.
fn with_alt(chat: &str, sender: &str, alt: &str, id: &str, body: &str) -> InboundMessage {
    let mut i = info(chat, Some(sender), id);
    i.source.sender_alt = Some(alt.parse().expect("alt jid"));
    inbound(text(body), i)
}

#[tokio::test]
async fn a_live_alternate_address_merges_the_lid_and_phone_chats_without_a_name() {
    let h = common::Harness::start().await;
    let linked = Linked::default();
    // Alice first writes from her phone number, then from her LID: two chats so far.
    let first = [
        inbound(text("by number"), info(ALICE, Some(ALICE), "P1")),
        inbound(text("by lid"), info(ALICE_LID, Some(ALICE_LID), "L1")),
    ];
    commit(&h.archive, DEFAULT_ACCOUNT, &linked, None, &first)
        .await
        .unwrap();
    assert_eq!(
        one(&h.pool, "select count(distinct chat_id) from messages").await,
        2
    );
    // A LID message that names her phone number as the alternate sender makes them one.
    let linking = [with_alt(ALICE_LID, ALICE_LID, ALICE, "L2", "again")];
    commit(&h.archive, DEFAULT_ACCOUNT, &linked, None, &linking)
        .await
        .unwrap();
    assert_eq!(
        one(&h.pool, "select count(distinct chat_id) from messages").await,
        1,
        "one person, one chat"
    );
    assert_eq!(one(&h.pool, "select count(*) from chat_merges").await, 1);
    assert_eq!(
        one(
            &h.pool,
            "select count(*) from chats c join messages m using (account_id, chat_id)
              where m.wa_id = 'L2' and c.phone = '15550001111' and c.name is null"
        )
        .await,
        1,
        "the merged chat knows the number and no name was invented"
    );
    // Later messages under either form land in the same chat.
    commit(
        &h.archive,
        DEFAULT_ACCOUNT,
        &linked,
        None,
        &[
            inbound(text("later lid"), info(ALICE_LID, Some(ALICE_LID), "L3")),
            inbound(text("later number"), info(ALICE, Some(ALICE), "P3")),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        one(&h.pool, "select count(distinct chat_id) from messages").await,
        1
    );
    assert_eq!(one(&h.pool, "select count(*) from messages").await, 5);
    h.finish().await;
}

#[tokio::test]
async fn a_group_sender_by_lid_is_the_person_of_the_direct_chat() {
    let h = common::Harness::start().await;
    let linked = Linked::default();
    commit(
        &h.archive,
        DEFAULT_ACCOUNT,
        &linked,
        None,
        &[inbound(text("hi bob here"), info(BOB, Some(BOB), "D1"))],
    )
    .await
    .unwrap();
    // In a LID-addressed group Bob's participant is his LID, his number the alternate.
    commit(
        &h.archive,
        DEFAULT_ACCOUNT,
        &linked,
        None,
        &[with_alt(GROUP, BOB_LID, BOB, "G1", "hello group")],
    )
    .await
    .unwrap();
    assert_eq!(
        one(
            &h.pool,
            "select count(*) from messages g join messages d
                on d.account_id = g.account_id and d.wa_id = 'D1'
             where g.wa_id = 'G1' and g.sender_chat_id = d.chat_id"
        )
        .await,
        1,
        "the group message's sender is Bob's direct chat"
    );
    h.finish().await;
}

#[tokio::test]
async fn history_mappings_make_one_chat_of_two_conversations() {
    let h = common::Harness::start().await;
    use super::history::{conversation as conv, entry};
    let sync = wa::HistorySync {
        conversations: vec![
            conv(
                ALICE_LID,
                vec![entry(ALICE_LID, "HL1", 1_000, None, text("old"))],
            ),
            conv(ALICE, vec![entry(ALICE, "HP1", 1_001, None, text("old"))]),
            conv(
                BOB_LID,
                vec![entry(BOB_LID, "HB1", 1_002, None, text("old"))],
            ),
        ],
        phone_number_to_lid_mappings: vec![wa::PhoneNumberToLIDMapping {
            pn_jid: Some(ALICE.into()),
            lid_jid: Some(ALICE_LID.into()),
        }],
        ..Default::default()
    };
    let event = super::history::event(&sync, 3);
    let stored = ingest(&h.archive, DEFAULT_ACCOUNT, &Pending::default(), event)
        .await
        .unwrap();
    assert_eq!(stored, 3);
    assert_eq!(
        one(
            &h.pool,
            "select count(distinct chat_id) from messages where wa_id in ('HL1', 'HP1')"
        )
        .await,
        1,
        "Alice's LID and number are one chat"
    );
    assert_eq!(
        one(&h.pool, "select count(distinct chat_id) from messages").await,
        2,
        "Bob, with no mapping, stays apart"
    );
    h.finish().await;
}
