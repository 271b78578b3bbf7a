//! Turning a chunk of [`Inbound`] messages into column-wise rows (one `Vec` per column, ready
//! for `unnest`): JIDs parsed, opaque ids hashed, positions assigned, `#private` and
//! `mentions_me` decided.

use chrono::{DateTime, Utc};
use wazap_shared::wire::MessageType;

use super::Ctx;
use crate::archive::ids::IdKey;
use crate::archive::jid::{Jid, JidKind};
use crate::archive::model::{Inbound, InboundAttachment};
use crate::archive::private::has_private_tag;
use crate::archive::vector::SearchVector;

/// Parsed JIDs of one input message.
pub(crate) struct Parsed {
    pub(super) chat: Jid,
    pub(super) sender: Option<Jid>,
}

impl Parsed {
    /// The chat's canonical JID.
    pub(crate) fn chat_jid(&self) -> &str {
        &self.chat.canonical
    }
}

/// Parse a message's JIDs; `None` when they are not ones the archive understands.
pub(super) fn parse(m: &Inbound) -> Option<Parsed> {
    let chat = Jid::parse(&m.chat_jid)?;
    let sender = match (&m.sender_jid, chat.kind) {
        (Some(s), JidKind::Group | JidKind::Status) if !m.from_me => {
            Some(Jid::parse(s).filter(|j| j.kind == JidKind::Direct)?)
        }
        (None, JidKind::Status) => return None,
        _ => None,
    };
    Some(Parsed { chat, sender })
}

/// Column-wise message rows.
#[derive(Default)]
pub(super) struct MessageRows<'m> {
    pub(super) input: Vec<usize>,
    pub(super) position: Vec<i64>,
    pub(super) message_id: Vec<String>,
    pub(super) chat_id: Vec<String>,
    pub(super) wa_id: Vec<&'m str>,
    pub(super) sender_jid: Vec<Option<String>>,
    pub(super) sender_chat_id: Vec<Option<String>>,
    pub(super) sender_name: Vec<Option<&'m str>>,
    pub(super) ts: Vec<DateTime<Utc>>,
    pub(super) kind: Vec<&'static str>,
    pub(super) text: Vec<&'m str>,
    pub(super) from_me: Vec<bool>,
    pub(super) private: Vec<bool>,
    pub(super) reply_to: Vec<Option<String>>,
    pub(super) mentions_me: Vec<bool>,
    pub(super) edited: Vec<bool>,
    /// The text's search vector (none for `#private`, or without a word).
    pub(super) search: Vec<Option<SearchVector>>,
    pub(super) attachment: Vec<Option<&'m InboundAttachment>>,
}

impl<'m> MessageRows<'m> {
    /// How many rows.
    pub(super) fn len(&self) -> usize {
        self.input.len()
    }

    /// Append message `m` (input `i`) of `chat_id`, taking the next position. `edited` marks
    /// an edit kept as a message of its own (its target is not archived).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        ctx: &Ctx<'_>,
        next_position: &mut i64,
        i: usize,
        m: &'m Inbound,
        p: &Parsed,
        chat_id: String,
        sender_chat: Option<String>,
        edited: bool,
    ) {
        let (sender_jid, sender_chat_id) = match (p.chat.kind, m.from_me) {
            (_, true) => (None, None),
            (JidKind::Group, false) => {
                (p.sender.as_ref().map(|s| s.canonical.clone()), sender_chat)
            }
            _ => (Some(p.chat.canonical.clone()), Some(chat_id.clone())),
        };
        let deleted_stub = m.kind == MessageType::Deleted;
        let text: &str = if deleted_stub { "" } else { &m.text };
        let reply_to = m
            .target_wa_id
            .as_deref()
            .filter(|t| !t.is_empty() && !edited && !deleted_stub)
            .map(|t| ctx.key.message_id(ctx.account, &chat_id, t));
        self.input.push(i);
        self.position.push(*next_position);
        *next_position += 1;
        self.message_id
            .push(ctx.key.message_id(ctx.account, &chat_id, &m.wa_id));
        self.chat_id.push(chat_id);
        self.wa_id.push(&m.wa_id);
        self.sender_jid.push(sender_jid);
        self.sender_chat_id.push(sender_chat_id);
        self.sender_name.push(if m.from_me {
            None
        } else {
            m.push_name.as_deref()
        });
        self.ts.push(m.timestamp);
        self.kind.push(m.kind.as_str());
        self.text.push(text);
        self.from_me.push(m.from_me);
        let private = has_private_tag(text);
        self.private.push(private);
        self.reply_to.push(reply_to);
        self.mentions_me.push(
            m.mentions
                .iter()
                .filter_map(|j| Jid::parse(j))
                .any(|j| ctx.own.contains(&j.canonical)),
        );
        self.edited.push(edited);
        self.search.push(if private {
            None
        } else {
            SearchVector::of_text(text)
        });
        self.attachment.push(if deleted_stub {
            None
        } else {
            m.attachment.as_ref()
        });
    }
}

