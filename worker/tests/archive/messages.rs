//! read_messages: paging, `types`, asking the phone for older history, previews, sync notes, sim payload checks.

use super::*;

#[tokio::test]
async fn read_messages_pages_without_gaps_counts_types_and_asks_the_phone() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    let msgs: Vec<SimMessage> = (0..120)
        .map(|i| {
            if i % 10 == 0 {
                image(&chat, &format!("M{i:03}"), i, "pic")
            } else {
                text(&chat, &format!("M{i:03}"), at(i), &format!("n{i}"))
            }
        })
        .collect();
    let ack = history(&h, msgs).await;
    assert_eq!(ack.stored, 120);
    let v = viewer_all();
    let first = read(&h, &v, req(&format!("+{ANA}"))).await;
    assert_eq!(first.count, 50);
    assert_eq!(first.sync, SyncState::Live);
    assert!(first.notes.is_empty());
    assert!(first.older.is_none());
    assert_eq!(first.messages.last().unwrap().text, "n119");
    assert_eq!(first.messages[0].message_id, ack.ids[70]);
    let chat_id = first.chat_id.clone();
    assert!(chat_id.starts_with("c_"));

    let mut all: Vec<String> = first
        .messages
        .iter()
        .map(|m| m.message_id.clone())
        .collect();
    let mut before = all[0].clone();
    let mut older = None;
    loop {
        let page = read(
            &h,
            &v,
            ReadMessagesRequest {
                before: Some(before.clone()),
                ..req(&chat_id)
            },
        )
        .await;
        older = page.older.clone().or(older);
        if page.messages.is_empty() {
            break;
        }
        let ids: Vec<String> = page.messages.iter().map(|m| m.message_id.clone()).collect();
        before = ids[0].clone();
        all.splice(0..0, ids);
    }
    assert_eq!(
        all, ack.ids,
        "pages join without gaps or overlap, oldest first"
    );
    let older = older.expect("the phone was asked when the archive ran out");
    assert!(older.asked_phone);
    assert_eq!(older.received, 0);

    // `types` filters and `limit` counts only matching messages; both are echoed.
    let images = read(
        &h,
        &v,
        ReadMessagesRequest {
            types: Some(vec![MessageType::Image]),
            limit: Some(5),
            ..req(&chat_id)
        },
    )
    .await;
    assert_eq!(images.count, 5);
    assert!(images.messages.iter().all(|m| m.kind == MessageType::Image));
    assert_eq!(images.messages[4].message_id, ack.ids[110]);
    assert_eq!(images.messages[0].message_id, ack.ids[70]);
    assert_eq!(images.types, Some(vec![MessageType::Image]));
    let att = images.messages[0].attachment.as_ref().expect("attachment");
    assert_eq!(att.mime_type, "image/jpeg");
    assert_eq!(att.filename.as_deref(), Some("M070.jpg"));
    assert_eq!(att.caption.as_deref(), Some("pic"));
    assert_eq!(att.size, Some(16));
    assert!(att.attachment_id.starts_with("a_"));

    for (bad, field) in [
        (
            ReadMessagesRequest {
                limit: Some(0),
                ..req(&chat_id)
            },
            "limit",
        ),
        (
            ReadMessagesRequest {
                hours: Some(2),
                ..req(&chat_id)
            },
            "hours",
        ),
        (
            ReadMessagesRequest {
                before: Some("m_doesnotexist".into()),
                ..req(&chat_id)
            },
            "before",
        ),
        (
            ReadMessagesRequest {
                types: Some(vec![]),
                ..req(&chat_id)
            },
            "types",
        ),
        (req("972@s.whatsapp.net"), "chat_id"),
        (
            ReadMessagesRequest {
                hours: Some(25),
                ..req("status")
            },
            "hours",
        ),
    ] {
        let e = read_messages::handle(&h.state, &v, bad).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.message().starts_with(field), "{}", e.message());
    }
    for missing in ["c_0000000000000000000a", "+15550001111"] {
        let e = read_messages::handle(&h.state, &v, req(missing))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ChatNotFound);
    }
    // Another account: checked in the read's own flight — one that does not exist is
    // `account_not_found` (named, or named by the chat id), before whether the chat exists;
    // one that exists answers for its chat.
    let in_account = |account: &str, chat: &str| ReadMessagesRequest {
        account_id: Some(account.to_owned()),
        ..req(chat)
    };
    for (request, code) in [
        (
            in_account("other", "+15550001111"),
            ErrorCode::AccountNotFound,
        ),
        (in_account("other", "status"), ErrorCode::AccountNotFound),
        (req(&format!("{chat_id}-other")), ErrorCode::AccountNotFound),
        (
            in_account("default", "+15550001111"),
            ErrorCode::ChatNotFound,
        ),
    ] {
        let e = read_messages::handle(&h.state, &v, request.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "{request:?}");
    }
    h.serve("other").await;
    for request in [
        in_account("other", "+15550001111"),
        req(&format!("{chat_id}-other")),
    ] {
        let e = read_messages::handle(&h.state, &v, request.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ChatNotFound, "{request:?}");
    }
    let stories = read(&h, &v, in_account("other", "status")).await;
    assert_eq!((stories.count, stories.account_id.as_str()), (0, "other"));
    h.finish().await;
}

