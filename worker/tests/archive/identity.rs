//! One person one chat (LID + phone), de-duplication, `#private`, reactions, edits, deletes, mentions.

use super::*;

#[tokio::test]
async fn lid_and_phone_forms_are_one_chat_and_duplicates_are_dropped() {
    let h = Harness::start().await;
    let lid = "11112222333344@lid";
    // Seen first under the LID, then under the phone JID: two chats until the contact links them.
    let m1 = inject(&h, text(lid, "L1", at(1), "via lid")).await;
    let m2 = inject(&h, text(&phone(ANA), "P1", at(2), "via phone")).await;
    let v = viewer_all();
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.chats.len(), 2);
    let lid_chat = listed.chats[1].chat_id.clone();
    let phone_chat = listed.chats[0].chat_id.clone();
    let chat = contact(&h, &phone(ANA), Some(lid), "Ana").await;
    assert_eq!(
        chat, lid_chat,
        "the chat keeps the id of the form seen first"
    );
    let listed = list_chats::handle(&h.state, &v, ListChatsRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.chats.len(), 1);
    assert_eq!(listed.chats[0].chat_id, chat);
    assert_eq!(listed.chats[0].name, "Ana");
    for by in [format!("+{ANA}"), chat.clone(), phone_chat.clone()] {
        let r = read(&h, &v, req(&by)).await;
        assert_eq!(r.chat_id, chat);
        let ids: Vec<&str> = r.messages.iter().map(|m| m.message_id.as_str()).collect();
        assert_eq!(ids, vec![m1.as_str(), m2.as_str()]);
    }
    // After the link, both forms land in the one chat; re-deliveries are dropped.
    inject(&h, text(lid, "L2", at(3), "again lid")).await;
    inject(&h, text(&phone(ANA), "P2", at(4), "again phone")).await;
    let dup = h
        .sim(
            sim_op::INJECT_MESSAGE,
            &InjectMessage {
                message: text(&phone(ANA), "P2", at(4), "again phone"),
            },
        )
        .await;
    assert_eq!(dup.stored, 0);
    let dup_lid = h
        .sim(
            sim_op::INJECT_MESSAGE,
            &InjectMessage {
                message: text(lid, "P1", at(2), "via phone"),
            },
        )
        .await;
    assert_eq!(
        dup_lid.stored, 0,
        "same WhatsApp id in the same (merged) chat"
    );
    let batch = history(
        &h,
        vec![
            text(lid, "L1", at(1), "via lid"),
            text(&phone(ANA), "H1", at(5), "new"),
            text(&phone(ANA), "H1", at(5), "new"),
        ],
    )
    .await;
    assert_eq!(batch.stored, 1);
    assert_eq!(batch.ids[0], m1);
    assert_eq!(batch.ids[1], batch.ids[2]);
    let r = read(&h, &v, req(&chat)).await;
    assert_eq!(r.count, 5);
    // Found by phone digits and by name, with its phone number.
    let found = search_contacts::handle(
        &h.state,
        &v,
        SearchContactsRequest {
            query: "5011111".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(found.contacts.len(), 1);
    assert_eq!(found.contacts[0].chat_id, chat);
    assert_eq!(found.contacts[0].phone.as_deref(), Some("+972501111111"));
    h.finish().await;
}

#[tokio::test]
async fn private_messages_never_show_their_words() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    let mut secret = image(&chat, "S1", 1, "my pin is 1234 #Private");
    secret.attachment.as_mut().unwrap().filename = Some("pin.jpg".into());
    inject(&h, secret).await;
    inject(&h, text(&chat, "S2", at(2), "#privateer is a word")).await;
    inject(&h, text(&chat, "S3", at(3), "plain")).await;
    // An edit that adds the tag makes S3 private; one that removes it from S4 lifts it.
    inject(&h, text(&chat, "S4", at(4), "draft #private")).await;
    inject(
        &h,
        SimMessage {
            reply_to: Some("S3".into()),
            edit: true,
            ..text(&chat, "E1", at(5), "now #PRIVATE!")
        },
    )
    .await;
    inject(
        &h,
        SimMessage {
            reply_to: Some("S4".into()),
            edit: true,
            ..text(&chat, "E2", at(6), "final")
        },
    )
    .await;
    let v = viewer_all();
    let r = read(
        &h,
        &v,
        ReadMessagesRequest {
            include_previews: Some(true),
            ..req(&chat_of(&h, &chat).await)
        },
    )
    .await;
    assert_eq!(
        r.count, 4,
        "edits change their targets, they are not messages"
    );
    let m = &r.messages;
    assert!(m[0].private);
    assert_eq!(m[0].text, "");
    let a = m[0].attachment.as_ref().unwrap();
    assert_eq!(a.caption, None);
    assert_eq!(a.filename, None);
    assert_eq!(r.preview_count, 0, "no preview of a private photo");
    assert!(r.previews.is_empty());
    assert!(!m[1].private);
    assert_eq!(m[1].text, "#privateer is a word");
    assert!(m[2].private && m[2].edited && m[2].text.is_empty());
    assert!(!m[3].private && m[3].edited);
    assert_eq!(m[3].text, "final");
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("1234") && !json.contains("pin.jpg") && !json.contains("now"));
    h.finish().await;
}

