//! The send journal inside the worker: start-up recovery settles unfinished sends (mid-
//! transmission → `outcome_unknown`, never begun → `failed`) and sweeps the outbox, the demo
//! connector never sends, key lookups are replanned as the journal grows, and reservations
//! queue on their connection's key counter from the first.

mod common;

use common::{Harness, phone, send_text, sender};
use wazap_shared::ErrorCode;
use wazap_shared::bus::decode_reply;
use wazap_shared::subjects::{op, sim_op};
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::{SendMessageRequest, SendResult, SendState};
use wazap_shared::wire::sim::UpsertContact;
use wazap_worker::config::ConnectorKind;
use wazap_worker::send::recovery::{Recovered, recover};

#[tokio::test]
async fn recovery_settles_unfinished_sends_and_sweeps_the_outbox() {
    let h = Harness::start().await;
    h.exec(
        "insert into send_journal (connection_id, request_id, tool, account_id, chat_id, digest,
             recipient, wa_id, message_id, state)
         values ('conn_a', 'mid', 'send_message', 'default', 'c_1', '\\x01', 'x', 'W1', 'm_1', 'transmitting'),
                ('conn_a', 'early', 'send_message', 'default', 'c_1', '\\x02', 'x', 'W2', 'm_2', 'reserved'),
                ('conn_a', 'done', 'send_message', 'default', 'c_1', '\\x03', 'x', 'W3', 'm_3', 'accepted'),
                ('conn_a', 'gone', 'send_message', 'default', 'c_1', '\\x04', 'x', 'W4', 'm_4', 'outcome_unknown');
         insert into send_outbox (connection_id, request_id, account_id, chat_id, message_id, text, handed_at)
         values ('conn_a', 'mid', 'default', 'c_1', 'm_1', 'a', now()),
                ('conn_a', 'done', 'default', 'c_1', 'm_3', 'b', now()),
                ('conn_a', 'gone', 'default', 'c_1', 'm_4', 'c', now() - interval '25 hours');",
    )
    .await;
    let r = recover(&h.pool, "default").await.expect("recovery");
    assert_eq!(
        r,
        Recovered {
            unknown: 1,
            failed: 1,
            swept: 2
        }
    );
    let client = h.pool.get().await.expect("db");
    let states: Vec<(String, String)> = client
        .query(
            "select request_id, state from send_journal order by request_id",
            &[],
        )
        .await
        .expect("states")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want = [
        ("done", "accepted"),
        ("early", "failed"),
        ("gone", "outcome_unknown"),
        ("mid", "outcome_unknown"),
    ];
    assert_eq!(
        states,
        want.map(|(a, b)| (a.to_owned(), b.to_owned())).to_vec()
    );
    let left: Vec<String> = client
        .query("select request_id from send_outbox", &[])
        .await
        .expect("outbox")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(left, vec!["mid".to_owned()]);
    // A second run finds nothing to do.
    assert_eq!(
        recover(&h.pool, "default").await.expect("again"),
        Recovered::default()
    );
    drop(client);
    h.finish().await;
}

#[tokio::test]
async fn the_demo_connector_cannot_send() {
    let h = Harness::start_with(ConnectorKind::Demo).await;
    let chat: String = h
        .pool
        .get()
        .await
        .expect("db")
        .query_one("select chat_id from chats order by chat_id limit 1", &[])
        .await
        .expect("a demo chat")
        .get(0);
    let grant = sender(&h, SendMode::All, vec![]).await;
    let e = send_text(
        &h,
        &grant,
        &SendMessageRequest {
            chat_id: chat,
            request_id: "demo-1".into(),
            text: "hello".into(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::SessionCannotSend);
    assert!(e.message.contains("demo"));
    h.finish().await;
}

#[tokio::test]
async fn rpc_ops_send_and_report_through_the_sim() {
    let h = Harness::start().await;
    let chat = h
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: phone("972505550001"),
                lid: None,
                name: "Noa".into(),
            },
        )
        .await
        .ids
        .remove(0);
    let grant = sender(&h, SendMode::Selected, vec![chat.clone()]).await;
    let req = SendMessageRequest {
        chat_id: chat.clone(),
        request_id: "h-1".into(),
        text: "on my way".into(),
    };
    let sent = send_text(&h, &grant, &req).await.expect("sent");
    assert_eq!((sent.state, sent.duplicate), (SendState::Accepted, false));
    let (status, _) = wazap_worker::rpc::dispatch(
        &h.state,
        op::GET_SEND_STATUS,
        Some(&grant),
        br#"{"request_id":"h-1"}"#,
    )
    .await;
    let status: SendResult = decode_reply(&status).expect("status");
    assert_eq!(status.message_id, sent.message_id);
    assert!(status.duplicate);
    // The journal holds a digest, never the text.
    let row = h
        .pool
        .get()
        .await
        .expect("db")
        .query_one(
            "select to_jsonb(j)::text from send_journal j where request_id = 'h-1'",
            &[],
        )
        .await
        .expect("row");
    let stored: String = row.get(0);
    assert!(!stored.contains("on my way"));
    h.finish().await;
}

