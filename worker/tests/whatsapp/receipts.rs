//! Delivery and read receipts of sent messages, from the library's `Receipt` events through the
//! session's event handling and drain into the journal: each time is set by the first receipt
//! that carries it and never moved; read implies delivered; ids the journal never sent, other
//! accounts' rows and receipts that are not about delivery change nothing.

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::config::Network;
use wazap_worker::connector::outbound::{Receipt as Recorded, ReceiptKind, Receipts};
use wazap_worker::connector::whatsapp::events;
use wazap_worker::connector::whatsapp::shared::Shared;
use wazap_worker::send::journal::{self, Reservation, Reserved};
use wazap_worker::send::receipts::JournalReceipts;
use whatsapp_rust::types::events::{Event, Receipt};
use whatsapp_rust::types::presence::ReceiptType;

use super::*;

const A: &str = "3EB0A1A1A1A1A1A1A1A1";
const B: &str = "3EB0B2B2B2B2B2B2B2B2";
const C: &str = "3EB0C3C3C3C3C3C3C3C3";

/// The journal's recorder, telling the test about each receipt it finished (and whether the
/// write succeeded): the drain works in the background.
struct Tap {
    journal: JournalReceipts,
    done: mpsc::UnboundedSender<(Recorded, bool)>,
}

impl Receipts for Tap {
    fn record(&self, r: Recorded) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let out = self.journal.record(r.clone()).await;
            let _ = self.done.send((r, out.is_ok()));
            out
        })
    }
}

/// A journal row for a send of `account` that went out as `wa_id`.
async fn sent(h: &common::Harness, account: &str, request_id: &str, wa_id: &str) {
    let db = h.pool.get().await.unwrap();
    let r = Reservation {
        connection_id: "conn_test",
        request_id,
        tool: "send_message",
        account_id: account,
        chat_id: "c_alice",
        digest: &[1, 2, 3],
        recipient: ALICE,
        wa_id,
        message_id: "m_1",
    };
    assert!(matches!(
        journal::reserve(&db, &r, None).await.unwrap(),
        Reserved::New
    ));
}

/// (`delivered_at`, `read_at`) of `wa_id` in `account`.
async fn times(
    h: &common::Harness,
    account: &str,
    wa_id: &str,
) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let r = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select delivered_at, read_at from send_journal where account_id = $1 and wa_id = $2",
            &[&account, &wa_id],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

fn at(secs: i64) -> DateTime<Utc> {
    ts() + chrono::TimeDelta::seconds(secs)
}

/// A library receipt of type `t` from Alice's second device for `ids`.
fn receipt(t: ReceiptType, ids: &[&str], when: DateTime<Utc>) -> Arc<Event> {
    let alice: Jid = "15550001111:2@s.whatsapp.net".parse().unwrap();
    Arc::new(Event::Receipt(
        Receipt::builder()
            .source(MessageSource {
                chat: ALICE.parse().unwrap(),
                sender: alice,
                ..MessageSource::default()
            })
            .message_ids(ids.iter().map(|s| (*s).to_owned()).collect())
            .timestamp(when)
            .r#type(t)
            .offline(false)
            .build(),
    ))
}

#[tokio::test]
async fn the_first_delivery_and_read_are_kept_and_nothing_else_moves_them() {
    let h = common::Harness::start().await;
    sent(&h, DEFAULT_ACCOUNT, "r1", A).await;
    sent(&h, DEFAULT_ACCOUNT, "r2", B).await;
    sent(&h, DEFAULT_ACCOUNT, "r3", C).await;
    // Another account's send under the same id is not this account's message.
    sent(&h, "second", "r4", A).await;
    let (tx, mut done) = mpsc::unbounded_channel();
    let tap = Tap {
        journal: JournalReceipts::new(h.pool.clone()),
        done: tx,
    };
    let (shared, work) = Shared::new(
        h.archive.clone(),
        h.pool.clone(),
        DEFAULT_ACCOUNT.to_owned(),
        Network::default(),
        Arc::new(tap),
    );
    tokio::spawn(events::drain(shared.clone(), work));
    let mut recorded = async |n: usize| {
        let mut out = Vec::new();
        for _ in 0..n {
            let (r, ok) = tokio::time::timeout(std::time::Duration::from_secs(10), done.recv())
                .await
                .expect("the drain records receipts")
                .unwrap();
            assert!(ok, "recording {r:?} failed");
            out.push(r);
        }
        out
    };

    shared.on_event(receipt(ReceiptType::Delivered, &[A], at(10)));
    recorded(1).await;
    assert_eq!(times(&h, DEFAULT_ACCOUNT, A).await, (Some(at(10)), None));

    // A repeat with a later time and a late one with an earlier time move nothing.
    shared.on_event(receipt(ReceiptType::Delivered, &[A], at(20)));
    shared.on_event(receipt(ReceiptType::Delivered, &[A], at(5)));
    recorded(2).await;
    assert_eq!(times(&h, DEFAULT_ACCOUNT, A).await, (Some(at(10)), None));

    shared.on_event(receipt(ReceiptType::Read, &[A], at(30)));
    shared.on_event(receipt(ReceiptType::Played, &[A], at(40)));
    shared.on_event(receipt(ReceiptType::Read, &[A], at(25)));
    recorded(3).await;
    assert_eq!(
        times(&h, DEFAULT_ACCOUNT, A).await,
        (Some(at(10)), Some(at(30)))
    );

    // Read before any delivery: delivered then too; a delivery afterwards changes nothing.
    shared.on_event(receipt(ReceiptType::Read, &[B], at(50)));
    shared.on_event(receipt(ReceiptType::Delivered, &[B], at(45)));
    recorded(2).await;
    assert_eq!(
        times(&h, DEFAULT_ACCOUNT, B).await,
        (Some(at(50)), Some(at(50)))
    );

    // An id the journal never sent is ignored without an error, beside one it did.
    shared.on_event(receipt(ReceiptType::Delivered, &["3EB0NOTOURS", C], at(60)));
    recorded(1).await;
    assert_eq!(times(&h, DEFAULT_ACCOUNT, C).await, (Some(at(60)), None));

    // Receipts that are not about delivery never reach the journal: the next one it sees is
    // the read that follows them.
    for t in [
        ReceiptType::Retry,
        ReceiptType::ReadSelf,
        ReceiptType::Sender,
    ] {
        shared.on_event(receipt(t, &[C], at(65)));
    }
    shared.on_event(receipt(ReceiptType::Read, &[C], at(70)));
    let next = recorded(1).await;
    assert_eq!((next[0].kind, next[0].at), (ReceiptKind::Read, at(70)));
    assert_eq!(
        times(&h, DEFAULT_ACCOUNT, C).await,
        (Some(at(60)), Some(at(70)))
    );

    assert_eq!(times(&h, "second", A).await, (None, None));
    assert!(done.try_recv().is_err(), "nothing else was recorded");
    h.finish().await;
}
