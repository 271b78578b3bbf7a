//! What a message says, independent of who sent it where: every DESIGN type from the body of
//! a `wa::Message` (wrappers such as ephemeral, view-once and edits unwrapped), with media
//! download parameters kept.

use chrono::{TimeZone as _, Utc};
use wazap_shared::wire::MessageType;
use whatsapp_rust::wacore::proto_helpers::MessageExt as _;
use whatsapp_rust::waproto::whatsapp as wa;

use crate::archive::InboundAttachment;
use crate::connector::whatsapp::media::{MediaKind, MediaParams};

/// What a message says, independent of its envelope.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Content {
    /// Its type.
    pub kind: Option<MessageType>,
    /// Text, caption or emoji.
    pub text: String,
    /// The message it replies to, reacts to, edits or deletes.
    pub target: Option<String>,
    /// True for an edit of `target`.
    pub edit: bool,
    /// Mentioned JIDs.
    pub mentions: Vec<String>,
    /// Attached media.
    pub attachment: Option<InboundAttachment>,
}

/// What `message` says; `None` when it is protocol traffic rather than a message.
pub fn content(message: &wa::Message) -> Option<Content> {
    let view_once = message.is_view_once();
    let m = message.get_base_message();
    if let Some(p) = m.protocol_message.as_option() {
        return protocol(p);
    }
    let mut c = Content::default();
    let ctx = context_of(m);
    if let Some(ctx) = ctx {
        c.target = ctx.stanza_id.clone().filter(|s| !s.is_empty());
        c.mentions = ctx.mentioned_jid.clone();
    }
    if let Some(t) = m.conversation.as_deref() {
        c.kind = Some(MessageType::Text);
        c.text = t.to_owned();
    } else if let Some(x) = m.extended_text_message.as_option() {
        c.kind = Some(MessageType::Text);
        c.text = x.text.clone().unwrap_or_default();
    } else if let Some(x) = m.image_message.as_option() {
        c.kind = Some(MessageType::Image);
        c.text = x.caption.clone().unwrap_or_default();
        c.attachment = Some(attachment(
            x.mimetype.as_deref().unwrap_or("image/jpeg"),
            None,
            x.file_length,
            None,
            x.jpeg_thumbnail.clone(),
            params(
                MediaKind::Image,
                &x.direct_path,
                &x.media_key,
                &x.file_sha256,
                &x.file_enc_sha256,
                x.file_length,
            ),
        ));
    } else if let Some(x) = m.video_message.as_option().or(m.ptv_message.as_option()) {
        c.kind = Some(MessageType::Video);
        c.text = x.caption.clone().unwrap_or_default();
        c.attachment = Some(attachment(
            x.mimetype.as_deref().unwrap_or("video/mp4"),
            None,
            x.file_length,
            x.seconds,
            x.jpeg_thumbnail.clone(),
            params(
                MediaKind::Video,
                &x.direct_path,
                &x.media_key,
                &x.file_sha256,
                &x.file_enc_sha256,
                x.file_length,
            ),
        ));
    } else if let Some(x) = m.audio_message.as_option() {
        let voice = x.ptt.unwrap_or(false);
        c.kind = Some(if voice {
            MessageType::Voice
        } else {
            MessageType::Audio
        });
        c.attachment = Some(attachment(
            x.mimetype.as_deref().unwrap_or("audio/ogg; codecs=opus"),
            None,
            x.file_length,
            x.seconds,
            None,
            params(
                MediaKind::Audio,
                &x.direct_path,
                &x.media_key,
                &x.file_sha256,
                &x.file_enc_sha256,
                x.file_length,
            ),
        ));
    } else if let Some(x) = m.document_message.as_option() {
        c.kind = Some(MessageType::Document);
        c.text = x.caption.clone().unwrap_or_default();
        c.attachment = Some(attachment(
            x.mimetype.as_deref().unwrap_or("application/octet-stream"),
            x.file_name.clone().or_else(|| x.title.clone()),
            x.file_length,
            None,
            x.jpeg_thumbnail.clone(),
            params(
                MediaKind::Document,
                &x.direct_path,
                &x.media_key,
                &x.file_sha256,
                &x.file_enc_sha256,
                x.file_length,
            ),
        ));
    } else if let Some(x) = m.sticker_message.as_option() {
        c.kind = Some(MessageType::Sticker);
        c.attachment = Some(attachment(
            x.mimetype.as_deref().unwrap_or("image/webp"),
            None,
            x.file_length,
            None,
            None,
            params(
                MediaKind::Sticker,
                &x.direct_path,
                &x.media_key,
                &x.file_sha256,
                &x.file_enc_sha256,
                x.file_length,
            ),
        ));
    } else if let Some(x) = m.location_message.as_option() {
        c.kind = Some(MessageType::Location);
        c.text = location_text(x);
    } else if let Some(x) = m.live_location_message.as_option() {
        c.kind = Some(MessageType::Location);
        c.text = match (x.degrees_latitude, x.degrees_longitude) {
            (Some(la), Some(lo)) => format!("{la:.6},{lo:.6} (live)"),
            _ => "live location".to_owned(),
        };
    } else if let Some(x) = m.contact_message.as_option() {
        c.kind = Some(MessageType::Contact);
        c.text = x.display_name.clone().unwrap_or_default();
    } else if let Some(x) = m.contacts_array_message.as_option() {
        c.kind = Some(MessageType::Contact);
        c.text = x
            .contacts
            .iter()
            .filter_map(|k| k.display_name.as_deref())
            .collect::<Vec<_>>()
            .join(", ");
    } else if let Some(x) = [
        &m.poll_creation_message,
        &m.poll_creation_message_v2,
        &m.poll_creation_message_v3,
        &m.poll_creation_message_v5,
        &m.poll_creation_message_v6,
    ]
    .into_iter()
    .find_map(|p| p.as_option())
    {
        c.kind = Some(MessageType::Poll);
        let options: Vec<&str> = x
            .options
            .iter()
            .filter_map(|o| o.option_name.as_deref())
            .collect();
        c.text = format!(
            "{} [{}]",
            x.name.as_deref().unwrap_or_default(),
            options.join(" | ")
        );
    } else if let Some(x) = m.reaction_message.as_option() {
        c.kind = Some(MessageType::Reaction);
        c.text = x.text.clone().unwrap_or_default();
        c.target = x.key.as_option().and_then(|k| k.id.clone());
        c.mentions.clear();
    } else if m.call.is_set() || m.call_log_messsage.is_set() || m.bcall_message.is_set() {
        c.kind = Some(MessageType::Call);
        if let Some(x) = m.call_log_messsage.as_option() {
            let what = if x.is_video.unwrap_or(false) {
                "video call"
            } else {
                "voice call"
            };
            c.text = match x.duration_secs.filter(|d| *d > 0) {
                Some(d) => format!("{what}, {d} s"),
                None => what.to_owned(),
            };
        }
    } else if let Some(x) = m.event_message.as_option() {
        c.kind = Some(MessageType::Event);
        let mut parts = vec![x.name.clone().unwrap_or_default()];
        if let Some(start) = x.start_time.and_then(|s| Utc.timestamp_opt(s, 0).single()) {
            parts.push(start.to_rfc3339());
        }
        if let Some(d) = x.description.as_deref().filter(|d| !d.is_empty()) {
            parts.push(d.to_owned());
        }
        if x.is_canceled.unwrap_or(false) {
            parts.push("cancelled".to_owned());
        }
        c.text = parts.join(" — ");
    } else if let Some(x) = m.group_invite_message.as_option() {
        c.kind = Some(MessageType::Invite);
        c.text = match (x.group_name.as_deref(), x.caption.as_deref()) {
            (Some(n), Some(cap)) if !cap.is_empty() => format!("{n}: {cap}"),
            (Some(n), _) => n.to_owned(),
            (None, cap) => cap.unwrap_or_default().to_owned(),
        };
    } else if m.sender_key_distribution_message.is_set()
        || m.message_context_info.is_set() && !has_any_body(m)
        || m.poll_update_message.is_set()
        || m.enc_reaction_message.is_set()
        || m.keep_in_chat_message.is_set()
        || m.pin_in_chat_message.is_set()
        || m.enc_event_response_message.is_set()
    {
        // Protocol or encrypted side traffic (votes, encrypted reactions, pins): not messages.
        return None;
    } else {
        c.kind = Some(MessageType::Unknown);
    }
    if view_once && matches!(c.kind, Some(MessageType::Image | MessageType::Video)) {
        c.kind = Some(MessageType::ViewOnce);
    }
    Some(c)
}