#[tokio::test]
async fn history_pages_arrive_through_fetch_older() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    let recent: Vec<SimMessage> = (100..110)
        .map(|i| text(&chat, &format!("R{i}"), at(i), "new"))
        .collect();
    let ack = history(&h, recent).await;
    let page: Vec<SimMessage> = (0..30)
        .map(|i| text(&chat, &format!("O{i:02}"), at(i), "old"))
        .collect();
    h.sim(
        sim_op::HISTORY_PAGE,
        &HistoryPage {
            chat: chat.clone(),
            messages: page,
        },
    )
    .await;
    // A page for another chat stays queued.
    h.sim(
        sim_op::HISTORY_PAGE,
        &HistoryPage {
            chat: phone(BEN),
            messages: vec![text(&phone(BEN), "B0", at(1), "x")],
        },
    )
    .await;
    let v = viewer_all();
    let r = read(
        &h,
        &v,
        ReadMessagesRequest {
            before: Some(ack.ids[0].clone()),
            limit: Some(20),
            ..req(&format!("+{ANA}"))
        },
    )
    .await;
    let older = r.older.expect("asked the phone");
    assert!(older.asked_phone);
    assert_eq!(older.received, 30);
    assert_eq!(r.count, 20);
    assert_eq!(r.messages.last().unwrap().timestamp, at(29));
    assert_eq!(r.messages[0].timestamp, at(10));
    // Enough left in the archive: the phone is not asked.
    let r2 = read(
        &h,
        &v,
        ReadMessagesRequest {
            before: Some(r.messages.last().unwrap().message_id.clone()),
            limit: Some(5),
            ..req(&r.chat_id)
        },
    )
    .await;
    assert!(r2.older.is_none());
    assert_eq!(r2.count, 5);
    h.finish().await;
}

#[tokio::test]
async fn previews_are_newest_first_and_at_most_twelve() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    let mut msgs: Vec<SimMessage> = (0..15)
        .map(|i| image(&chat, &format!("I{i:02}"), i, ""))
        .collect();
    let mut no_thumb = image(&chat, "I99", 99, "");
    no_thumb.attachment.as_mut().unwrap().thumbnail_base64 = None;
    msgs.push(no_thumb);
    let ack = history(&h, msgs).await;
    let v = viewer_all();
    let id = chat_of(&h, &chat).await;
    let r = read(
        &h,
        &v,
        ReadMessagesRequest {
            include_previews: Some(true),
            ..req(&id)
        },
    )
    .await;
    assert_eq!(r.count, 16);
    assert_eq!(r.preview_count, 12);
    let ids: Vec<&str> = r.previews.iter().map(|p| p.message_id.as_str()).collect();
    let expected: Vec<&str> = ack.ids[3..15].iter().rev().map(String::as_str).collect();
    assert_eq!(ids, expected);
    assert_eq!(B64.decode(&r.previews[0].data_base64).unwrap(), jpeg());
    let r = read(&h, &v, req(&id)).await;
    assert_eq!(r.preview_count, 0);
    h.finish().await;
}

