//! list_chats, search_contacts and search_groups: order, paging, filters, arguments.

use super::*;

#[tokio::test]
async fn list_chats_orders_pages_filters_and_checks_arguments() {
    let h = Harness::start().await;
    let ana = contact(&h, &phone(ANA), None, "Ana Lima").await;
    let group = h
        .sim(
            sim_op::UPSERT_GROUP,
            &UpsertGroup {
                jid: GROUP.into(),
                name: "Family".into(),
                participants: vec![phone(ANA), phone(BEN)],
            },
        )
        .await
        .ids[0]
        .clone();
    // 30 chats with one message each, at increasing times; Ana's is the newest, the group next.
    let mut msgs: Vec<SimMessage> = (0..30)
        .map(|i| {
            text(
                &phone(&format!("97250300{i:04}")),
                &format!("X{i}"),
                at(i),
                "hi",
            )
        })
        .collect();
    msgs.push(group_text(GROUP, &phone(BEN), "G1", at(100), "hello all"));
    msgs.push(text(&phone(ANA), "A1", at(200), "hi"));
    assert_eq!(history(&h, msgs).await.stored, 32);

    let v = viewer_all();
    let all = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert_eq!(all.account_id, "default");
    // Ben's direct chat exists (a group sender) but has no messages: not listed.
    assert_eq!(all.chats.len(), 32);
    assert_eq!(all.chats[0].chat_id, ana);
    assert_eq!(all.chats[0].name, "Ana Lima");
    assert_eq!(all.chats[0].kind, ChatKind::Direct);
    assert_eq!(all.chats[1].chat_id, group);
    assert_eq!(all.chats[1].kind, ChatKind::Group);
    assert_eq!(all.chats[1].name, "Family");
    assert!(
        all.chats
            .windows(2)
            .all(|w| w[0].last_message_at >= w[1].last_message_at)
    );
    assert!(all.chats.iter().all(|c| !c.can_send), "send mode none");

    // Paging with `before`: no gaps, no overlap.
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = list_chats::handle(
            &h.state,
            &v,
            ListChatsRequest {
                limit: Some(7),
                before: before.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        if page.chats.is_empty() {
            break;
        }
        assert!(page.chats.len() <= 7);
        before = page.chats.last().map(|c| c.chat_id.clone());
        seen.extend(page.chats.into_iter().map(|c| c.chat_id));
    }
    let expected: Vec<String> = all.chats.iter().map(|c| c.chat_id.clone()).collect();
    assert_eq!(seen, expected);

    let groups = list_chats::handle(
        &h.state,
        &v,
        ListChatsRequest {
            kind: Some(ChatKind::Group),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(groups.chats.len(), 1);
    let named = list_chats::handle(
        &h.state,
        &v,
        ListChatsRequest {
            query: Some("ana L".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        named.chats.iter().map(|c| &c.chat_id).collect::<Vec<_>>(),
        vec![&ana]
    );
    // LIKE wildcards are literal.
    let none = list_chats::handle(
        &h.state,
        &v,
        ListChatsRequest {
            query: Some("%".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(none.chats.is_empty());

    // can_send follows the send permission (the sim can send).
    let mut sender = viewer_all();
    sender.send.mode = SendMode::Selected;
    sender.send.chats = vec![ana.clone()];
    let s = list_chats::handle(&h.state, &sender, ListChatsRequest::default())
        .await
        .unwrap();
    assert!(s.chats[0].can_send);
    assert!(!s.chats[1].can_send);

    for (bad, field) in [
        (
            ListChatsRequest {
                limit: Some(0),
                ..Default::default()
            },
            "limit",
        ),
        (
            ListChatsRequest {
                limit: Some(201),
                ..Default::default()
            },
            "limit",
        ),
        (
            ListChatsRequest {
                before: Some("c_unknown".into()),
                ..Default::default()
            },
            "before",
        ),
        (
            ListChatsRequest {
                before: Some("nonsense!".into()),
                ..Default::default()
            },
            "before",
        ),
        (
            ListChatsRequest {
                account_id: Some("Bad Id".into()),
                ..Default::default()
            },
            "account_id",
        ),
    ] {
        let e = list_chats::handle(&h.state, &v, bad).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.message().starts_with(field), "{}", e.message());
    }
    let e = list_chats::handle(
        &h.state,
        &v,
        ListChatsRequest {
            account_id: Some("other".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    h.finish().await;
}

#[tokio::test]
async fn search_contacts_and_groups() {
    let h = Harness::start().await;
    contact(&h, &phone(ANA), None, "Ana Lima").await;
    contact(&h, &phone(BEN), None, "Ben_Stone").await;
    inject(
        &h,
        SimMessage {
            push_name: Some("Carla".into()),
            ..text(&phone("972503333333"), "C1", at(1), "hi")
        },
    )
    .await;
    h.sim(
        sim_op::UPSERT_GROUP,
        &UpsertGroup {
            jid: GROUP.into(),
            name: "Family Lima".into(),
            participants: vec![phone(ANA), phone(BEN), phone(ANA)],
        },
    )
    .await;
    h.sim(
        sim_op::UPSERT_GROUP,
        &UpsertGroup {
            jid: "120363000000000002@g.us".into(),
            name: "Work".into(),
            participants: vec![],
        },
    )
    .await;
    let v = viewer_all();
    let s = |q: &str| SearchContactsRequest {
        query: q.into(),
        ..Default::default()
    };
    let r = search_contacts::handle(&h.state, &v, s("lima"))
        .await
        .unwrap();
    assert_eq!(
        r.contacts
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["Ana Lima"]
    );
    let r = search_contacts::handle(&h.state, &v, s("+972 50 333"))
        .await
        .unwrap();
    assert_eq!(r.contacts.len(), 1);
    assert_eq!(r.contacts[0].name, "Carla");
    assert_eq!(r.contacts[0].phone.as_deref(), Some("+972503333333"));
    let r = search_contacts::handle(&h.state, &v, s("_")).await.unwrap();
    assert_eq!(
        r.contacts
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["Ben_Stone"]
    );
    let r = search_contacts::handle(
        &h.state,
        &v,
        SearchContactsRequest {
            query: "a".into(),
            limit: Some(2),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(r.contacts.len(), 2);
    let e = search_contacts::handle(&h.state, &v, s("  "))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let g = search_groups::handle(
        &h.state,
        &v,
        SearchGroupsRequest {
            query: "lima".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(g.groups.len(), 1);
    assert_eq!(g.groups[0].name, "Family Lima");
    assert_eq!(g.groups[0].participant_count, 2);
    let hidden = viewer(ChatSelection::AllExcept {
        chats: vec![g.groups[0].chat_id.clone()],
    });
    let g2 = search_groups::handle(
        &h.state,
        &hidden,
        SearchGroupsRequest {
            query: "lima".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(g2.groups.is_empty());
    let e = search_groups::handle(
        &h.state,
        &v,
        SearchGroupsRequest {
            query: "".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let e = search_groups::handle(
        &h.state,
        &v,
        SearchGroupsRequest {
            query: "x".into(),
            limit: Some(500),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    h.finish().await;
}

#[tokio::test]
async fn a_chat_merged_in_the_middle_of_a_history_page_keeps_its_statistics() {
    let h = Harness::start().await;
    let lid = "11112222333344@lid";
    // The phone form's chat exists first, so the LID form's chat is the one merged away.
    inject(&h, text(&phone(ANA), "P0", at(1), "hello")).await;
    let start = *h.archive.committed().borrow();
    // A history page of the LID form, newest first (as WhatsApp sends history), five chunks.
    let page: Vec<Inbound> = (0..10_000i64)
        .map(|i| plain(lid, &format!("H{i}"), 1_000_000 - i))
        .collect();
    let archive = h.archive.clone();
    let ingest = tokio::spawn(async move { archive.ingest_batch("default", page).await });
    // Once the first chunk (with the page's newest messages) is in, the contact links the forms.
    let mut committed = h.archive.committed();
    committed
        .wait_for(|p| *p >= start + 2_000)
        .await
        .expect("the writer runs");
    let kept = contact(&h, &phone(ANA), Some(lid), "Ana").await;
    assert_eq!(ingest.await.unwrap().unwrap(), 10_000);

    let client = h.pool.get().await.unwrap();
    let row = client
        .query_one(
            "select c.last_message_at, c.last_position,
                    (select max(ts) from messages m where m.chat_id = c.chat_id),
                    (select max(position) from messages m where m.chat_id = c.chat_id),
                    (select count(*) from chats)
               from chats c where c.chat_id = $1",
            &[&kept],
        )
        .await
        .unwrap();
    let (last_at, last_pos): (Option<chrono::DateTime<Utc>>, Option<i64>) =
        (row.get(0), row.get(1));
    assert_eq!(row.get::<_, i64>(4), 1, "one chat for the person");
    assert_eq!(last_at, Some(at(1_000_000)), "the page's newest message");
    assert_eq!(last_at, row.get(2));
    assert_eq!(last_pos, row.get(3));
    drop(client);
    h.finish().await;
}

#[tokio::test]
async fn reads_refuse_an_unknown_account_and_answer_the_default_one() {
    let h = Harness::start().await;
    inject(&h, text(&phone(ANA), "A1", at(1), "hello there")).await;
    let v = viewer_all();
    let other = || Some("other".to_owned());
    // An account that does not exist is refused whatever the query found (nothing).
    let e = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "hello".into(),
            account_id: other(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let e = search_contacts::handle(
        &h.state,
        &v,
        SearchContactsRequest {
            query: "Ana".into(),
            account_id: other(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let e = search_groups::handle(
        &h.state,
        &v,
        SearchGroupsRequest {
            query: "Family".into(),
            account_id: other(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let e = search_attachments::handle(
        &h.state,
        &v,
        SearchAttachmentsRequest {
            account_id: other(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let e = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            account_id: other(),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    // The default account exists: its answers come through.
    let found = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "hello".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(found.count, 1);
    assert_eq!(found.account_id, "default");
    let files = search_attachments::handle(&h.state, &v, SearchAttachmentsRequest::default())
        .await
        .unwrap();
    assert_eq!((files.count, files.account_id.as_str()), (0, "default"));
    let poll = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            cursor: Some(
                Cursor {
                    archive_id: h.state.meta.archive_id.simple().to_string(),
                    position: 0,
                    account: "default".into(),
                }
                .encode(),
            ),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(poll.messages.len(), 1);
    assert_eq!(poll.account_id, "default");

    // A named chat with a named account: the account is checked with the chat's lookup; a
    // chat id of another account than the one named is refused for that, naming the chat.
    let ana = contact(&h, &phone(ANA), None, "Ana").await;
    let in_chat = |account: Option<String>, chat: &str| SearchMessagesRequest {
        query: "hello".into(),
        account_id: account,
        chat_id: Some(chat.to_owned()),
        ..Default::default()
    };
    let e = search_messages::handle(&h.state, &v, in_chat(other(), &format!("+{ANA}")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let e = search_messages::handle(&h.state, &v, in_chat(other(), &ana))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().starts_with("chat_id"), "{}", e.message());
    // A malformed chat is refused for its form, before any lookup.
    let e = search_messages::handle(&h.state, &v, in_chat(other(), "not a chat"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().starts_with("chat_id:"), "{}", e.message());
    let found = search_messages::handle(&h.state, &v, in_chat(Some("default".into()), &ana))
        .await
        .unwrap();
    assert_eq!((found.count, found.account_id.as_str()), (1, "default"));
    h.finish().await;
}
