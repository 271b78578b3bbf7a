//! The caller's deadline reaches the send path (DESIGN §7, `send_outcome_unknown`): a send whose
//! deadline has passed by the time the worker has reserved it is journaled `failed` and handed
//! to nobody, so the gateway's "outcome unknown" answer is never followed by a transmission; a
//! retry of the key reads `failed` at once. Requests go through the worker's real dispatcher on
//! NATS, with the headers a gateway sets.

mod common;

use std::time::{Duration, SystemTime};

use common::{Harness, journal_state, phone, sender};
use wazap_shared::bus::{Deadline, decode_reply};
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::{op, sim_op};
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::{SendMessageRequest, SendResult, SendState};
use wazap_shared::wire::sim::UpsertContact;
use wazap_worker::shutdown::Shutdown;

/// `send_message` over NATS to the dispatcher, carrying `deadline` (none: an older gateway).
async fn send_with(
    h: &Harness,
    grant: &VerifiedGrant,
    req: &SendMessageRequest,
    deadline: Option<Deadline>,
) -> SendResult {
    let mut headers = async_nats::HeaderMap::new();
    grant.to_headers(&mut headers);
    if let Some(d) = deadline {
        d.to_headers(&mut headers);
    }
    let reply = h
        .nats
        .request_with_headers(
            h.subjects.rpc(Some("default"), op::SEND_MESSAGE),
            headers,
            serde_json::to_vec(req).expect("body").into(),
        )
        .await
        .expect("the worker answers");
    decode_reply(&reply.payload).expect("a send result")
}

async fn transmitted(h: &Harness) -> usize {
    common::transmissions(h).await.len()
}

fn text(chat: &str, request_id: &str) -> SendMessageRequest {
    SendMessageRequest {
        chat_id: chat.into(),
        request_id: request_id.into(),
        text: "running late".into(),
    }
}

#[tokio::test]
async fn a_send_past_its_deadline_is_journaled_failed_and_never_transmitted() {
    let h = Harness::start().await;
    let serving = tokio::spawn(wazap_worker::rpc::serve_subject(
        h.state.clone(),
        h.subjects.rpc_all(),
        Shutdown::new(h.shutdown.clone()),
    ));
    let chat = h
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: phone("972505550007"),
                lid: None,
                name: "Gal".into(),
            },
        )
        .await
        .ids
        .remove(0);
    let grant = sender(&h, SendMode::All, vec![]).await;

    // The gateway gave up a second ago: reserved, then journaled `failed`, nothing handed over.
    let late = Deadline::at(SystemTime::now() - Duration::from_secs(1));
    let r = send_with(&h, &grant, &text(&chat, "late-1"), Some(late)).await;
    assert_eq!((r.state, r.duplicate), (SendState::Failed, false));
    assert_eq!(journal_state(&h, "late-1").await, "failed");
    assert_eq!(transmitted(&h).await, 0, "nothing reached the connector");

    // A retry of the key (even without a deadline) reads `failed` at once, and sends nothing.
    let again = send_with(&h, &grant, &text(&chat, "late-1"), None).await;
    assert_eq!((again.state, again.duplicate), (SendState::Failed, true));
    assert_eq!(again.message_id, r.message_id);
    assert_eq!(transmitted(&h).await, 0);
    let outbox: i64 = h
        .pool
        .get()
        .await
        .expect("db")
        .query_one("select count(*) from send_outbox", &[])
        .await
        .expect("outbox")
        .get(0);
    assert_eq!(outbox, 0, "a send never begun leaves no unconfirmed text");

    // A deadline still ahead, and no deadline at all (an older gateway), transmit as before.
    let ahead = Deadline::after(Duration::from_secs(60));
    let sent = send_with(&h, &grant, &text(&chat, "on-time"), Some(ahead)).await;
    assert_eq!(sent.state, SendState::Accepted);
    let old = send_with(&h, &grant, &text(&chat, "old-gateway"), None).await;
    assert_eq!(old.state, SendState::Accepted);
    assert_eq!(transmitted(&h).await, 2);

    h.shutdown.cancel();
    serving.await.expect("the dispatcher task").expect("served");
    h.finish().await;
}
