//! The answer to the journal's reservation is lost (#25 items 2 and 7): the worker's link to
//! Postgres is cut right after the reservation statement left — after it reached Postgres (which
//! commits it; only the answer is lost) or before. Nothing is handed to WhatsApp until one
//! reservation is known durable: the key is settled on another connection (read again, or
//! reserved again when the statement never arrived) and sent once, on the ordinary path and on
//! the remembered-send one. When even that cannot be done, the call sends nothing, answers a
//! retryable code, and the key sends once when retried.

use std::time::Duration;

use wazap_shared::ErrorCode;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::SendState;
use wazap_tests::Stack;
use wazap_tests::fault::{PgCluster, Proxy};
use wazap_worker::config::ConnectorKind;

use super::{journal, transmitted_once};
use crate::send::{connection_with_token, contact, send_text, spawn_send};

/// A worker on a throwaway cluster through a proxy, with a chat and a connection that may send.
struct Setup {
    // Dropped in order: the stack (its database dropped through the proxy), then the rest.
    stack: Stack,
    proxy: Proxy,
    _pg: PgCluster,
    grant: VerifiedGrant,
    chat: String,
}

async fn setup() -> anyhow::Result<Setup> {
    let pg = PgCluster::start().await?;
    let proxy = Proxy::start(([127, 0, 0, 1], pg.port()).into()).await?;
    let through = format!("postgres://postgres@{}/postgres", proxy.addr());
    let stack = Stack::start_on_server(&through, ConnectorKind::Sim).await?;
    let chat = contact(&stack, "972503330002", "Dana").await?;
    let (grant, _) = connection_with_token(&stack, SendMode::All, vec![]).await?;
    Ok(Setup {
        stack,
        proxy,
        _pg: pg,
        grant,
        chat,
    })
}

impl Setup {
    /// Send `key` and assert it was accepted (a repeat when `duplicate`).
    async fn accepted(&self, key: &str, duplicate: bool) -> anyhow::Result<()> {
        let sent = send_text(&self.stack, &self.grant, &self.chat, key, "hello").await?;
        assert_eq!(sent.state, SendState::Accepted, "{key}");
        assert_eq!(sent.duplicate, duplicate, "{key}");
        Ok(())
    }
}

// Multi-threaded: the proxy's tasks must keep running while a drop blocks a thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_whose_answer_is_lost_is_read_again_and_sent_once() -> anyhow::Result<()> {
    let s = setup().await?;
    // A first send of the connection takes the ordinary path; once its grant and chat are
    // remembered, the next takes the guarded statement.
    for key in ["lost-ordinary", "lost-remembered"] {
        s.proxy.lose_reply_to(key.as_bytes());
        s.accepted(key, false).await?;
        assert!(
            s.proxy.cut_fired(),
            "{key}'s reservation never passed the proxy"
        );
        // The retry reads the outcome.
        s.accepted(key, true).await?;
    }
    let journal = journal(&s.stack.pool).await?;
    for key in ["lost-ordinary", "lost-remembered"] {
        assert_eq!(journal[key].0, "accepted", "{key}");
    }
    assert_eq!(transmitted_once(&s.stack, &journal).await?.len(), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_that_never_arrived_is_made_again_and_sent_once() -> anyhow::Result<()> {
    let s = setup().await?;
    for key in ["dropped-ordinary", "dropped-remembered"] {
        s.proxy.drop_request(key.as_bytes());
        s.accepted(key, false).await?;
        assert!(
            s.proxy.cut_fired(),
            "{key}'s reservation never passed the proxy"
        );
    }
    let journal = journal(&s.stack.pool).await?;
    assert_eq!(transmitted_once(&s.stack, &journal).await?.len(), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_that_cannot_be_settled_sends_nothing_until_retried() -> anyhow::Result<()> {
    let s = setup().await?;
    s.accepted("first", false).await?;
    let key = "unsettled";
    // The reservation is dropped and the link stalls: settling the key hangs too, until the
    // link is cut.
    s.proxy.drop_request_then_stall(key.as_bytes());
    let send = spawn_send(&s.stack, &s.grant, &s.chat, key, "hello", None);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        s.proxy.cut_fired(),
        "the reservation never passed the proxy"
    );
    s.proxy.reset();
    s.proxy.pass();
    // The test's own pooled connections go through the proxy too: let them see the cut.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let e = send
        .await?
        .expect_err("a send whose reservation was never settled was answered as sent");
    assert_eq!(e.code, ErrorCode::WorkerUnavailable, "{e:?}");
    assert!(e.message.contains("nothing was sent"), "{}", e.message);
    let journal_now = journal(&s.stack.pool).await?;
    assert!(!journal_now.contains_key(key), "a row was journaled");
    assert_eq!(transmitted_once(&s.stack, &journal_now).await?.len(), 1);

    s.accepted(key, false).await?;
    let journal = journal(&s.stack.pool).await?;
    assert_eq!(transmitted_once(&s.stack, &journal).await?.len(), 2);
    Ok(())
}