#[tokio::test]
async fn sync_state_notes_and_bad_sim_payloads() {
    let h = Harness::start().await;
    inject(&h, text(&phone(ANA), "A1", at(1), "hi")).await;
    h.sim(
        sim_op::SET_STATE,
        &SetState {
            state: SyncState::Offline,
        },
    )
    .await;
    let r = read(&h, &viewer_all(), req(&format!("+{ANA}"))).await;
    assert_eq!(r.sync, SyncState::Offline);
    assert_eq!(r.notes.len(), 1);
    let e = h
        .sim_try(
            sim_op::INJECT_MESSAGE,
            &serde_json::json!({"message": {"chat": "x"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let e = h
        .sim_try(
            sim_op::INJECT_MESSAGE,
            &InjectMessage {
                message: text("not-a-jid", "Z", at(1), ""),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.starts_with("chat"));
    let e = h
        .sim_try(
            sim_op::INJECT_MESSAGE,
            &InjectMessage {
                message: text(GROUP, "Z", at(1), ""),
            },
        )
        .await
        .unwrap_err();
    assert!(e.message.starts_with("sender"));
    let mut bad = image(&phone(ANA), "Z", 1, "");
    bad.attachment.as_mut().unwrap().data_base64 = Some("***".into());
    let e = h
        .sim_try(sim_op::INJECT_MESSAGE, &InjectMessage { message: bad })
        .await
        .unwrap_err();
    assert!(e.message.starts_with("attachment.data_base64"));
    let e = h
        .sim_try(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: phone(ANA),
                lid: Some(phone(BEN)),
                name: "x".into(),
            },
        )
        .await
        .unwrap_err();
    assert!(e.message.starts_with("lid"));
    // The sim keeps attachment bytes so a later download works.
    inject(&h, image(&phone(ANA), "I1", 2, "")).await;
    let data: Vec<u8> = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one("select data from attachments", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(data, b"full image bytes");
    h.finish().await;
}

/// The writer makes each message's search vector: its text's distinct lexemes, sorted as
/// Postgres sorts them — through history and live ingest alike; none for `#private` or a text
/// without a word; an edit makes it anew.
#[tokio::test]
async fn search_vectors_hold_the_texts_distinct_lexemes_in_order() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    history(
        &h,
        vec![
            text(
                &chat,
                "V1",
                at(1),
                "Reunião AMANHÃ às 10h, reunião 🙂 de novo",
            ),
            text(&chat, "V2", at(2), "שָׁלוֹם עולם b a"),
            text(&chat, "V3", at(3), "secret words #private"),
            text(&chat, "V4", at(4), " ,.; "),
        ],
    )
    .await;
    inject(&h, text(&chat, "V5", at(5), "Zeta alpha zeta Beta")).await;
    inject(&h, text(&chat, "V6", at(6), "first draft")).await;
    inject(
        &h,
        SimMessage {
            reply_to: Some("V6".into()),
            edit: true,
            ..text(&chat, "E1", at(7), "Outra coisa")
        },
    )
    .await;
    let client = h.pool.get().await.unwrap();
    let rows = client
        .query(
            "select wa_id, search::text from messages order by wa_id",
            &[],
        )
        .await
        .unwrap();
    // As text, a vector shows each lexeme it holds, repeats included, in its stored order.
    let got: Vec<(String, Option<String>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let want = |wa: &str, v: Option<&str>| (wa.to_owned(), v.map(str::to_owned));
    assert_eq!(
        got,
        vec![
            want("V1", Some("'10h' 'amanha' 'as' 'de' 'novo' 'reuniao' '🙂'")),
            want("V2", Some("'a' 'b' 'עולם' 'שלום'")),
            want("V3", None),
            want("V4", None),
            want("V5", Some("'alpha' 'beta' 'zeta'")),
            want("V6", Some("'coisa' 'outra'")),
        ]
    );
    // The index finds them by a word.
    let hits: Vec<String> = client
        .query(
            "select wa_id from messages where search @@ 'zeta'::tsquery or search @@ 'עולם'::tsquery
              order by wa_id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(hits, ["V2", "V5"]);
    drop(client);
    h.finish().await;
}

/// A sender is named as the owner's phonebook names them — in a chat's page, a search hit and a
/// wait alike (each looks the name up per row it returns, #29); another sender of the same
/// chat, not in the phonebook, is not given that name.
#[tokio::test]
async fn senders_are_named_from_the_phonebook_in_reads_searches_and_waits() {
    let h = Harness::start().await;
    contact(&h, &phone(ANA), None, "Ana Lima").await;
    h.sim(
        sim_op::UPSERT_GROUP,
        &UpsertGroup {
            jid: GROUP.into(),
            name: "Family".into(),
            participants: vec![phone(ANA), phone(BEN)],
        },
    )
    .await;
    inject(
        &h,
        group_text(GROUP, &phone(ANA), "G1", at(1), "pancakes at nine"),
    )
    .await;
    inject(
        &h,
        group_text(GROUP, &phone(BEN), "G2", at(2), "pancakes again"),
    )
    .await;
    let v = viewer_all();
    let group = chat_of_group(&h).await;
    let ana = Some("Ana Lima".to_owned());
    // Each tool's (text, sender name) pairs.
    let check = |tool: &str, pairs: Vec<(String, Option<String>)>| {
        let named: Vec<&str> = (pairs.iter())
            .filter(|(_, name)| *name == ana)
            .map(|(text, _)| text.as_str())
            .collect();
        assert_eq!(named, ["pancakes at nine"], "{tool}: {pairs:?}");
    };

    let page = read(&h, &v, req(&group)).await;
    let pairs = page.messages.iter();
    check(
        "read_messages",
        pairs
            .map(|m| (m.text.clone(), m.sender.name.clone()))
            .collect(),
    );

    let found = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "pancakes".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(found.count, 2);
    let pairs = found.messages.iter();
    check(
        "search_messages",
        pairs
            .map(|m| (m.snippet.replace("**", ""), m.sender.name.clone()))
            .collect(),
    );

    let cursor = Cursor {
        archive_id: h.state.meta.archive_id.simple().to_string(),
        position: 0,
        account: "default".into(),
    }
    .encode();
    let waited = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            cursor: Some(cursor),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let pairs = waited.messages.iter();
    check(
        "wait_for_messages",
        pairs
            .map(|m| (m.text.clone(), m.sender.name.clone()))
            .collect(),
    );
    h.finish().await;
}