#[tokio::test]
async fn reactions_edits_deletes_and_mentions() {
    let h = Harness::start().await;
    h.sim(
        sim_op::SET_ACCOUNT,
        &SetAccount {
            own_jid: Some(phone("972509999999")),
            own_lid: Some("999@lid".into()),
        },
    )
    .await;
    let target = inject(&h, group_text(GROUP, &phone(ANA), "T1", at(1), "dinner?")).await;
    let react = |id: &str, who: &str, emoji: &str, s: i64| SimMessage {
        kind: MessageType::Reaction,
        reply_to: Some("T1".into()),
        ..group_text(GROUP, &phone(who), id, at(s), emoji)
    };
    inject(&h, react("R1", BEN, "👍", 2)).await;
    inject(&h, react("R2", ANA, "👍", 3)).await;
    inject(&h, react("R3", BEN, "❤", 4)).await; // Ben changes his reaction
    inject(
        &h,
        SimMessage {
            mentions: vec!["999:2@lid".into()],
            ..group_text(GROUP, &phone(BEN), "M1", at(5), "@me look")
        },
    )
    .await;
    inject(&h, group_text(GROUP, &phone(BEN), "D0", at(6), "oops")).await;
    inject(
        &h,
        SimMessage {
            kind: MessageType::Deleted,
            reply_to: Some("D0".into()),
            ..group_text(GROUP, &phone(BEN), "D1", at(7), "")
        },
    )
    .await;
    let v = viewer_all();
    let group = chat_of_group(&h).await;
    let r = read(&h, &v, req(&group)).await;
    let t = r.messages.iter().find(|m| m.message_id == target).unwrap();
    let mut reactions: Vec<(String, u32)> = t
        .reactions
        .iter()
        .map(|r| (r.emoji.clone(), r.count))
        .collect();
    reactions.sort();
    assert_eq!(reactions, vec![("❤".to_owned(), 1), ("👍".to_owned(), 1)]);
    let kinds: Vec<MessageType> = r.messages.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == MessageType::Reaction)
            .count(),
        3
    );
    let reaction = r
        .messages
        .iter()
        .find(|m| m.kind == MessageType::Reaction)
        .unwrap();
    assert_eq!(reaction.reply_to.as_deref(), Some(target.as_str()));
    let mention = r.messages.iter().find(|m| m.text == "@me look").unwrap();
    assert!(mention.mentions_me);
    assert!(!t.mentions_me);
    assert_eq!(
        mention.sender.chat_id.as_deref(),
        Some(chat_of(&h, &phone(BEN)).await.as_str())
    );
    let deleted = r.messages.last().unwrap();
    assert_eq!(deleted.kind, MessageType::Deleted);
    assert_eq!(deleted.text, "");
    assert_eq!(r.count, 6);
    h.finish().await;
}
