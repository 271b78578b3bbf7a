//! WhatsApp's protobuf messages onto the archive's [`Inbound`]: who and where ([`from_live`]
//! for decrypted live messages, [`from_history`] for history-sync entries) and what
//! ([`content`], every DESIGN type). Media keep WhatsApp's download parameters
//! ([`super::media::MediaParams`]) so `get_attachment` can fetch them later. Pure: no client,
//! no I/O.

mod content;
mod stub;

use chrono::{DateTime, TimeZone as _, Utc};
use wazap_shared::wire::MessageType;
use whatsapp_rust::Jid;
use whatsapp_rust::types::message::MessageInfo;
use whatsapp_rust::wacore_binary::JidExt as _;
use whatsapp_rust::waproto::whatsapp as wa;

pub use self::content::{Content, content};
use super::media::{MediaOrigin, with_origin};
use crate::archive::Inbound;

/// A decrypted live message; `None` for protocol traffic that is not a message (key
/// distribution, read-state sync, poll votes, pins, …) and for newsletters.
pub fn from_live(message: &wa::Message, info: &MessageInfo) -> Option<Inbound> {
    let source = &info.source;
    if source.chat.is_newsletter() {
        return None;
    }
    let content = content(message)?;
    Some(envelope(
        &source.chat,
        (!source.is_from_me && (source.is_group || source.chat.is_status_broadcast()))
            .then(|| source.sender.to_non_ad_string()),
        source.is_from_me,
        &info.id,
        (!info.push_name.is_empty()).then(|| info.push_name.clone()),
        info.timestamp,
        content,
    ))
}

/// A message WhatsApp delivered but this device could not decrypt: recorded as `unknown` with
/// no words so the gap is visible. The library asks the sender and the phone to resend; the
/// resent message keeps the id and replaces this placeholder
/// ([`crate::archive::Archive::replace_placeholders`], from the hook and history ingest).
pub fn undecryptable(info: &MessageInfo) -> Option<Inbound> {
    let source = &info.source;
    if source.chat.is_newsletter() {
        return None;
    }
    Some(envelope(
        &source.chat,
        (!source.is_from_me && (source.is_group || source.chat.is_status_broadcast()))
            .then(|| source.sender.to_non_ad_string()),
        source.is_from_me,
        &info.id,
        (!info.push_name.is_empty()).then(|| info.push_name.clone()),
        info.timestamp,
        Content {
            kind: Some(MessageType::Unknown),
            ..Content::default()
        },
    ))
}

/// One history-sync entry of the conversation `chat` (or a status from `statusV3Messages`
/// with `chat = status@broadcast`). `None` when it has no key or nothing to archive.
pub fn from_history(chat: &str, web: &wa::WebMessageInfo) -> Option<Inbound> {
    let key = web.key.as_option()?;
    let id = key.id.as_deref().filter(|s| !s.is_empty())?;
    let from_me = key.from_me.unwrap_or(false);
    let chat_jid: Jid = chat.parse().ok()?;
    if chat_jid.is_newsletter() {
        return None;
    }
    let sender = if from_me || !(chat_jid.is_group() || chat_jid.is_status_broadcast()) {
        None
    } else {
        key.participant
            .as_deref()
            .or(web.participant.as_deref())
            .and_then(|p| p.parse::<Jid>().ok())
            .map(|j| j.to_non_ad_string())
    };
    let ts = web
        .message_timestamp
        .and_then(|s| Utc.timestamp_opt(i64::try_from(s).ok()?, 0).single())
        .unwrap_or_default();
    let content = match web.message.as_option() {
        Some(m) => content(m)?,
        None => match web.message_stub_type {
            Some(stub) => Content {
                kind: Some(MessageType::System),
                text: stub::words(stub, &web.message_stub_parameters),
                ..Content::default()
            },
            None => return None,
        },
    };
    Some(envelope(
        &chat_jid,
        sender,
        from_me,
        id,
        web.push_name.clone().filter(|p| !p.is_empty()),
        ts,
        content,
    ))
}

/// Assemble an [`Inbound`].
fn envelope(
    chat: &Jid,
    sender: Option<String>,
    from_me: bool,
    id: &str,
    push_name: Option<String>,
    timestamp: DateTime<Utc>,
    mut c: Content,
) -> Inbound {
    let chat_jid = chat.to_non_ad_string();
    if let Some(media) = c.attachment.as_mut().and_then(|a| a.media.as_mut()) {
        let origin = MediaOrigin {
            id: id.to_owned(),
            chat: chat_jid.clone(),
            from_me,
            participant: sender.clone(),
        };
        with_origin(media, &origin);
    }
    Inbound {
        chat_jid,
        wa_id: id.to_owned(),
        sender_jid: sender,
        push_name,
        from_me,
        timestamp,
        kind: c.kind.unwrap_or(MessageType::Unknown),
        text: c.text,
        target_wa_id: c.target,
        edit: c.edit,
        mentions: c.mentions,
        attachment: c.attachment,
    }
}
