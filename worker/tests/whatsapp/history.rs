//! History blobs (real `wa::HistorySync`, zlib-wrapped as WhatsApp sends them) through the
//! batch path into a real archive, and on-demand answers waking their waiter.

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::connector::whatsapp::history::{Pending, ingest};
use whatsapp_rust::types::events::{Event, LazyHistorySync};
use whatsapp_rust::waproto::codec::history_sync_encode_into;

use super::*;
use crate::common::one;

const LID: &str = "123456789012345@lid";

/// `data` as a zlib stream of stored (uncompressed) deflate blocks, with its Adler-32.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut chunks = data.chunks(65_535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

/// The history event WhatsApp would dispatch for `sync`.
pub(crate) fn event(sync: &wa::HistorySync, sync_type: i32) -> Arc<Event> {
    let mut raw = Vec::new();
    history_sync_encode_into(sync, &mut raw);
    let lazy = LazyHistorySync::new(
        zlib_stored(&raw).into(),
        raw.len(),
        sync_type,
        Some(1),
        Some(100),
    );
    Arc::new(Event::HistorySync(Box::new(lazy)))
}

/// One history entry.
pub(crate) fn entry(
    chat: &str,
    id: &str,
    secs: u64,
    participant: Option<&str>,
    body: wa::Message,
) -> wa::HistorySyncMsg {
    wa::HistorySyncMsg {
        message: some(wa::WebMessageInfo {
            key: some(wa::MessageKey {
                remote_jid: Some(chat.into()),
                from_me: Some(false),
                id: Some(id.into()),
                participant: participant.map(str::to_owned),
            }),
            message: some(body),
            message_timestamp: Some(secs),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn conversation(id: &str, messages: Vec<wa::HistorySyncMsg>) -> wa::Conversation {
    wa::Conversation {
        id: id.into(),
        messages,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_history_blob_is_archived_once_with_lid_and_phone_as_one_chat() {
    let h = common::Harness::start().await;
    let base = ts().timestamp() as u64;
    let image = wa::Message {
        image_message: some(wa::message::ImageMessage {
            mimetype: Some("image/jpeg".into()),
            jpeg_thumbnail: Some(vec![0xFF, 0xD8]),
            direct_path: Some("/v/t62/xyz".into()),
            media_key: Some(vec![7; 32]),
            file_sha256: Some(vec![8; 32]),
            file_enc_sha256: Some(vec![9; 32]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut lid_chat = conversation(LID, vec![entry(LID, "H1", base, None, text("via lid"))]);
    lid_chat.pn_jid = Some(ALICE.into());
    lid_chat.lid_jid = Some(LID.into());
    lid_chat.name = Some("Alice".into());
    let sync = wa::HistorySync {
        conversations: vec![
            lid_chat,
            conversation(
                ALICE,
                vec![
                    entry(ALICE, "H2", base + 1, None, text("via phone")),
                    entry(ALICE, "H3", base + 2, None, image),
                ],
            ),
            conversation(
                GROUP,
                vec![entry(GROUP, "H4", base + 3, Some(BOB), text("hi all"))],
            ),
        ],
        status_v3_messages: vec![wa::WebMessageInfo {
            key: some(wa::MessageKey {
                remote_jid: Some("status@broadcast".into()),
                id: Some("S1".into()),
                participant: Some(BOB.into()),
                ..Default::default()
            }),
            message: some(text("my story")),
            message_timestamp: Some(base + 4),
            ..Default::default()
        }],
        ..Default::default()
    };
    let pending = Pending::default();
    let stored = ingest(&h.archive, DEFAULT_ACCOUNT, &pending, event(&sync, 3))
        .await
        .unwrap();
    assert_eq!(stored, 4);
    assert_eq!(one(&h.pool, "select count(*) from messages").await, 4);
    assert_eq!(one(&h.pool, "select count(*) from stories").await, 1);
    assert_eq!(
        one(
            &h.pool,
            "select count(distinct chat_id) from messages where wa_id in ('H1', 'H2', 'H3')"
        )
        .await,
        1,
        "the LID and phone forms are one chat"
    );
    assert_eq!(
        one(
            &h.pool,
            "select count(*) from attachments
              where media->>'direct_path' = '/v/t62/xyz' and thumbnail is not null"
        )
        .await,
        1
    );
    // WhatsApp resends history: nothing is stored twice.
    let again = ingest(&h.archive, DEFAULT_ACCOUNT, &pending, event(&sync, 3))
        .await
        .unwrap();
    assert_eq!(again, 0);
    assert_eq!(one(&h.pool, "select count(*) from messages").await, 4);
    h.finish().await;
}

#[tokio::test]
async fn an_on_demand_answer_wakes_the_waiter_for_its_chat() {
    let h = common::Harness::start().await;
    let pending = Pending::default();
    let waiter = pending.wait_for(ALICE);
    let older = wa::HistorySync {
        conversations: vec![conversation(
            ALICE,
            vec![
                entry(ALICE, "OLD1", 1_000, None, text("older 1")),
                entry(ALICE, "OLD2", 1_001, None, text("older 2")),
            ],
        )],
        ..Default::default()
    };
    // A non-on-demand blob for the chat does not answer the request.
    let unrelated = ingest(
        &h.archive,
        DEFAULT_ACCOUNT,
        &pending,
        event(&wa::HistorySync::default(), 3),
    );
    assert_eq!(unrelated.await.unwrap(), 0);
    let stored = ingest(&h.archive, DEFAULT_ACCOUNT, &pending, event(&older, 6))
        .await
        .unwrap();
    assert_eq!(stored, 2);
    assert_eq!(waiter.answer.await.unwrap(), 2);
    h.finish().await;
}

#[tokio::test]
async fn an_on_demand_answer_naming_its_request_wakes_it_even_with_nothing_older() {
    let h = common::Harness::start().await;
    let pending = Pending::default();
    let mine = pending.wait_for(ALICE);
    let other = pending.wait_for(ALICE);
    pending.sent(&mine, "3EB0MINE");
    pending.sent(&other, "3EB0OTHER");
    // The phone has nothing older than the anchor: an empty ON_DEMAND blob naming the request.
    let mut raw = Vec::new();
    history_sync_encode_into(&wa::HistorySync::default(), &mut raw);
    let lazy = LazyHistorySync::new(zlib_stored(&raw).into(), raw.len(), 6, Some(1), Some(100))
        .with_peer_data_request_session_id(Some("3EB0MINE".into()));
    let stored = ingest(
        &h.archive,
        DEFAULT_ACCOUNT,
        &pending,
        Arc::new(Event::HistorySync(Box::new(lazy))),
    )
    .await
    .unwrap();
    assert_eq!(stored, 0);
    assert_eq!(
        mine.answer.await.unwrap(),
        0,
        "answered at once, not at the timeout"
    );
    let mut other = other.answer;
    assert!(other.try_recv().is_err(), "the other request still waits");
    h.finish().await;
}
