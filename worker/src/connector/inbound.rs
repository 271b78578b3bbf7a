//! Mapping the sim's wire messages and stories (`wazap_shared::wire::sim`, also the demo
//! archive's format) onto the archive's connector-independent [`Inbound`], checking JIDs and
//! decoding media. Errors name the field, never its value.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use wazap_shared::wire::sim::{InjectStory, SimAttachment, SimMessage};
use wazap_shared::{ErrorCode, RpcError};

use crate::archive::jid::{Jid, JidKind, STATUS_JID};
use crate::archive::{Inbound, InboundAttachment};

/// `s` as a person's JID, or `invalid_argument` naming `field`.
pub(crate) fn direct_jid(s: &str, field: &str) -> Result<Jid, RpcError> {
    Jid::parse(s)
        .filter(|j| j.kind == JidKind::Direct)
        .ok_or_else(|| {
            RpcError::invalid(field, "expected a person's JID (…@s.whatsapp.net or …@lid)")
        })
}

/// Map many messages; an error names the failing one's index.
pub(crate) fn to_inbound_all(messages: Vec<SimMessage>) -> Result<Vec<Inbound>, RpcError> {
    messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            to_inbound(m).map_err(|e| RpcError::new(e.code, format!("messages[{i}].{}", e.message)))
        })
        .collect()
}

/// Map a sim (or demo) message onto the archive's [`Inbound`], checking its JIDs and media.
pub fn to_inbound(m: SimMessage) -> Result<Inbound, RpcError> {
    let chat =
        Jid::parse(&m.chat).ok_or_else(|| RpcError::invalid("chat", "expected a WhatsApp JID"))?;
    if m.id.trim().is_empty() || m.id.len() > 128 {
        return Err(RpcError::invalid("id", "expected 1–128 characters"));
    }
    if let Some(s) = &m.sender {
        direct_jid(s, "sender")?;
    } else if !m.from_me && chat.kind != JidKind::Direct {
        return Err(RpcError::invalid(
            "sender",
            "required in groups and for stories",
        ));
    }
    for j in &m.mentions {
        direct_jid(j, "mentions")?;
    }
    Ok(Inbound {
        chat_jid: m.chat,
        wa_id: m.id,
        sender_jid: m.sender,
        push_name: m.push_name,
        from_me: m.from_me,
        timestamp: m.timestamp,
        kind: m.kind,
        text: m.text,
        target_wa_id: m.reply_to,
        edit: m.edit,
        mentions: m.mentions,
        attachment: m.attachment.map(to_attachment).transpose()?,
    })
}

/// Map a sim (or demo) story onto an [`Inbound`] to `status@broadcast`.
pub fn story_to_inbound(s: InjectStory) -> Result<Inbound, RpcError> {
    direct_jid(&s.sender, "sender")?;
    if s.id.trim().is_empty() || s.id.len() > 128 {
        return Err(RpcError::invalid("id", "expected 1–128 characters"));
    }
    Ok(Inbound {
        chat_jid: STATUS_JID.to_owned(),
        wa_id: s.id,
        sender_jid: Some(s.sender),
        push_name: s.push_name,
        from_me: false,
        timestamp: s.timestamp,
        kind: s.kind,
        text: s.text,
        target_wa_id: None,
        edit: false,
        mentions: Vec::new(),
        attachment: s.attachment.map(to_attachment).transpose()?,
    })
}

fn to_attachment(a: SimAttachment) -> Result<InboundAttachment, RpcError> {
    let decode = |v: Option<String>, field: &str| {
        v.map(|s| {
            B64.decode(s.as_bytes()).map_err(|_| {
                RpcError::new(
                    ErrorCode::InvalidArgument,
                    format!("attachment.{field}: expected standard base64"),
                )
            })
        })
        .transpose()
    };
    if a.mime_type.trim().is_empty() {
        return Err(RpcError::invalid("attachment.mime_type", "required"));
    }
    let data = decode(a.data_base64, "data_base64")?;
    Ok(InboundAttachment {
        mime_type: a.mime_type,
        filename: a.filename,
        size: data.as_ref().map(|d| d.len() as u64),
        seconds: a.seconds,
        thumbnail: decode(a.thumbnail_base64, "thumbnail_base64")?,
        data,
        media: None,
    })
}
