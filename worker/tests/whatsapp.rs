//! The WhatsApp connector against real protobuf values (the crate's own `waproto` types) and a
//! real archive: the mapping of every message type, history blobs through the batch path,
//! archive-before-ack ordering, LID ↔ phone merges, group notifications as system messages,
//! undecryptable placeholders replaced by the resent message, receipts of sent messages into the
//! journal, and the session state fold. Nothing here fakes our own
//! `Connector` trait; what only a real phone can show is listed in the README.

mod common;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use whatsapp_rust::Jid;
use whatsapp_rust::types::events::InboundMessage;
use whatsapp_rust::types::message::{MessageInfo, MessageSource};
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;

#[path = "whatsapp/groups.rs"]
mod groups;
#[path = "whatsapp/history.rs"]
mod history;
#[path = "whatsapp/hook.rs"]
mod hook;
#[path = "whatsapp/map.rs"]
mod map;
#[path = "whatsapp/people.rs"]
mod people;
#[path = "whatsapp/placeholder.rs"]
mod placeholder;
#[path = "whatsapp/receipts.rs"]
mod receipts;
#[path = "whatsapp/status.rs"]
mod status;

/// A person's phone JID.
const ALICE: &str = "15550001111@s.whatsapp.net";
/// Another person.
const BOB: &str = "15550002222@s.whatsapp.net";
/// A group.
const GROUP: &str = "120363000000000001@g.us";

/// When the test messages were sent.
fn ts() -> DateTime<Utc> {
    "2026-03-04T05:06:07Z".parse().expect("time")
}

/// The envelope of a message `id` in `chat`, from `sender` (`None` = the account itself).
fn info(chat: &str, sender: Option<&str>, id: &str) -> MessageInfo {
    let chat: Jid = chat.parse().expect("chat jid");
    let from_me = sender.is_none();
    let sender_jid: Jid = sender
        .unwrap_or("15559999999@s.whatsapp.net")
        .parse()
        .expect("sender");
    MessageInfo {
        source: MessageSource {
            is_group: chat.server == whatsapp_rust::Server::Group,
            chat,
            sender: sender_jid,
            is_from_me: from_me,
            ..MessageSource::default()
        },
        id: id.to_owned(),
        push_name: if from_me {
            String::new()
        } else {
            "Alice".to_owned()
        },
        timestamp: ts(),
        ..MessageInfo::default()
    }
}

/// One decrypted message as the durability hook receives it.
fn inbound(message: wa::Message, info: MessageInfo) -> InboundMessage {
    InboundMessage::builder()
        .message(Arc::new(message))
        .info(Arc::new(info))
        .build()
}

/// A text message.
fn text(body: &str) -> wa::Message {
    wa::Message {
        conversation: Some(body.to_owned()),
        ..Default::default()
    }
}

/// Some() for a sub-message.
fn some<T: Default>(v: T) -> MessageField<T> {
    MessageField::some(v)
}
