//! Chat statistics kept by the writer: repaired after an unclean stop, and kept by history
//! chunks written beside each other.

use super::*;

#[tokio::test]
async fn chat_statistics_are_repaired_after_an_unclean_stop() {
    let h = Harness::start().await;
    history(
        &h,
        vec![
            text(&phone(ANA), "A1", at(10), "a"),
            text(&phone(BEN), "B1", at(20), "b"),
        ],
    )
    .await;
    // As if the worker died with history deltas pending: statistics lag, the mark is set.
    h.exec("update chats set last_message_at = null, last_position = null; update accounts set chat_stats_dirty = true where account_id = 'default'")
        .await;
    let v = viewer_all();
    assert!(
        list_chats::handle(&h.state, &v, ListChatsRequest::default())
            .await
            .unwrap()
            .chats
            .is_empty()
    );
    let restarted = wazap_worker::archive::Archive::start(h.pool.clone(), "default", &h.supervisor)
        .await
        .unwrap();
    assert_eq!(
        restarted.meta(),
        h.archive.meta(),
        "the archive keeps its identity"
    );
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    let times: Vec<_> = listed.chats.iter().map(|c| c.last_message_at).collect();
    assert_eq!(times, vec![Some(at(20)), Some(at(10))]);
    let dirty: bool = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select chat_stats_dirty from accounts where account_id = 'default'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!dirty);
    h.finish().await;
}

#[tokio::test]
async fn history_chunks_written_together_store_a_shared_message_once_and_keep_statistics() {
    let h = Harness::start().await;
    let n = wazap_worker::archive::BATCH_CHUNK;
    let msg = |i: usize| {
        plain(
            &phone(&format!("9725041{:05}", i % 400)),
            &format!("S{i}"),
            i as i64,
        )
    };
    // Four chunks of one page: n messages; the same n again in reverse order (written beside
    // the first, the two would take the same keys in opposite orders and wait for each other);
    // then 2n fresh ones.
    let mut page: Vec<Inbound> = (0..n).map(msg).collect();
    page.extend((0..n).rev().map(msg));
    page.extend((n..3 * n).map(msg));
    // Hold every insert back until as many chunks as will be let in at once wait for the
    // table, so that their inserts run side by side when it is released.
    let mut locker = h.pool.get().await.unwrap();
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("lock table messages in exclusive mode")
        .await
        .unwrap();
    let archive = h.archive.clone();
    let ingest = tokio::spawn(async move { archive.ingest_batch_outcomes("default", page).await });
    let mut waiting = 0;
    for _ in 0..50 {
        waiting = lock
            .query_one(
                "select count(*) from pg_locks
                  where relation = 'messages'::regclass and not granted",
                &[],
            )
            .await
            .unwrap()
            .get::<_, i64>(0);
        if waiting >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(waiting >= 1, "the first chunk waits for the table");
    lock.commit().await.unwrap();
    drop(locker);
    let outcomes = tokio::time::timeout(std::time::Duration::from_secs(60), ingest)
        .await
        .expect("no chunk waits for another forever")
        .unwrap()
        .expect("every chunk is stored");
    assert_eq!(outcomes.len(), 4 * n);
    for (k, o) in outcomes[n..2 * n].iter().enumerate() {
        let IngestOutcome::Stored { message_id, .. } = &outcomes[n - 1 - k] else {
            panic!("{:?}", outcomes[n - 1 - k]);
        };
        assert_eq!(
            o,
            &IngestOutcome::Duplicate {
                message_id: message_id.clone()
            }
        );
    }
    let stored: HashSet<i64> = outcomes
        .iter()
        .filter_map(|o| match o {
            IngestOutcome::Stored { position, .. } => Some(*position),
            _ => None,
        })
        .collect();
    assert_eq!(stored.len(), 3 * n);
    let client = h.pool.get().await.unwrap();
    let row = client
        .query_one("select count(*), max(position) from messages", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 3 * n as i64);
    assert_eq!(*h.archive.committed().borrow(), row.get::<_, i64>(1));
    // Every chat's statistics (400 chats: applied in two halves) count the chunks written
    // beside each other.
    let wrong: i64 = client
        .query_one(
            "select count(*) from chats c
              where c.last_position is distinct from
                    (select max(position) from messages m where m.chat_id = c.chat_id)
                 or c.last_message_at is distinct from
                    (select max(ts) from messages m where m.chat_id = c.chat_id)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(wrong, 0);
    let dirty: bool = client
        .query_one(
            "select chat_stats_dirty from accounts where account_id = 'default'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!dirty, "the page's last chunk flushed every delta");
    drop(client);
    h.finish().await;
}
