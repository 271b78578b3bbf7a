//! The single writer: positions in commit order under concurrent live and history ingest (and
//! the chat list they leave), demo seeding, the search index's janitor, live commits.

use super::*;

#[tokio::test]
async fn positions_become_visible_in_order_under_concurrent_live_and_batch() {
    let h = Harness::start().await;
    let mut committed = h.archive.committed();
    let batch: Vec<Inbound> = (0..9_000)
        .map(|i| Inbound {
            chat_jid: phone(&format!("9725040{:05}", i % 300)),
            wa_id: format!("H{i}"),
            sender_jid: None,
            push_name: None,
            from_me: i % 7 == 0,
            timestamp: at(i),
            kind: MessageType::Text,
            text: format!("history {i}"),
            target_wa_id: None,
            edit: false,
            mentions: vec![],
            attachment: None,
        })
        .collect();
    let archive = h.archive.clone();
    let batch_task = tokio::spawn(async move { archive.ingest_batch("default", batch).await });
    let archive = h.archive.clone();
    let live_task = tokio::spawn(async move {
        let mut positions = Vec::new();
        for i in 0..150 {
            let m = Inbound {
                chat_jid: phone(ANA),
                wa_id: format!("L{i}"),
                sender_jid: None,
                push_name: None,
                from_me: false,
                timestamp: at(100_000 + i),
                kind: MessageType::Text,
                text: "live".into(),
                target_wa_id: None,
                edit: false,
                mentions: vec![],
                attachment: None,
            };
            match archive.ingest_live("default", m).await.unwrap() {
                IngestOutcome::Stored { position, .. } => positions.push(position),
                other => panic!("unexpected {other:?}"),
            }
        }
        positions
    });
    // A reader: whatever it sees later never fills in below what it saw before.
    let pool = h.pool.clone();
    let reader = tokio::spawn(async move {
        let client = pool.get().await.unwrap();
        let mut seen: HashSet<i64> = HashSet::new();
        let mut max_seen = 0i64;
        let mut snapshots = 0;
        loop {
            let rows: Vec<i64> = client
                .query("select position from messages", &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            for p in &rows {
                if seen.insert(*p) {
                    assert!(
                        *p > max_seen || snapshots == 0,
                        "position {p} appeared after {max_seen}"
                    );
                }
            }
            let new_max = rows.iter().copied().max().unwrap_or(0);
            snapshots += 1;
            if rows.len() >= 9_150 {
                return snapshots;
            }
            max_seen = max_seen.max(new_max);
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    });
    let mut watched = Vec::new();
    let watcher = async {
        while committed.changed().await.is_ok() {
            let p = *committed.borrow_and_update();
            watched.push(p);
            if p >= 9_150 {
                break;
            }
        }
    };
    let (stored, live, ()) = tokio::join!(batch_task, live_task, watcher);
    assert_eq!(stored.unwrap().unwrap(), 9_000);
    let live = live.unwrap();
    assert!(
        live.windows(2).all(|w| w[0] < w[1]),
        "live positions increase"
    );
    assert!(
        watched.windows(2).all(|w| w[0] < w[1]),
        "the committed position only grows"
    );
    let snapshots = reader.await.unwrap();
    assert!(snapshots > 1);
    let (count, max): (i64, i64) = {
        let r = h
            .pool
            .get()
            .await
            .unwrap()
            .query_one("select count(*), max(position) from messages", &[])
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(count, 9_150);
    assert_eq!(*watched.last().unwrap(), max);
    // Chat statistics are current once the history page is in.
    let listed = list_chats::handle(
        &h.state,
        &viewer_all(),
        ListChatsRequest {
            limit: Some(200),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(listed.chats[0].last_message_at, Some(at(100_149)));
    assert_eq!(listed.chats[0].unread_count, 150);
    assert_eq!(listed.chats[1].last_message_at, Some(at(8_999)));
    h.finish().await;
}

#[tokio::test]
async fn the_demo_connector_seeds_once_and_cannot_send() {
    let h = Harness::start_with(wazap_worker::config::ConnectorKind::Demo).await;
    assert!(!h.connector.can_send());
    assert_eq!(h.connector.state("default"), SyncState::Demo);
    let v = viewer_all();
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert!(listed.chats.len() >= 3);
    assert!(listed.chats.iter().all(|c| !c.can_send));
    let r = read(&h, &v, req(&listed.chats[0].chat_id)).await;
    assert!(r.count > 0);
    assert_eq!(r.sync, SyncState::Demo);
    assert!(r.notes.is_empty());
    let again = wazap_worker::connector::demo::seed(&h.archive, &h.pool, Utc::now())
        .await
        .unwrap();
    assert_eq!(again, 0, "an archive with messages is not seeded twice");
    h.finish().await;
}

/// The search index's pending list (GIN `fastupdate`) is merged by the archive's janitor
/// after commits, not left for the writer to merge when it overflows: shortly after a history
/// batch, no pending pages remain, though the batch stayed far below the list's 4 MiB limit.
#[tokio::test]
async fn the_search_index_pending_list_is_merged_after_ingest() {
    let h = Harness::start().await;
    h.exec("create extension if not exists pgstattuple").await;
    let batch: Vec<Inbound> = (0..3_000)
        .map(|i| Inbound {
            chat_jid: phone(&format!("9725050{:05}", i % 40)),
            wa_id: format!("J{i}"),
            sender_jid: None,
            push_name: None,
            from_me: false,
            timestamp: at(i),
            kind: MessageType::Text,
            text: format!("janitor word{} shared{} tail{}", i % 97, i % 13, i),
            target_wa_id: None,
            edit: false,
            mentions: vec![],
            attachment: None,
        })
        .collect();
    let stored = h.archive.ingest_batch("default", batch).await.unwrap();
    assert_eq!(stored, 3_000);
    let client = h.pool.get().await.unwrap();
    let pending = || async {
        client
            .query_one(
                "select pending_pages, pending_tuples from pgstatginindex('messages_search')",
                &[],
            )
            .await
            .map(|r| (r.get::<_, i32>(0), r.get::<_, i64>(1)))
            .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut last = pending().await;
    while last != (0, 0) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        last = pending().await;
    }
    assert_eq!(
        last,
        (0, 0),
        "pending (pages, tuples) after the janitor's turn"
    );
    // And the words are findable through the index proper.
    let hits: i64 = client
        .query_one(
            "select count(*) from messages where search @@ 'shared7'::tsquery",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(hits >= 230, "{hits}");
    drop(client);
    h.finish().await;
}

#[tokio::test]
async fn a_statement_committed_with_a_live_message_commits_or_fails_with_it() {
    let h = Harness::start().await;
    h.exec("create table also_marks (id text primary key)")
        .await;
    let mark = |id: &str| CommitWith {
        sql: "insert into also_marks (id) values ($1)",
        params: vec![Box::new(id.to_owned())],
    };
    // Both commit.
    let ok = h
        .archive
        .ingest_live_with("default", plain(&phone(ANA), "A1", 10), mark("a1"))
        .await
        .unwrap();
    assert!(matches!(ok, IngestOutcome::Stored { .. }), "{ok:?}");
    // The statement fails (a repeated key): the message is not stored either.
    let err = h
        .archive
        .ingest_live_with("default", plain(&phone(ANA), "A2", 11), mark("a1"))
        .await;
    assert!(err.is_err(), "{err:?}");
    let mut failing = None;

    // Live deliveries queued around a failing one, while a lock on the messages table holds
    // the writer's first transaction: the writer then takes the queued deliveries as groups,
    // the failing one among others. Every other delivery is still stored; it is not.
    let mut locker = h.pool.get().await.unwrap();
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("lock table messages in exclusive mode")
        .await
        .unwrap();
    let mut queued = Vec::new();
    for i in 0..80 {
        queued.push(
            h.archive
                .enqueue_live("default", plain(&phone(BEN), &format!("B{i}"), 100 + i))
                .await
                .unwrap(),
        );
        if i == 40 {
            failing = Some(
                h.archive
                    .enqueue_live_with("default", plain(&phone(BEN), "BX", 200), Some(mark("a1")))
                    .await
                    .unwrap(),
            );
        }
    }
    lock.commit().await.unwrap();
    drop(locker);
    for q in queued {
        let o = q.await.unwrap();
        assert!(matches!(o, IngestOutcome::Stored { .. }), "{o:?}");
    }
    assert!(failing.unwrap().await.is_err());

    let client = h.pool.get().await.unwrap();
    let stored: Vec<String> = client
        .query("select wa_id from messages order by position", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(stored.len(), 81, "A1 and B0..B79");
    assert!(stored.contains(&"A1".to_owned()));
    assert!(!stored.iter().any(|w| w == "A2" || w == "BX"));
    let marks: i64 = client
        .query_one("select count(*) from also_marks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(marks, 1);
    // The connection the failures happened on went back to the pool usable: a later live
    // message still commits, and chat statistics count every stored message.
    let o = h
        .archive
        .ingest_live("default", plain(&phone(BEN), "B80", 300))
        .await
        .unwrap();
    assert!(matches!(o, IngestOutcome::Stored { .. }), "{o:?}");
    let unread: i32 = client
        .query_one(
            "select c.unread_count from chats c
              where c.chat_id = (select chat_id from messages where wa_id = 'B80')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(unread, 81);
    drop(client);
    h.finish().await;
}

#[tokio::test]
async fn a_live_message_follows_a_policy_changed_since_the_last_one() {
    let h = Harness::start().await;
    let first = h
        .archive
        .ingest_live("default", plain(&phone(BEN), "P1", 10))
        .await
        .unwrap();
    let IngestOutcome::Stored { message_id, .. } = first else {
        panic!("{first:?}");
    };
    let client = h.pool.get().await.unwrap();
    let ben: String = client
        .query_one(
            "select chat_id from messages where message_id = $1",
            &[&message_id],
        )
        .await
        .unwrap()
        .get(0);
    // The owner excludes the chat behind the writer's back (the writer read the policy with
    // the first message): the next message of that chat is not stored, others still are.
    h.exec(&format!(
        "update archive_policy set excluded_chats = array['{ben}']"
    ))
    .await;
    let o = h
        .archive
        .ingest_live("default", plain(&phone(BEN), "P2", 11))
        .await
        .unwrap();
    assert_eq!(o, IngestOutcome::Excluded);
    let o = h
        .archive
        .ingest_live("default", plain(&phone(ANA), "P3", 12))
        .await
        .unwrap();
    assert!(matches!(o, IngestOutcome::Stored { .. }), "{o:?}");
    h.exec("update archive_policy set excluded_chats = '{}'")
        .await;
    let o = h
        .archive
        .ingest_live("default", plain(&phone(BEN), "P4", 13))
        .await
        .unwrap();
    assert!(matches!(o, IngestOutcome::Stored { .. }), "{o:?}");
    let n: i64 = client
        .query_one("select count(*) from messages where chat_id = $1", &[&ben])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2, "P1 and P4");
    drop(client);
    h.finish().await;
}

#[tokio::test]
async fn a_live_message_archived_already_is_a_duplicate_and_counted_once() {
    let h = Harness::start().await;
    let first = h
        .archive
        .ingest_live("default", plain(&phone(ANA), "D1", 10))
        .await
        .unwrap();
    let IngestOutcome::Stored { message_id, .. } = first else {
        panic!("{first:?}");
    };
    // Delivered again on its own: the writer knows the chat and plans the message as new;
    // Postgres refuses that and the ordinary path finds the copy.
    let again = h
        .archive
        .ingest_live("default", plain(&phone(ANA), "D1", 10))
        .await
        .unwrap();
    assert_eq!(
        again,
        IngestOutcome::Duplicate {
            message_id: message_id.clone()
        }
    );
    // And inside a group of live deliveries (queued while a lock holds the writer): the new
    // ones around it are stored, the copy is not.
    let mut locker = h.pool.get().await.unwrap();
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("lock table messages in exclusive mode")
        .await
        .unwrap();
    let blocker = h
        .archive
        .enqueue_live("default", plain(&phone(ANA), "D2", 11))
        .await
        .unwrap();
    let mut queued = Vec::new();
    for wa in ["D3", "D1", "D4"] {
        queued.push(
            h.archive
                .enqueue_live("default", plain(&phone(ANA), wa, 12))
                .await
                .unwrap(),
        );
    }
    lock.commit().await.unwrap();
    drop(locker);
    assert!(matches!(
        blocker.await.unwrap(),
        IngestOutcome::Stored { .. }
    ));
    let outcomes: Vec<IngestOutcome> = futures::future::join_all(queued)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(
        matches!(outcomes[0], IngestOutcome::Stored { .. }),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], IngestOutcome::Duplicate { message_id });
    assert!(
        matches!(outcomes[2], IngestOutcome::Stored { .. }),
        "{outcomes:?}"
    );
    // The refused flight's statistics went with it: unread counts each stored message once.
    let client = h.pool.get().await.unwrap();
    let row = client
        .query_one(
            "select c.unread_count, c.last_position, (select count(*) from messages m
                     where m.chat_id = c.chat_id), (select max(position) from messages m
                     where m.chat_id = c.chat_id)
               from chats c where c.chat_id = (select chat_id from messages where wa_id = 'D1')",
            &[],
        )
        .await
        .unwrap();
    let (unread, last, stored, max): (i32, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((i64::from(unread), last), (stored, max));
    assert_eq!(stored, 4, "D1 to D4");
    drop(client);
    h.finish().await;
}
