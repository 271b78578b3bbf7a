//! Sends abandoned in flight (their call could not journal an outcome, e.g. Postgres failed
//! under both `finish` attempts) are settled while the worker runs: a retry of such a key answers
//! `outcome_unknown` at once instead of waiting out its poll, the periodic sweep settles the
//! rest, a send still within its budget is left alone, and a reservation whose call failed
//! before any hand-over is `failed` under its own WhatsApp id only.

mod common;

use std::time::{Duration, Instant};

use common::{Harness, journal_state, phone, send_text, sender};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::{SendMessageRequest, SendState};
use wazap_shared::wire::sim::UpsertContact;
use wazap_worker::send::{journal, recovery};

#[tokio::test]
async fn abandoned_sends_are_settled_and_their_retry_answers_at_once() {
    let h = Harness::start().await;
    let chat = h
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: phone("972505550002"),
                lid: None,
                name: "Dana".into(),
            },
        )
        .await
        .ids
        .remove(0);
    let grant = sender(&h, SendMode::All, vec![]).await;
    let req = |key: &str| SendMessageRequest {
        chat_id: chat.clone(),
        request_id: key.into(),
        text: "see you".into(),
    };
    for key in ["old-1", "old-2", "fresh"] {
        let sent = send_text(&h, &grant, &req(key)).await.expect("sent");
        assert_eq!(sent.state, SendState::Accepted);
    }
    // As a call leaves its row when it cannot journal the outcome: in flight. Two were left
    // two minutes ago, one just now.
    h.exec(
        "update send_journal set state = 'transmitting', updated_at = now() - interval '2 minutes'
          where request_id in ('old-1', 'old-2');
         update send_journal set state = 'transmitting' where request_id = 'fresh'",
    )
    .await;

    let started = Instant::now();
    let again = send_text(&h, &grant, &req("old-1")).await.expect("replay");
    assert_eq!(
        (again.state, again.duplicate),
        (SendState::OutcomeUnknown, true)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answered from the journal, not after the 55 s poll"
    );
    assert_eq!(journal_state(&h, "old-1").await, "outcome_unknown");

    assert_eq!(recovery::sweep(&h.pool).await.expect("sweep"), 1);
    assert_eq!(journal_state(&h, "old-2").await, "outcome_unknown");
    assert_eq!(
        journal_state(&h, "fresh").await,
        "transmitting",
        "a send within its budget may still be in flight"
    );

    // But no call in this worker handles it, and only this worker sends: a retry of it
    // settles it at once rather than waiting out the budget.
    let started = Instant::now();
    let again = send_text(&h, &grant, &req("fresh")).await.expect("replay");
    assert_eq!(
        (again.state, again.duplicate),
        (SendState::OutcomeUnknown, true)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a key nobody handles was waited for"
    );
    h.finish().await;
}

#[tokio::test]
async fn a_reservation_without_a_hand_over_is_failed_under_its_own_id_only() {
    let h = Harness::start().await;
    h.exec(
        "insert into send_journal (connection_id, request_id, tool, account_id, chat_id, digest,
             recipient, wa_id, message_id, state)
         values ('conn_a', 'lost', 'send_message', 'default', 'c_1', '\\x01', 'x', 'W1', 'm_1',
                 'transmitting')",
    )
    .await;
    let db = h.pool.get().await.expect("db");
    assert_eq!(
        journal::abandon(&db, "conn_a", "lost", "W-other")
            .await
            .expect("abandon"),
        0,
        "another call's hand-over is not this call's to fail"
    );
    assert_eq!(
        journal::abandon(&db, "conn_a", "lost", "W1")
            .await
            .expect("abandon"),
        1
    );
    drop(db);
    assert_eq!(journal_state(&h, "lost").await, "failed");
    h.finish().await;
}
