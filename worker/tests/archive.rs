//! The archive end to end inside the worker: ingest through the sim connector (over NATS) and
//! the batch API, then every read handler against real Postgres, one fresh database per test.
//! Shared helpers live here; the tests are grouped in `archive/*.rs`.

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
use wazap_shared::wire::search::{SearchAttachmentsRequest, SearchMessagesRequest};
use wazap_shared::wire::sim::{
    HistoryPage, HistorySync, InjectMessage, InjectStory, SetAccount, SetState, SimAttachment,
    SimMessage, UpsertContact, UpsertGroup,
};
use wazap_shared::wire::wait::{Cursor, WaitForMessagesRequest};
use wazap_shared::wire::{ChatKind, MessageType, SyncState};
use wazap_worker::archive::{CommitWith, Inbound, IngestOutcome};
use wazap_worker::rpc::{
    list_chats, read_messages, search_attachments, search_contacts, search_groups, search_messages,
    wait_for_messages,
};

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

/// A plain text message from the other person of `chat_jid`, `secs` after the test's epoch,
/// for the archive API directly.
fn plain(chat_jid: &str, wa_id: &str, secs: i64) -> Inbound {
    Inbound {
        chat_jid: chat_jid.into(),
        wa_id: wa_id.into(),
        sender_jid: None,
        push_name: None,
        from_me: false,
        timestamp: at(secs),
        kind: MessageType::Text,
        text: format!("text {wa_id}"),
        target_wa_id: None,
        edit: false,
        mentions: vec![],
        attachment: None,
    }
}

async fn inject(h: &Harness, m: SimMessage) -> String {
    let ack = h
        .sim(sim_op::INJECT_MESSAGE, &InjectMessage { message: m })
        .await;
    ack.ids.into_iter().next().expect("an id")
}

async fn history(h: &Harness, messages: Vec<SimMessage>) -> wazap_shared::wire::sim::SimAck {
    h.sim(
        sim_op::HISTORY_SYNC,
        &HistorySync {
            messages,
            progress: None,
        },
    )
    .await
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

/// The chat id of a JID's chat, via a phone or opaque lookup through read_messages.
async fn chat_of(h: &Harness, jid: &str) -> String {
    let digits = jid.split('@').next().unwrap();
    read(h, &viewer_all(), req(&format!("+{digits}")))
        .await
        .chat_id
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

#[path = "archive/accounts.rs"]
mod accounts;
#[path = "archive/chats.rs"]
mod chats;
#[path = "archive/identity.rs"]
mod identity;
#[path = "archive/ingest.rs"]
mod ingest;
#[path = "archive/messages.rs"]
mod messages;
#[path = "archive/scope.rs"]
mod scope;
#[path = "archive/search.rs"]
mod search;
#[path = "archive/statistics.rs"]
mod statistics;