#[tokio::test]
async fn accepted_commits_with_the_own_message_or_neither_does() {
    use wazap_worker::archive::{Inbound, IngestOutcome};
    use wazap_worker::send::journal::accepted_with_echo;
    let h = Harness::start().await;
    h.exec(
        "insert into send_journal (connection_id, request_id, tool, account_id, chat_id, digest,
             recipient, wa_id, message_id, state)
         values ('conn_a', 'flying', 'send_message', 'default', 'c_1', '\\x01', 'x', 'W1', 'm_1', 'transmitting'),
                ('conn_a', 'ended', 'send_message', 'default', 'c_1', '\\x02', 'x', 'W2', 'm_2', 'failed');
         insert into send_outbox (connection_id, request_id, account_id, chat_id, message_id, text)
         values ('conn_a', 'flying', 'default', 'c_1', 'm_1', 'on my way');",
    )
    .await;
    let own = |wa: &str| Inbound {
        chat_jid: phone("972501111111"),
        wa_id: wa.into(),
        sender_jid: None,
        push_name: None,
        from_me: true,
        timestamp: chrono::Utc::now(),
        kind: wazap_shared::wire::MessageType::Text,
        text: "on my way".into(),
        target_wa_id: None,
        edit: false,
        mentions: vec![],
        attachment: None,
    };
    let at = chrono::Utc::now();
    // In flight: accepted, the outbox row gone, the message archived — in one commit.
    let o = h
        .archive
        .ingest_live_with(
            "default",
            own("W1"),
            accepted_with_echo("conn_a", "flying", at),
        )
        .await
        .expect("accepted with its message");
    assert!(matches!(o, IngestOutcome::Stored { .. }), "{o:?}");
    // No longer in flight: nothing commits, the message included.
    let e = h
        .archive
        .ingest_live_with(
            "default",
            own("W2"),
            accepted_with_echo("conn_a", "ended", at),
        )
        .await;
    assert!(e.is_err(), "{e:?}");
    let client = h.pool.get().await.expect("db");
    let row = client
        .query_one(
            "select (select string_agg(request_id || '=' || state, ',' order by request_id)
                       from send_journal),
                    (select count(*) from send_outbox),
                    (select string_agg(wa_id, ',' order by wa_id) from messages)",
            &[],
        )
        .await
        .expect("state");
    assert_eq!(row.get::<_, String>(0), "ended=failed,flying=accepted");
    assert_eq!(row.get::<_, i64>(1), 0);
    assert_eq!(row.get::<_, String>(2), "W1");
    drop(client);
    h.finish().await;
}

