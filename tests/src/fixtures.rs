//! Builders for sim payloads, so tests read as the scenario they check.

use chrono::{DateTime, Duration, Utc};
use wazap_shared::wire::MessageType;
use wazap_shared::wire::sim::{SimAttachment, SimMessage};

/// A phone JID for `digits`.
pub fn person(digits: &str) -> String {
    format!("{digits}@s.whatsapp.net")
}

/// A group JID for `n`.
pub fn group(n: u64) -> String {
    format!("120363{n:012}@g.us")
}

/// A text message from the chat's person (direct chat) at `ts`.
pub fn text(chat: &str, id: &str, ts: DateTime<Utc>, body: &str) -> SimMessage {
    crate::leak::record_secret(crate::leak::kind::MESSAGE_TEXT, body);
    SimMessage {
        chat: chat.to_owned(),
        id: id.to_owned(),
        sender: None,
        push_name: None,
        from_me: false,
        timestamp: ts,
        kind: MessageType::Text,
        text: body.to_owned(),
        reply_to: None,
        mentions: vec![],
        attachment: None,
        edit: false,
    }
}

/// A message in a group from `sender`.
pub fn group_text(chat: &str, sender: &str, id: &str, ts: DateTime<Utc>, body: &str) -> SimMessage {
    SimMessage {
        sender: Some(sender.to_owned()),
        push_name: Some("Member".into()),
        ..text(chat, id, ts, body)
    }
}

/// A photo with a tiny JPEG thumbnail.
pub fn photo(chat: &str, id: &str, ts: DateTime<Utc>, caption: &str) -> SimMessage {
    SimMessage {
        kind: MessageType::Image,
        attachment: Some(SimAttachment {
            mime_type: "image/jpeg".into(),
            filename: None,
            seconds: None,
            data_base64: Some(jpeg_b64(64, 48)),
            thumbnail_base64: Some(jpeg_b64(16, 12)),
        }),
        ..text(chat, id, ts, caption)
    }
}

/// `n` minutes before now.
pub fn minutes_ago(n: i64) -> DateTime<Utc> {
    Utc::now() - Duration::minutes(n)
}

/// A real JPEG of `w`×`h` pixels (a gradient), standard base64.
pub fn jpeg_b64(w: u16, h: u16) -> String {
    use base64::Engine as _;
    let mut pixels = Vec::with_capacity(usize::from(w) * usize::from(h) * 3);
    for y in 0..h {
        for x in 0..w {
            pixels.extend([(x * 4) as u8, (y * 4) as u8, 128]);
        }
    }
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 80)
        .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .expect("jpeg");
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// A voice note as WhatsApp carries it: whole Ogg pages, the first carrying `OpusHead` (what
/// the gateway's media check wants to see).
pub fn ogg_opus() -> Vec<u8> {
    wazap_gateway::media_fixtures::ogg_opus()
}
