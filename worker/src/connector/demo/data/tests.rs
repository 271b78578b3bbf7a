//! Checks that the demo archive has everything the read tools need to show, is well formed
//! (references resolve, ids are unique, pictures are real JPEGs) and is deterministic.

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, Duration, Timelike, Utc};
use wazap_shared::wire::MessageType;
use wazap_shared::wire::sim::SimMessage;

use super::{DemoData, demo_data};

fn now() -> DateTime<Utc> {
    "2026-03-10T15:42:17Z".parse().unwrap()
}

/// The chat a message belongs to once the LID form is merged into the phone form.
fn canonical(d: &DemoData, chat: &str) -> String {
    d.contacts
        .iter()
        .find(|c| c.lid.as_deref() == Some(chat))
        .map_or_else(|| chat.to_owned(), |c| c.jid.clone())
}

/// Width and height from a baseline JPEG's SOF0 segment, after checking SOI and EOI.
fn jpeg_size(b64: &str) -> (u16, u16) {
    let b = B64.decode(b64).expect("valid base64");
    assert_eq!(&b[..2], &[0xFF, 0xD8], "JPEG starts with SOI");
    assert_eq!(&b[b.len() - 2..], &[0xFF, 0xD9], "JPEG ends with EOI");
    let mut i = 2;
    while i + 9 < b.len() {
        assert_eq!(b[i], 0xFF, "segment marker");
        let len = usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]]));
        if b[i + 1] == 0xC0 {
            let h = u16::from_be_bytes([b[i + 5], b[i + 6]]);
            let w = u16::from_be_bytes([b[i + 7], b[i + 8]]);
            return (w, h);
        }
        i += 2 + len;
    }
    panic!("no SOF0 segment");
}

fn local_hour(t: DateTime<Utc>) -> u32 {
    (t - Duration::hours(3)).hour()
}

#[test]
fn has_enough_chats_groups_messages_and_days() {
    let d = demo_data(now());
    let chats: HashSet<String> = d.messages.iter().map(|m| canonical(&d, &m.chat)).collect();
    assert!(chats.len() >= 8, "{} chats", chats.len());
    assert!(d.groups.len() >= 3);
    assert_eq!(
        chats.iter().filter(|c| c.ends_with("@g.us")).count(),
        d.groups.len()
    );
    assert!(d.messages.len() >= 500, "{} messages", d.messages.len());
    let first = d.messages.first().unwrap().timestamp;
    let last = d.messages.last().unwrap().timestamp;
    assert!(last - first >= Duration::days(10));
    // Day 0 is today, or yesterday when today's script would end after `now`.
    assert!(first >= now() - Duration::days(15), "oldest {first}");
    let days: HashSet<_> = d
        .messages
        .iter()
        .map(|m| m.timestamp.date_naive())
        .collect();
    assert!(days.len() >= 10, "{} distinct days", days.len());
    assert!(d.messages.is_sorted_by_key(|m| m.timestamp));
    assert!(d.messages.iter().any(|m| m.from_me));
    assert!(d.messages.iter().filter(|m| !m.from_me).count() > d.messages.len() / 3);
}

#[test]
fn messages_are_never_in_the_future_and_follow_a_daily_rhythm() {
    // Several times of day, including just after local midnight (UTC−3).
    for now in [
        "2026-03-10T03:05:00Z",
        "2026-03-10T12:00:00Z",
        "2026-03-11T02:59:59Z",
        "2026-07-01T21:30:00Z",
    ] {
        let now: DateTime<Utc> = now.parse().unwrap();
        let d = demo_data(now);
        let last = d.messages.last().unwrap().timestamp;
        assert!(last <= now - Duration::minutes(5), "{last} vs {now}");
        assert!(
            now - last < Duration::days(1) + Duration::hours(12),
            "the newest is recent"
        );
        assert!(d.messages.first().unwrap().timestamp >= now - Duration::days(15));
        // Nobody writes between 02:00 and 05:59 local.
        let night = d
            .messages
            .iter()
            .filter(|m| (2..6).contains(&local_hour(m.timestamp)))
            .count();
        assert_eq!(night, 0);
    }
}

