//! Read scope and archive policy on every path; status stories.

use super::*;

#[tokio::test]
async fn scope_and_archive_policy_apply_on_every_path() {
    let h = Harness::start().await;
    contact(&h, &phone(ANA), None, "Ana").await;
    contact(&h, &phone(BEN), None, "Ben").await;
    let ack = history(
        &h,
        (0..10)
            .flat_map(|i| {
                [
                    text(&phone(ANA), &format!("A{i}"), at(i * 10), "a"),
                    text(&phone(BEN), &format!("B{i}"), at(i * 10 + 1), "b"),
                ]
            })
            .collect(),
    )
    .await;
    assert_eq!(ack.stored, 20);
    let ana = chat_of(&h, &phone(ANA)).await;
    let ben = chat_of(&h, &phone(BEN)).await;

    // since/until bound every read.
    let mut v = viewer_all();
    v.scope.since = Some(at(30));
    v.scope.until = Some(at(70));
    let r = read(&h, &v, req(&ana)).await;
    let times: Vec<_> = r.messages.iter().map(|m| m.timestamp).collect();
    assert_eq!(times, vec![at(30), at(40), at(50), at(60)]);
    let e = read_messages::handle(
        &h.state,
        &v,
        ReadMessagesRequest {
            before: Some(ack.ids[0].clone()),
            ..req(&ana)
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidArgument,
        "an anchor outside the scope is not usable"
    );
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.chats.len(), 2);
    assert_eq!(listed.chats[0].chat_id, ben);
    assert_eq!(
        listed.chats[0].last_message_at,
        Some(at(61)),
        "the latest readable message"
    );
    v.scope.since = Some(at(1000));
    v.scope.until = None;
    assert!(
        list_chats::handle(&h.state, &v, ListChatsRequest::default())
            .await
            .unwrap()
            .chats
            .is_empty()
    );

    // selected / all_except: the other chat does not exist for this viewer.
    for v in [
        viewer(ChatSelection::Selected {
            chats: vec![ana.clone()],
        }),
        viewer(ChatSelection::AllExcept {
            chats: vec![ben.clone()],
        }),
    ] {
        let e = read_messages::handle(&h.state, &v, req(&ben))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ChatNotFound);
        let e = read_messages::handle(&h.state, &v, req(&format!("+{BEN}")))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::ChatNotFound);
        let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
            .await
            .unwrap();
        assert_eq!(
            listed
                .chats
                .iter()
                .map(|c| c.chat_id.clone())
                .collect::<Vec<_>>(),
            vec![ana.clone()]
        );
        let found = search_contacts::handle(
            &h.state,
            &v,
            SearchContactsRequest {
                query: "e".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(found.contacts.iter().all(|c| c.chat_id != ben));
        let found = search_contacts::handle(
            &h.state,
            &v,
            SearchContactsRequest {
                query: BEN.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(found.contacts.is_empty(), "never the whole phonebook");
        let e = list_chats::handle(
            &h.state,
            &v,
            ListChatsRequest {
                before: Some(ben.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
    }

    // Archive policy: an excluded chat is never returned and never stored again.
    h.exec(&format!(
        "update archive_policy set excluded_chats = array['{ben}']"
    ))
    .await;
    let mut v = viewer_all();
    v.excluded_chats = vec![ben.clone()];
    let e = read_messages::handle(&h.state, &v, req(&ben))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ChatNotFound);
    let ack = h
        .sim(
            sim_op::INJECT_MESSAGE,
            &InjectMessage {
                message: text(&phone(BEN), "B99", at(500), "x"),
            },
        )
        .await;
    assert_eq!((ack.stored, ack.ids.len()), (0, 0));
    let ack = history(
        &h,
        vec![
            text(&phone(BEN), "B98", at(501), "x"),
            text(&phone(ANA), "A99", at(502), "y"),
        ],
    )
    .await;
    assert_eq!(ack.stored, 1);
    assert_eq!(ack.ids[0], "");
    let n: i64 = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one("select count(*) from messages where chat_id = $1", &[&ben])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 10);
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.chats.len(), 1);
    h.finish().await;
}

#[tokio::test]
async fn status_stories_are_recent_scoped_and_nowhere_else() {
    let h = Harness::start().await;
    let now = Utc::now();
    let story = |who: &str, id: &str, mins: i64, kind: MessageType| InjectStory {
        sender: phone(who),
        push_name: Some(format!("P{who}")),
        id: id.into(),
        timestamp: now - chrono::Duration::minutes(mins),
        kind,
        text: format!("story {id}"),
        attachment: (kind == MessageType::Image).then(|| SimAttachment {
            mime_type: "image/jpeg".into(),
            filename: None,
            seconds: None,
            data_base64: None,
            thumbnail_base64: Some(B64.encode(jpeg())),
        }),
    };
    for s in [
        story(ANA, "S1", 10, MessageType::Text),
        story(ANA, "S2", 90, MessageType::Image),
        story(BEN, "S3", 30, MessageType::Text),
        story(BEN, "S4", 60 * 30, MessageType::Text), // older than a day
    ] {
        let ack = h.sim(sim_op::INJECT_STORY, &s).await;
        assert_eq!(ack.stored, 1);
    }
    assert_eq!(
        h.sim(
            sim_op::INJECT_STORY,
            &story(ANA, "S1", 10, MessageType::Text)
        )
        .await
        .stored,
        0
    );
    // A message to status@broadcast is a story too.
    inject(
        &h,
        SimMessage {
            sender: Some(phone(BEN)),
            ..text(
                "status@broadcast",
                "S5",
                now - chrono::Duration::minutes(5),
                "via broadcast",
            )
        },
    )
    .await;
    let v = viewer_all();
    let r = read(
        &h,
        &v,
        ReadMessagesRequest {
            include_previews: Some(true),
            ..req("status")
        },
    )
    .await;
    assert_eq!(r.chat_id, "status");
    let texts: Vec<&str> = r.messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["via broadcast", "story S1", "story S3", "story S2"],
        "newest first, last day"
    );
    assert_eq!(r.omitted, Some(0));
    assert_eq!(r.preview_count, 1);
    assert_eq!(
        r.messages[1].sender.name.as_deref(),
        Some(format!("P{ANA}").as_str())
    );
    let r = read(
        &h,
        &v,
        ReadMessagesRequest {
            limit: Some(2),
            hours: Some(1),
            ..req("status")
        },
    )
    .await;
    assert_eq!(r.count, 2);
    assert_eq!(r.omitted, Some(1));
    assert_eq!(r.hours, Some(1));
    // Stories of people outside the scope are not shown; stories show nowhere else.
    let ben = chat_of_story_sender(&h, BEN).await;
    let scoped = viewer(ChatSelection::AllExcept { chats: vec![ben] });
    let r = read(&h, &scoped, req("status")).await;
    assert!(
        r.messages
            .iter()
            .all(|m| m.text != "story S3" && m.text != "via broadcast")
    );
    assert_eq!(r.count, 2);
    assert!(
        list_chats::handle(&h.state, &v, ListChatsRequest::default())
            .await
            .unwrap()
            .chats
            .is_empty()
    );
    h.finish().await;
}
