//! Every DESIGN message type from a real `wa::Message`.

use wazap_shared::wire::MessageType;
use wazap_worker::connector::whatsapp::map::{content, from_history, from_live, undecryptable};
use wazap_worker::connector::whatsapp::media::MediaParams;

use super::*;

/// The mapped message of `m` sent by Alice in her direct chat.
fn direct(m: wa::Message) -> wazap_worker::archive::Inbound {
    from_live(&m, &info(ALICE, Some(ALICE), "ID1")).expect("a message")
}

/// A media message's direct path, key, plain and encrypted hashes.
type Keys = (
    Option<String>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
);

fn keys() -> Keys {
    (
        Some("/v/t62.7118-24/abc".to_owned()),
        Some(vec![1; 32]),
        Some(vec![2; 32]),
        Some(vec![3; 32]),
    )
}

#[test]
fn text_reply_and_mentions() {
    let m = direct(text("hello"));
    assert_eq!((m.kind, m.text.as_str()), (MessageType::Text, "hello"));
    assert_eq!(m.chat_jid, ALICE);
    assert_eq!(m.sender_jid, None, "direct chats carry no sender");
    assert_eq!(m.push_name.as_deref(), Some("Alice"));
    assert_eq!(
        (m.wa_id.as_str(), m.timestamp, m.from_me),
        ("ID1", ts(), false)
    );

    let reply = wa::Message {
        extended_text_message: some(wa::message::ExtendedTextMessage {
            text: Some("@bob see above".into()),
            context_info: some(wa::ContextInfo {
                stanza_id: Some("ORIG".into()),
                mentioned_jid: vec![BOB.into()],
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let g = from_live(
        &reply,
        &info(GROUP, Some("15550001111:7@s.whatsapp.net"), "ID2"),
    )
    .unwrap();
    assert_eq!(g.kind, MessageType::Text);
    assert_eq!(g.target_wa_id.as_deref(), Some("ORIG"));
    assert_eq!(g.mentions, vec![BOB.to_owned()]);
    assert_eq!(
        g.sender_jid.as_deref(),
        Some(ALICE),
        "group sender without the device suffix"
    );

    let mine = from_live(&text("sent from the phone"), &info(GROUP, None, "ID3")).unwrap();
    assert!(mine.from_me);
    assert_eq!(mine.sender_jid, None);
}

#[test]
fn media_keep_keys_path_hashes_and_thumbnail() {
    let (path, key, sha, enc) = keys();
    let image = wa::Message {
        image_message: some(wa::message::ImageMessage {
            mimetype: Some("image/jpeg".into()),
            caption: Some("look".into()),
            file_length: Some(1234),
            jpeg_thumbnail: Some(vec![0xFF, 0xD8, 0xFF]),
            direct_path: path.clone(),
            media_key: key.clone(),
            file_sha256: sha.clone(),
            file_enc_sha256: enc.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let m = direct(image);
    assert_eq!((m.kind, m.text.as_str()), (MessageType::Image, "look"));
    let a = m.attachment.expect("attachment");
    assert_eq!(a.mime_type, "image/jpeg");
    assert_eq!(a.size, Some(1234));
    assert_eq!(a.thumbnail, Some(vec![0xFF, 0xD8, 0xFF]));
    assert_eq!(a.data, None, "bytes are downloaded later");
    let media = a.media.expect("download parameters");
    let params: MediaParams = serde_json::from_value(media.clone()).expect("params");
    assert_eq!(params.direct_path, "/v/t62.7118-24/abc");
    assert_eq!(params.media_key, vec![1; 32]);
    assert_eq!(params.file_sha256, vec![2; 32]);
    assert_eq!(params.file_enc_sha256, vec![3; 32]);
    assert_eq!(params.file_length, 1234);
    assert_eq!(media["origin"]["id"], "ID1");
    assert_eq!(media["origin"]["chat"], ALICE);

    let video = wa::Message {
        video_message: some(wa::message::VideoMessage {
            mimetype: Some("video/mp4".into()),
            seconds: Some(12),
            direct_path: path.clone(),
            media_key: key.clone(),
            file_sha256: sha.clone(),
            file_enc_sha256: enc.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = direct(video);
    assert_eq!(v.kind, MessageType::Video);
    assert_eq!(v.attachment.as_ref().and_then(|a| a.seconds), Some(12));

    let audio = |ptt: bool| wa::Message {
        audio_message: some(wa::message::AudioMessage {
            mimetype: Some("audio/ogg; codecs=opus".into()),
            seconds: Some(5),
            ptt: Some(ptt),
            direct_path: path.clone(),
            media_key: key.clone(),
            file_sha256: sha.clone(),
            file_enc_sha256: enc.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(direct(audio(false)).kind, MessageType::Audio);
    let voice = direct(audio(true));
    assert_eq!(voice.kind, MessageType::Voice);
    assert_eq!(voice.attachment.unwrap().seconds, Some(5));

    let doc = wa::Message {
        document_message: some(wa::message::DocumentMessage {
            mimetype: Some("application/pdf".into()),
            file_name: Some("report.pdf".into()),
            caption: Some("Q3".into()),
            direct_path: path.clone(),
            media_key: key.clone(),
            file_sha256: sha.clone(),
            file_enc_sha256: enc.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let d = direct(doc);
    assert_eq!((d.kind, d.text.as_str()), (MessageType::Document, "Q3"));
    assert_eq!(
        d.attachment.unwrap().filename.as_deref(),
        Some("report.pdf")
    );

    let sticker = wa::Message {
        sticker_message: some(wa::message::StickerMessage {
            mimetype: Some("image/webp".into()),
            direct_path: path,
            media_key: key,
            file_sha256: sha,
            file_enc_sha256: enc,
            ..Default::default()
        }),
        ..Default::default()
    };
    let s = direct(sticker);
    assert_eq!(s.kind, MessageType::Sticker);
    assert!(s.attachment.unwrap().media.is_some());

    // Media without a direct path keeps its metadata but has nothing to download.
    let bare = wa::Message {
        image_message: some(wa::message::ImageMessage::default()),
        ..Default::default()
    };
    assert_eq!(direct(bare).attachment.unwrap().media, None);
}

#[test]
fn location_contact_poll_event_invite_and_call() {
    let loc = wa::Message {
        location_message: some(wa::message::LocationMessage {
            degrees_latitude: Some(32.0853),
            degrees_longitude: Some(34.781_768),
            name: Some("Cafe".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let l = direct(loc);
    assert_eq!(l.kind, MessageType::Location);
    assert_eq!(l.text, "32.085300,34.781768 — Cafe");

    let card = wa::Message {
        contact_message: some(wa::message::ContactMessage {
            display_name: Some("Dr. Who".into()),
            vcard: Some("BEGIN:VCARD\nEND:VCARD".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let c = direct(card);
    assert_eq!((c.kind, c.text.as_str()), (MessageType::Contact, "Dr. Who"));

    let mut poll = wa::message::PollCreationMessage {
        name: Some("Lunch?".into()),
        ..Default::default()
    };
    for o in ["pizza", "sushi"] {
        poll.options
            .push(wa::message::poll_creation_message::Option {
                option_name: Some(o.into()),
                ..Default::default()
            });
    }
    let p = direct(wa::Message {
        poll_creation_message_v3: some(poll),
        ..Default::default()
    });
    assert_eq!(
        (p.kind, p.text.as_str()),
        (MessageType::Poll, "Lunch? [pizza | sushi]")
    );

    let event = direct(wa::Message {
        event_message: some(wa::message::EventMessage {
            name: Some("Standup".into()),
            start_time: Some(ts().timestamp()),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!(event.kind, MessageType::Event);
    assert!(
        event.text.starts_with("Standup — 2026-03-04T05:06:07"),
        "{}",
        event.text
    );

    let invite = direct(wa::Message {
        group_invite_message: some(wa::message::GroupInviteMessage {
            group_name: Some("Hiking".into()),
            invite_code: Some("secret-code".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!(
        (invite.kind, invite.text.as_str()),
        (MessageType::Invite, "Hiking")
    );
    assert!(
        !invite.text.contains("secret-code"),
        "the invite code is not text"
    );

    let call = direct(wa::Message {
        call_log_messsage: some(wa::message::CallLogMessage {
            is_video: Some(true),
            duration_secs: Some(65),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!(
        (call.kind, call.text.as_str()),
        (MessageType::Call, "video call, 65 s")
    );
}

#[test]
fn reactions_edits_deletes_and_view_once() {
    let key = |id: &str| wa::MessageKey {
        remote_jid: Some(ALICE.into()),
        from_me: Some(true),
        id: Some(id.into()),
        ..Default::default()
    };
    let r = direct(wa::Message {
        reaction_message: some(wa::message::ReactionMessage {
            key: some(key("TARGET")),
            text: Some("👍".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!((r.kind, r.text.as_str()), (MessageType::Reaction, "👍"));
    assert_eq!(r.target_wa_id.as_deref(), Some("TARGET"));

    use wa::message::protocol_message::Type;
    let edit = direct(wa::Message {
        protocol_message: some(wa::message::ProtocolMessage {
            key: some(key("TARGET")),
            r#type: Some(Type::MESSAGE_EDIT),
            edited_message: some(text("fixed typo")),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert!(edit.edit);
    assert_eq!(
        (edit.kind, edit.text.as_str()),
        (MessageType::Text, "fixed typo")
    );
    assert_eq!(edit.target_wa_id.as_deref(), Some("TARGET"));

    let delete = direct(wa::Message {
        protocol_message: some(wa::message::ProtocolMessage {
            key: some(key("TARGET")),
            r#type: Some(Type::REVOKE),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!(delete.kind, MessageType::Deleted);
    assert_eq!(delete.target_wa_id.as_deref(), Some("TARGET"));
    assert!(!delete.edit);

    // Other protocol traffic is not a message.
    let sync = wa::Message {
        protocol_message: some(wa::message::ProtocolMessage {
            r#type: Some(Type::APP_STATE_SYNC_KEY_SHARE),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(content(&sync), None);
    let skdm = wa::Message {
        sender_key_distribution_message: some(Default::default()),
        ..Default::default()
    };
    assert_eq!(content(&skdm), None);

    let once = direct(wa::Message {
        view_once_message_v2: some(wa::message::FutureProofMessage {
            message: some(wa::Message {
                image_message: some(wa::message::ImageMessage {
                    caption: Some("just once".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }),
        ..Default::default()
    });
    assert_eq!(
        (once.kind, once.text.as_str()),
        (MessageType::ViewOnce, "just once")
    );
}

#[test]
fn unknown_undecryptable_stories_system_and_newsletters() {
    let odd = direct(wa::Message {
        product_message: some(Default::default()),
        ..Default::default()
    });
    assert_eq!(odd.kind, MessageType::Unknown);

    let u = undecryptable(&info(GROUP, Some(BOB), "BAD1")).expect("recorded");
    assert_eq!((u.kind, u.wa_id.as_str()), (MessageType::Unknown, "BAD1"));
    assert_eq!(u.sender_jid.as_deref(), Some(BOB));

    let story = from_live(&text("my day"), &info("status@broadcast", Some(BOB), "S1")).unwrap();
    assert_eq!(story.chat_jid, "status@broadcast");
    assert_eq!(
        story.sender_jid.as_deref(),
        Some(BOB),
        "stories name their poster"
    );

    let stub = wa::WebMessageInfo {
        key: some(wa::MessageKey {
            remote_jid: Some(GROUP.into()),
            id: Some("SYS1".into()),
            participant: Some(BOB.into()),
            ..Default::default()
        }),
        message_timestamp: Some(ts().timestamp() as u64),
        message_stub_type: Some(wa::web_message_info::StubType::GROUP_CHANGE_SUBJECT),
        message_stub_parameters: vec!["Family".into()],
        ..Default::default()
    };
    let s = from_history(GROUP, &stub).expect("a system notice");
    assert_eq!((s.kind, s.timestamp), (MessageType::System, ts()));
    assert_eq!(s.text, "Group name changed to “Family”");
    // Members are counted, never written by number.
    let added = wa::WebMessageInfo {
        message_stub_type: Some(wa::web_message_info::StubType::GROUP_PARTICIPANT_ADD),
        message_stub_parameters: vec![BOB.into(), "972509999999@s.whatsapp.net".into()],
        ..stub.clone()
    };
    let s = from_history(GROUP, &added).expect("a system notice");
    assert_eq!(s.text, "2 members added");

    let news = from_live(
        &text("news"),
        &info("120363000000000009@newsletter", Some(BOB), "N1"),
    );
    assert_eq!(news, None, "newsletters are not archived");
}