#[test]
fn photos_are_real_small_jpegs() {
    let d = demo_data(now());
    let photos: Vec<&SimMessage> = d
        .messages
        .iter()
        .filter(|m| m.kind == MessageType::Image)
        .collect();
    assert!(photos.len() >= 10, "{} photos", photos.len());
    let mut total = 0;
    let attachments = photos
        .iter()
        .map(|m| m.attachment.as_ref().unwrap())
        .chain(d.stories.iter().filter_map(|s| s.attachment.as_ref()));
    for a in attachments {
        assert_eq!(a.mime_type, "image/jpeg");
        let thumb = a.thumbnail_base64.as_deref().unwrap();
        let data = a.data_base64.as_deref().unwrap();
        assert_eq!(jpeg_size(thumb), (64, 48));
        assert_eq!(jpeg_size(data), (320, 240));
        let bytes = B64.decode(data).unwrap().len();
        assert!(bytes > 2_000, "a real picture, not a blank ({bytes} bytes)");
        total += thumb.len() + data.len();
    }
    assert!(total < 1_000_000, "pictures total {total} bytes of base64");
    let distinct: HashSet<_> = photos
        .iter()
        .map(|m| &m.attachment.as_ref().unwrap().data_base64)
        .collect();
    assert_eq!(
        distinct.len(),
        photos.len(),
        "every photo is a different picture"
    );
}

#[test]
fn stories_are_recent_from_several_people_with_one_older() {
    let d = demo_data(now());
    let recent: Vec<_> = d
        .stories
        .iter()
        .filter(|s| now() - s.timestamp < Duration::hours(24))
        .collect();
    assert!(recent.len() >= 3);
    let posters: HashSet<_> = recent.iter().map(|s| &s.sender).collect();
    assert_eq!(
        posters.len(),
        recent.len(),
        "recent stories come from different contacts"
    );
    assert!(
        recent
            .iter()
            .any(|s| s.kind == MessageType::Text && s.attachment.is_none())
    );
    assert!(
        recent
            .iter()
            .any(|s| s.kind == MessageType::Image && s.attachment.is_some())
    );
    assert!(
        d.stories
            .iter()
            .any(|s| now() - s.timestamp > Duration::hours(24))
    );
    assert!(d.stories.iter().all(|s| s.timestamp <= now()));
    let contacts: HashSet<_> = d.contacts.iter().map(|c| &c.jid).collect();
    assert!(d.stories.iter().all(|s| contacts.contains(&s.sender)));
}

#[test]
fn speaks_hebrew_portuguese_english_and_spanish() {
    let d = demo_data(now());
    let count = |f: &dyn Fn(&str) -> bool| d.messages.iter().filter(|m| f(&m.text)).count();
    let hebrew = count(&|t| t.chars().any(|c| ('\u{05D0}'..='\u{05EA}').contains(&c)));
    let portuguese = count(&|t| {
        ["você", "não", "obrigad", "tô ", "amanhã"]
            .iter()
            .any(|w| t.to_lowercase().contains(w))
    });
    let english = count(&|t| {
        [" the ", " you ", " I'll ", "thanks"]
            .iter()
            .any(|w| t.contains(w))
    });
    let spanish = count(&|t| t.contains('¿') || t.contains('¡'));
    assert!(hebrew >= 100, "{hebrew} Hebrew");
    assert!(portuguese >= 40, "{portuguese} Portuguese");
    assert!(english >= 30, "{english} English");
    assert!(spanish >= 5, "{spanish} Spanish");
}

#[test]
fn lines_are_not_repeated() {
    let d = demo_data(now());
    let mut seen = HashSet::new();
    for m in d.messages.iter().filter(|m| m.text.chars().count() > 12) {
        assert!(seen.insert(&m.text), "repeated line in {}", m.id);
    }
}

#[test]
fn exactly_one_private_message() {
    let d = demo_data(now());
    let private: Vec<_> = d
        .messages
        .iter()
        .filter(|m| m.text.contains("#private"))
        .collect();
    assert_eq!(private.len(), 1);
    assert!(
        private[0].chat.ends_with("@g.us"),
        "shared with the family group"
    );
    assert!(d.stories.iter().all(|s| !s.text.contains("#private")));
}

#[test]
fn references_resolve_within_the_same_chat() {
    let d = demo_data(now());
    let by_id: HashMap<&str, &SimMessage> = d.messages.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut replies = 0;
    for m in &d.messages {
        let needs_target = matches!(m.kind, MessageType::Reaction | MessageType::Deleted) || m.edit;
        let Some(target) = m.reply_to.as_deref() else {
            assert!(!needs_target, "{} has no target", m.id);
            continue;
        };
        let t = by_id
            .get(target)
            .unwrap_or_else(|| panic!("{} refers to unknown {target}", m.id));
        assert_eq!(
            canonical(&d, &t.chat),
            canonical(&d, &m.chat),
            "{} refers across chats",
            m.id
        );
        assert!(t.timestamp <= m.timestamp, "{} refers forward", m.id);
        if m.edit || m.kind == MessageType::Deleted {
            assert_eq!(
                (t.from_me, &t.sender),
                (m.from_me, &m.sender),
                "{} edits someone else's",
                m.id
            );
            assert_ne!(t.kind, MessageType::Reaction);
        }
        if m.kind == MessageType::Text && !m.edit {
            replies += 1;
        }
    }
    assert!(replies >= 10, "{replies} replies");
}