/// A revoke (`deleted`) or an edit; other protocol messages are not messages.
fn protocol(p: &wa::message::ProtocolMessage) -> Option<Content> {
    use wa::message::protocol_message::Type;
    let target = p.key.as_option().and_then(|k| k.id.clone());
    match p.r#type? {
        Type::REVOKE => Some(Content {
            kind: Some(MessageType::Deleted),
            target,
            ..Content::default()
        }),
        Type::MESSAGE_EDIT => {
            let edited = p.edited_message.as_option()?;
            let inner = content(edited)?;
            Some(Content {
                kind: inner.kind,
                text: inner.text,
                target,
                edit: true,
                mentions: inner.mentions,
                attachment: None,
            })
        }
        _ => None,
    }
}

/// True when `m` carries any body besides its context info.
fn has_any_body(m: &wa::Message) -> bool {
    let bare = wa::Message {
        message_context_info: m.message_context_info.clone(),
        ..Default::default()
    };
    *m != bare
}

/// The context info (reply target, mentions) of whichever body `m` carries.
fn context_of(m: &wa::Message) -> Option<&wa::ContextInfo> {
    [
        m.extended_text_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.image_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.video_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.audio_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.document_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.sticker_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.location_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.contact_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.event_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
        m.group_invite_message
            .as_option()
            .and_then(|x| x.context_info.as_option()),
    ]
    .into_iter()
    .flatten()
    .next()
}