/// A key lookup prepared while the journal was small keeps the sequential scan Postgres chose
/// then, however large the journal grows, until something invalidates the plan: the
/// statistics refresh does so once the journal has changed by more than it held.
///
/// Autovacuum is off for the table here: on a server where it runs, it may analyze the grown
/// journal first (which is the minute-late fix the refresh exists to beat), and the refresh
/// would then rightly find nothing stale.
#[tokio::test]
async fn a_plan_made_on_a_small_journal_does_not_outlive_its_growth() {
    let h = Harness::start().await;
    let rows = |from: i32, to: i32| {
        format!(
            "insert into send_journal (connection_id, request_id, tool, account_id, chat_id,
                 digest, recipient, wa_id, message_id, state)
             select 'conn_a', 'r' || i, 'send_message', 'default', 'c_1', '\\x01', 'x',
                    'W' || i, 'm_' || i, 'accepted'
               from generate_series({from}, {to}) i"
        )
    };
    // What autovacuum leaves after the first few sends: statistics of a one-page table.
    h.exec(&format!(
        "alter table send_journal set (autovacuum_enabled = off);
         {}; analyze send_journal",
        rows(1, 60)
    ))
    .await;
    let client = h.pool.get().await.expect("db");
    client
        .batch_execute(
            "prepare lookup(text, text) as
               select state from send_journal where connection_id = $1 and request_id = $2",
        )
        .await
        .expect("prepare");
    let plan = async || {
        // Past the five custom plans, Postgres settles on its generic one.
        for _ in 0..6 {
            client
                .batch_execute("execute lookup('conn_a', 'r7')")
                .await
                .expect("execute");
        }
        let lines = client
            .query("explain execute lookup('conn_a', 'r7')", &[])
            .await
            .expect("explain");
        lines
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(plan().await.contains("Seq Scan on send_journal"));
    h.exec(&rows(61, 20_000)).await;
    // The growth alone leaves the statistics of 60 rows. (The cached plan usually survives it
    // too, but not always: a shared-invalidation reset on a busy server replans everything, so
    // that is not asserted.)
    let stale = h
        .pool
        .get()
        .await
        .expect("db")
        .query_one(
            "select reltuples::bigint from pg_class where relname = 'send_journal'",
            &[],
        )
        .await
        .expect("reltuples");
    assert_eq!(stale.get::<_, i64>(0), 60);

    // Postgres publishes the change counters about once a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let analyzed = wazap_worker::db::statistics::refresh(&h.pool)
            .await
            .expect("refresh");
        if analyzed.contains(&"send_journal".to_owned()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never analyzed");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let after = plan().await;
    assert!(after.contains("Index Scan"), "{after}");
    // A settled journal is not analyzed again.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let again = wazap_worker::db::statistics::refresh(&h.pool)
        .await
        .expect("refresh");
    assert!(!again.contains(&"send_journal".to_owned()), "{again:?}");
    drop(client);
    h.finish().await;
}

/// A new connection's first reservation queues on its key counter, which exists from the
/// connection's creation. Were there no row to lock, the reservation would insert its key
/// first and only then queue for the counter — the order in which simultaneous first sends of
/// one connection deadlocked (one holding the counter while waiting for the other's key).
#[tokio::test]
async fn a_new_connections_first_reservation_queues_on_its_key_counter() {
    use wazap_worker::send::journal::{self, Reservation, Reserved};
    let h = Harness::start().await;
    let new = wazap_worker::grants::NewConnection {
        name: "assistant".into(),
        kind: wazap_shared::grant::ConnectionKind::Remote,
        expires_at: chrono::Utc::now() + chrono::Duration::days(1),
        read_scope: wazap_shared::wire::grants::ReadScope::all(),
    };
    wazap_worker::grants::ensure_signing_key(&h.pool)
        .await
        .expect("signing key");
    let (conn, _) = wazap_worker::grants::create_connection(&h.pool, new)
        .await
        .expect("connection");
    let mut holder = h.pool.get().await.expect("db");
    let tx = holder.transaction().await.expect("begin");
    let counter = tx
        .query(
            "select keys from send_journal_keys where connection_id = $1 for update",
            &[&conn.id],
        )
        .await
        .expect("lock the counter");
    assert_eq!(counter.len(), 1, "the counter is made with the connection");
    assert_eq!(counter[0].get::<_, i32>(0), 0);

    let waiter = h.pool.get().await.expect("db");
    let pid: i32 = waiter
        .query_one("select pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    let id = conn.id.clone();
    let reservation = tokio::spawn(async move {
        let r = Reservation {
            connection_id: &id,
            request_id: "first",
            tool: "send_message",
            account_id: "default",
            chat_id: "c_1",
            digest: b"\x01",
            recipient: "x",
            wa_id: "W1",
            message_id: "m_1",
        };
        journal::reserve(&waiter, &r, None)
            .await
            .map(|done| matches!(done, Reserved::New))
    });
    let watcher = h.pool.get().await.expect("db");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        assert!(
            !reservation.is_finished(),
            "the reservation went ahead without the counter's lock"
        );
        let waits: String = watcher
            .query_one(
                "select coalesce(wait_event_type, '') from pg_stat_activity where pid = $1",
                &[&pid],
            )
            .await
            .expect("activity")
            .get(0);
        if waits == "Lock" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never queued");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tx.commit().await.expect("commit");
    assert!(reservation.await.expect("join").expect("reserve"));
    let keys: i32 = watcher
        .query_one(
            "select keys from send_journal_keys where connection_id = $1",
            &[&conn.id],
        )
        .await
        .expect("counter")
        .get(0);
    assert_eq!(keys, 1);
    drop((holder, watcher));
    h.finish().await;
}