#[test]
fn ids_are_unique_per_chat() {
    let d = demo_data(now());
    let mut seen = HashSet::new();
    for m in &d.messages {
        assert!(m.id.starts_with("DEMO"));
        assert!(
            seen.insert((canonical(&d, &m.chat), m.id.clone())),
            "duplicate {}",
            m.id
        );
    }
    let all: HashSet<_> = d
        .messages
        .iter()
        .map(|m| &m.id)
        .chain(d.stories.iter().map(|s| &s.id))
        .collect();
    assert_eq!(
        all.len(),
        d.messages.len() + d.stories.len(),
        "ids are unique account-wide too"
    );
}

#[test]
fn is_deterministic_and_ids_do_not_depend_on_now() {
    let a = demo_data(now());
    assert_eq!(a, demo_data(now()));
    let later = demo_data(now() + Duration::days(3) + Duration::minutes(7));
    let ids = |d: &DemoData| {
        d.messages
            .iter()
            .map(|m| m.id.clone())
            .collect::<HashSet<_>>()
    };
    assert_eq!(ids(&a), ids(&later));
    assert_ne!(a.messages[0].timestamp, later.messages[0].timestamp);
}

#[test]
fn senders_mentions_and_lid() {
    let d = demo_data(now());
    let mentions: Vec<_> = d
        .messages
        .iter()
        .filter(|m| m.mentions.contains(&d.own_jid))
        .collect();
    assert!(mentions.len() >= 2);
    let own_digits = d.own_jid.trim_end_matches("@s.whatsapp.net");
    assert!(
        mentions
            .iter()
            .all(|m| m.chat.ends_with("@g.us") && m.text.contains(&format!("@{own_digits}")))
    );
    for m in &d.messages {
        if m.chat.ends_with("@g.us") {
            assert!(
                m.sender.is_some() && m.push_name.is_some(),
                "group message {} names its sender",
                m.id
            );
            let g = d
                .groups
                .iter()
                .find(|g| g.jid == m.chat)
                .expect("group is declared");
            assert!(g.participants.contains(m.sender.as_ref().unwrap()));
        } else {
            assert!(
                m.sender.is_none(),
                "direct message {} omits the sender",
                m.id
            );
        }
    }
    let lid = d
        .contacts
        .iter()
        .find_map(|c| c.lid.clone())
        .expect("a contact with a LID");
    let phone = &d
        .contacts
        .iter()
        .find(|c| c.lid.as_ref() == Some(&lid))
        .unwrap()
        .jid;
    let via_lid = d.messages.iter().filter(|m| m.chat == lid).count();
    let via_phone = d.messages.iter().filter(|m| &m.chat == phone).count();
    assert!(
        via_lid >= 5 && via_phone >= 5,
        "{via_lid} by LID, {via_phone} by phone"
    );
}

#[test]
fn every_message_type_the_tools_show_is_present() {
    let d = demo_data(now());
    let of = |k: MessageType| d.messages.iter().filter(move |m| m.kind == k);
    let pdf = of(MessageType::Document)
        .find_map(|m| {
            m.attachment
                .as_ref()
                .filter(|a| a.mime_type == "application/pdf")
        })
        .expect("a pdf");
    assert!(pdf.filename.as_deref().unwrap().ends_with(".pdf"));
    let bytes = B64.decode(pdf.data_base64.as_deref().unwrap()).unwrap();
    assert!(bytes.starts_with(b"%PDF-") && bytes.ends_with(b"%%EOF\n"));
    let voice = of(MessageType::Voice)
        .next()
        .expect("a voice note")
        .attachment
        .as_ref()
        .unwrap();
    assert!(voice.mime_type.starts_with("audio/ogg") && voice.seconds.unwrap() > 0);
    assert!(of(MessageType::Location).next().is_some());
    assert!(of(MessageType::Poll).next().unwrap().text.lines().count() >= 3);
    assert!(of(MessageType::Reaction).count() >= 10);
    assert!(of(MessageType::Reaction).all(|m| !m.text.is_empty() && m.text.chars().count() <= 2));
    assert_eq!(of(MessageType::Deleted).count(), 1);
    assert_eq!(d.messages.iter().filter(|m| m.edit).count(), 1);
}