/// Column-wise story rows.
#[derive(Default)]
pub(super) struct StoryRows<'m> {
    pub(super) input: Vec<usize>,
    pub(super) story_id: Vec<String>,
    pub(super) wa_id: Vec<&'m str>,
    pub(super) sender_jid: Vec<String>,
    pub(super) sender_chat_id: Vec<String>,
    pub(super) sender_name: Vec<Option<&'m str>>,
    pub(super) ts: Vec<DateTime<Utc>>,
    pub(super) kind: Vec<&'static str>,
    pub(super) text: Vec<&'m str>,
    pub(super) private: Vec<bool>,
    pub(super) attachment_id: Vec<Option<String>>,
    pub(super) attachment: Vec<Option<&'m InboundAttachment>>,
}

impl<'m> StoryRows<'m> {
    /// Append story `m` (input `i`) posted by `sender` (whose chat is `sender_chat`).
    pub(super) fn push(
        &mut self,
        ctx: &Ctx<'_>,
        i: usize,
        m: &'m Inbound,
        sender: &Jid,
        sender_chat: String,
    ) {
        let story_id = ctx.key.story_id(ctx.account, &sender_chat, &m.wa_id);
        self.input.push(i);
        self.attachment_id.push(
            m.attachment
                .as_ref()
                .map(|_| ctx.key.attachment_id(&story_id)),
        );
        self.story_id.push(story_id);
        self.wa_id.push(&m.wa_id);
        self.sender_jid.push(sender.canonical.clone());
        self.sender_chat_id.push(sender_chat);
        self.sender_name.push(m.push_name.as_deref());
        self.ts.push(m.timestamp);
        self.kind.push(m.kind.as_str());
        self.text.push(&m.text);
        self.private.push(has_private_tag(&m.text));
        self.attachment.push(m.attachment.as_ref());
    }
}

/// The message (or story) an attachment belongs to.
pub(super) struct Owner<'a> {
    pub(super) message_id: &'a str,
    pub(super) chat_id: &'a str,
    pub(super) story: bool,
    pub(super) kind: MessageType,
    pub(super) ts: DateTime<Utc>,
}

/// Column-wise attachment rows.
#[derive(Default)]
pub(super) struct AttachmentRows<'m> {
    pub(super) attachment_id: Vec<String>,
    pub(super) message_id: Vec<String>,
    pub(super) chat_id: Vec<String>,
    pub(super) story: Vec<bool>,
    pub(super) kind: Vec<&'static str>,
    pub(super) mime_type: Vec<&'m str>,
    pub(super) filename: Vec<Option<&'m str>>,
    pub(super) size: Vec<Option<i64>>,
    pub(super) seconds: Vec<Option<i32>>,
    pub(super) ts: Vec<DateTime<Utc>>,
    pub(super) thumbnail: Vec<Option<&'m [u8]>>,
    pub(super) media: Vec<Option<serde_json::Value>>,
    pub(super) data: Vec<Option<&'m [u8]>>,
}

impl<'m> AttachmentRows<'m> {
    /// Append the attachment `a` of `owner`.
    pub(super) fn push(&mut self, key: &IdKey, owner: Owner<'_>, a: &'m InboundAttachment) {
        self.attachment_id.push(key.attachment_id(owner.message_id));
        self.message_id.push(owner.message_id.to_owned());
        self.chat_id.push(owner.chat_id.to_owned());
        self.story.push(owner.story);
        self.kind
            .push(attachment_kind(owner.kind, &a.mime_type).as_str());
        self.mime_type.push(&a.mime_type);
        self.filename.push(a.filename.as_deref());
        let size = a.size.or(a.data.as_ref().map(|d| d.len() as u64));
        self.size.push(size.and_then(|s| i64::try_from(s).ok()));
        self.seconds
            .push(a.seconds.and_then(|s| i32::try_from(s).ok()));
        self.ts.push(owner.ts);
        self.thumbnail.push(a.thumbnail.as_deref());
        self.media.push(a.media.clone());
        self.data.push(a.data.as_deref());
    }
}

/// The `kind` an attachment reports: the message's media type, or one read off the mime type
/// for view-once and other wrappers.
pub(super) fn attachment_kind(kind: MessageType, mime: &str) -> MessageType {
    use MessageType as T;
    match kind {
        T::Image | T::Video | T::Audio | T::Voice | T::Document | T::Sticker => kind,
        _ if mime.starts_with("image/") => T::Image,
        _ if mime.starts_with("video/") => T::Video,
        _ if mime.starts_with("audio/") => T::Audio,
        _ => T::Document,
    }
}

/// An edit or delete aimed at an archived message.
pub(super) struct TargetUpdate<'m> {
    pub(super) input: usize,
    pub(super) chat_id: String,
    pub(super) target_wa: &'m str,
    pub(super) ts: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_kinds_follow_the_message_or_the_mime_type() {
        assert_eq!(
            attachment_kind(MessageType::Voice, "audio/ogg"),
            MessageType::Voice
        );
        assert_eq!(
            attachment_kind(MessageType::ViewOnce, "video/mp4"),
            MessageType::Video
        );
        assert_eq!(
            attachment_kind(MessageType::Text, "application/pdf"),
            MessageType::Document
        );
    }
}