/// `lat,lon`, then name and address when given.
fn location_text(x: &wa::message::LocationMessage) -> String {
    let mut parts = Vec::new();
    if let (Some(la), Some(lo)) = (x.degrees_latitude, x.degrees_longitude) {
        parts.push(format!("{la:.6},{lo:.6}"));
    }
    for s in [&x.name, &x.address].into_iter().flatten() {
        if !s.is_empty() {
            parts.push(s.clone());
        }
    }
    parts.join(" — ")
}

/// An attachment record.
fn attachment(
    mime: &str,
    filename: Option<String>,
    size: Option<u64>,
    seconds: Option<u32>,
    thumbnail: Option<Vec<u8>>,
    params: Option<MediaParams>,
) -> InboundAttachment {
    InboundAttachment {
        mime_type: mime.to_owned(),
        filename,
        size,
        seconds,
        thumbnail: thumbnail.filter(|t| !t.is_empty()),
        data: None,
        media: params.map(|p| p.to_json()),
    }
}

/// Download parameters, when the message carries all of them.
fn params(
    kind: MediaKind,
    direct_path: &Option<String>,
    media_key: &Option<Vec<u8>>,
    sha256: &Option<Vec<u8>>,
    enc_sha256: &Option<Vec<u8>>,
    length: Option<u64>,
) -> Option<MediaParams> {
    Some(MediaParams {
        kind,
        direct_path: direct_path.clone().filter(|p| !p.is_empty())?,
        media_key: media_key.clone()?,
        file_sha256: sha256.clone()?,
        file_enc_sha256: enc_sha256.clone()?,
        file_length: length.unwrap_or(0),
    })
}
