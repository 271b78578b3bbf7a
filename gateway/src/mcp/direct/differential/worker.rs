//! A fake worker for the differential test: it answers `<prefix>.rpc.*` with fixed replies
//! (nothing time-dependent, so both routes get the same bytes from it), an error for the
//! inputs named below, and `not_found` for every op it does not know.

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;
use wazap_shared::bus::{Reply, encode_reply};
use wazap_shared::subjects::{Subjects, op};
use wazap_shared::wire::read::{
    ChatSummary, GroupSummary, ListChatsResponse, Preview, ReadMessagesRequest,
    ReadMessagesResponse, SearchContactsRequest, SearchContactsResponse, SearchGroupsResponse,
};
use wazap_shared::wire::send::{SendResult, SendState};
use wazap_shared::wire::wait::WaitPollResponse;
use wazap_shared::wire::{ChatKind, SyncState};
use wazap_shared::{ErrorCode, RpcError};

/// `search_contacts` for this query answers `account_not_found`.
pub(super) const UNKNOWN_ACCOUNT_QUERY: &str = "nobody";
/// `read_messages` of this chat answers `chat_not_found`.
pub(super) const GONE_CHAT: &str = "c_gone";

/// Answers until dropped.
pub(super) struct FakeWorker {
    stop: CancellationToken,
}

impl Drop for FakeWorker {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FakeWorker {
    /// Answer under `prefix` on `nats`; the subscription is active when this returns.
    pub(super) async fn start(nats: &async_nats::Client, prefix: &str) -> Self {
        let subjects = Subjects::new(prefix);
        let mut sub = nats.subscribe(subjects.rpc_all()).await.expect("subscribe");
        nats.flush().await.expect("flush");
        let stop = CancellationToken::new();
        let (nats, stopped) = (nats.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let msg = tokio::select! {
                    () = stopped.cancelled() => break,
                    m = sub.next() => match m { Some(m) => m, None => break },
                };
                let Some(reply) = msg.reply.clone() else {
                    continue;
                };
                let op = subjects
                    .rpc_route(&msg.subject)
                    .map_or("", |(_, op)| op)
                    .to_owned();
                let nats = nats.clone();
                tokio::spawn(async move {
                    let _ = nats.publish(reply, answer(&op, &msg.payload)).await;
                });
            }
        });
        Self { stop }
    }
}

fn ok<T: serde::Serialize>(value: T) -> bytes::Bytes {
    encode_reply(&Reply::Ok(value))
}

fn error(code: ErrorCode, message: &str) -> bytes::Bytes {
    encode_reply::<()>(&Reply::Error(RpcError::new(code, message)))
}

/// The reply to one op.
fn answer(op_name: &str, payload: &[u8]) -> bytes::Bytes {
    let at: DateTime<Utc> = "2026-01-02T03:04:05Z".parse().expect("a time");
    match op_name {
        op::LIST_CHATS => ok(ListChatsResponse {
            account_id: "default".into(),
            chats: vec![ChatSummary {
                chat_id: "c_family".into(),
                name: "Family".into(),
                kind: ChatKind::Group,
                last_message_at: Some(at),
                unread_count: 2,
                can_send: true,
            }],
        }),
        op::SEARCH_CONTACTS => match serde_json::from_slice::<SearchContactsRequest>(payload) {
            Ok(r) if r.query == UNKNOWN_ACCOUNT_QUERY => {
                error(ErrorCode::AccountNotFound, "account_id: unknown account")
            }
            _ => ok(SearchContactsResponse {
                account_id: "default".into(),
                contacts: vec![],
            }),
        },
        op::SEARCH_GROUPS => ok(SearchGroupsResponse {
            account_id: "default".into(),
            groups: vec![GroupSummary {
                chat_id: "c_family".into(),
                name: "Family".into(),
                participant_count: 4,
            }],
        }),
        op::READ_MESSAGES => {
            let Ok(req) = serde_json::from_slice::<ReadMessagesRequest>(payload) else {
                return error(ErrorCode::InvalidArgument, "undecodable");
            };
            if req.chat_id == GONE_CHAT {
                return error(ErrorCode::ChatNotFound, "chat_id: no such chat");
            }
            let previews: Vec<Preview> = match req.include_previews {
                Some(true) => ["/9j/AAAA", "/9j/BBBB"]
                    .iter()
                    .map(|data| Preview {
                        message_id: "m_1".into(),
                        mime_type: "image/jpeg".into(),
                        data_base64: (*data).into(),
                    })
                    .collect(),
                _ => vec![],
            };
            ok(ReadMessagesResponse {
                account_id: "default".into(),
                chat_id: req.chat_id,
                count: 0,
                messages: vec![],
                sync: SyncState::Demo,
                preview_count: previews.len() as u32,
                notes: vec!["a note".into()],
                unconfirmed_sends: vec![],
                older: None,
                omitted: None,
                types: None,
                hours: None,
                previews,
            })
        }
        op::WAIT_FOR_MESSAGES => ok(WaitPollResponse {
            account_id: "default".into(),
            messages: vec![],
            cursor: format!("w1.{}.5", "0".repeat(32)),
            position: 5,
            cursor_reset: false,
        }),
        op::SEND_MESSAGE | op::SEND_MEDIA | op::SEND_VOICE_NOTE | op::GET_SEND_STATUS => {
            let body: serde_json::Value = serde_json::from_slice(payload).unwrap_or_default();
            let field = |name: &str| body[name].as_str().unwrap_or("c_family").to_owned();
            ok(SendResult {
                request_id: field("request_id"),
                chat_id: field("chat_id"),
                state: SendState::Accepted,
                message_id: Some("m_sent1".into()),
                duplicate: op_name == op::GET_SEND_STATUS,
                accepted_at: Some(at),
            })
        }
        _ => error(ErrorCode::NotFound, "unknown op"),
    }
}
