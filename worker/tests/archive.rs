//! The archive end to end inside the worker: ingest through the sim connector (over NATS) and
//! the batch API, then every read handler against real Postgres, one fresh database per test.

mod common;

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::Utc;
use common::*;
use wazap_shared::ErrorCode;
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::{ChatSelection, SendMode};
use wazap_shared::wire::read::{
    ListChatsRequest, ReadMessagesRequest, SearchContactsRequest, SearchGroupsRequest,
};
use wazap_shared::wire::sim::{
    HistoryPage, HistorySync, InjectMessage, InjectStory, SetAccount, SetState, SimAttachment,
    SimMessage, UpsertContact, UpsertGroup,
};
use wazap_shared::wire::{ChatKind, MessageType, SyncState};
use wazap_worker::archive::{Inbound, IngestOutcome};
use wazap_worker::handlers::{list_chats, read_messages, search_contacts, search_groups};

const ANA: &str = "972501111111";
const BEN: &str = "972502222222";
const GROUP: &str = "120363000000000001@g.us";

async fn read(
    h: &Harness,
    v: &wazap_worker::viewer::Viewer,
    req: ReadMessagesRequest,
) -> wazap_shared::wire::read::ReadMessagesResponse {
    read_messages::handle(&h.state, v, req)
        .await
        .expect("read_messages")
}

fn req(chat: &str) -> ReadMessagesRequest {
    ReadMessagesRequest {
        chat_id: chat.into(),
        ..Default::default()
    }
}

async fn inject(h: &Harness, m: SimMessage) -> String {
    let ack = h
        .sim(sim_op::INJECT_MESSAGE, &InjectMessage { message: m })
        .await;
    ack.ids.into_iter().next().expect("an id")
}

async fn history(h: &Harness, messages: Vec<SimMessage>) -> wazap_shared::wire::sim::SimAck {
    h.sim(sim_op::HISTORY_SYNC, &HistorySync { messages }).await
}

async fn contact(h: &Harness, jid: &str, lid: Option<&str>, name: &str) -> String {
    let ack = h
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: jid.into(),
                lid: lid.map(Into::into),
                name: name.into(),
            },
        )
        .await;
    ack.ids[0].clone()
}

fn jpeg() -> Vec<u8> {
    vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 0xFF, 0xD9]
}

fn image(chat: &str, id: &str, secs: i64, caption: &str) -> SimMessage {
    SimMessage {
        kind: MessageType::Image,
        attachment: Some(SimAttachment {
            mime_type: "image/jpeg".into(),
            filename: Some(format!("{id}.jpg")),
            seconds: None,
            data_base64: Some(B64.encode(b"full image bytes")),
            thumbnail_base64: Some(B64.encode(jpeg())),
        }),
        ..text(chat, id, at(secs), caption)
    }
}

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
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.starts_with(field), "{}", e.message);
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
    assert_eq!(e.code, ErrorCode::AccountNotFound);
    h.finish().await;
}

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
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.starts_with(field), "{}", e.message);
    }
    for missing in ["c_0000000000000000000a", "+15550001111"] {
        let e = read_messages::handle(&h.state, &v, req(missing))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ChatNotFound);
    }
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

/// The chat id of a JID's chat, via a phone or opaque lookup through read_messages.
async fn chat_of(h: &Harness, jid: &str) -> String {
    let digits = jid.split('@').next().unwrap();
    read(h, &viewer_all(), req(&format!("+{digits}")))
        .await
        .chat_id
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

async fn chat_of_group(h: &Harness) -> String {
    let r = list_chats::handle(
        &h.state,
        &viewer_all(),
        ListChatsRequest {
            kind: Some(ChatKind::Group),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    r.chats[0].chat_id.clone()
}

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
        e.code,
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
        assert_eq!(e.code, ErrorCode::ChatNotFound);
        let e = read_messages::handle(&h.state, &v, req(&format!("+{BEN}")))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ChatNotFound);
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
        assert_eq!(e.code, ErrorCode::InvalidArgument);
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
    assert_eq!(e.code, ErrorCode::ChatNotFound);
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

async fn chat_of_story_sender(h: &Harness, digits: &str) -> String {
    h.pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select chat_id from chat_aliases where jid = $1",
            &[&phone(digits)],
        )
        .await
        .unwrap()
        .get(0)
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
    assert_eq!(e.code, ErrorCode::InvalidArgument);
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
    assert_eq!(e.code, ErrorCode::InvalidArgument);
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
    assert_eq!(e.code, ErrorCode::InvalidArgument);
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
    h.exec("update chats set last_message_at = null, last_position = null; update archive_meta set chat_stats_dirty = true")
        .await;
    let v = viewer_all();
    assert!(
        list_chats::handle(&h.state, &v, ListChatsRequest::default())
            .await
            .unwrap()
            .chats
            .is_empty()
    );
    let restarted = wazap_worker::archive::Archive::start(h.pool.clone(), h.shutdown.clone())
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
        .query_one("select chat_stats_dirty from archive_meta", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!dirty);
    h.finish().await;
}
