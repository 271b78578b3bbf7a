//! Sending (DESIGN §5): the gates ([`gates`]), the durable idempotent journal ([`journal`]),
//! media bytes from the object store ([`media`]), the outbox behind `unconfirmed_sends`
//! ([`outbox`]), start-up recovery ([`recovery`]) and what connectors transmit ([`outbound`]).
//!
//! One send, in order, each step committed before the next: gates → a key already journaled
//! replays its saved outcome (never reading media) → media read and verified → reserve the key,
//! `transmitting`, with its outbox row (one commit) → connector →
//! `accepted` (on WhatsApp's ack) / `failed` (nothing left) / `outcome_unknown` (anything
//! after the hand-over) → answer. Simultaneous calls with one key: one reserves, the others
//! wait for its outcome and answer it with `duplicate: true`.

pub mod gates;
pub mod journal;
pub mod media;
pub mod outbound;
pub mod outbox;
pub mod recovery;

use std::time::Duration;

use chrono::SubsecRound as _;
use sha2::{Digest as _, Sha256};
use tracing::Instrument as _;
use wazap_shared::wire::send::{MediaKind, MediaRef, SendResult, SendState};
use wazap_shared::{ErrorCode, RpcError};

use self::journal::{Entry, JournalState, Reservation, Reserved};
use self::outbound::{OutboundContent, OutboundMessage, SendError};
use crate::state::AppState;
use crate::viewer::Viewer;

/// How long the connector may take to transmit and be acknowledged (the op's deadline is 60 s;
/// the rest is margin for the journal and the answer).
pub const CONNECTOR_BUDGET: Duration = Duration::from_secs(50);
/// How long a call waits for a simultaneous call with the same key to finish.
const WAIT_FOR_OTHER: Duration = Duration::from_secs(55);
const CONTEXT: &str = "send";

/// What a send tool asks for, before its bytes are fetched.
#[derive(Debug, Clone)]
pub enum Payload {
    /// `send_message`.
    Text(String),
    /// `send_media`.
    Media {
        /// Kind.
        kind: MediaKind,
        /// Media type.
        mime_type: String,
        /// Where the bytes are.
        media: MediaRef,
        /// File name.
        filename: Option<String>,
        /// Caption.
        caption: Option<String>,
        /// Duration.
        seconds: Option<u32>,
    },
    /// `send_voice_note`.
    Voice {
        /// Where the Ogg/Opus bytes are.
        media: MediaRef,
        /// Duration.
        seconds: u32,
    },
}

/// One send request, as a handler validated it.
#[derive(Debug, Clone)]
pub struct NewSend {
    /// The tool (`send_message`, `send_media`, `send_voice_note`).
    pub tool: &'static str,
    /// The opaque chat id.
    pub chat_id: String,
    /// The caller's key.
    pub request_id: String,
    /// What to send.
    pub payload: Payload,
}

/// Run one send through the gates, the journal and the connector. A media send holds a
/// [`media::Lease`] on its object from here to its answer, so no other request deletes the
/// bytes while this one may still need them.
pub async fn run(state: &AppState, viewer: &Viewer, req: NewSend) -> Result<SendResult, RpcError> {
    gates::check_ids(&req.chat_id, &req.request_id)?;
    let object = match &req.payload {
        Payload::Text(_) => return send(state, viewer, req).await,
        Payload::Media { media, .. } | Payload::Voice { media, .. } => media,
    };
    media::check_ref(object)?;
    let lease = media::Lease::take(&state.subjects, &object.object);
    let answer = send(state, viewer, req).await;
    lease.release(&state.nats, &state.subjects).await;
    answer
}

/// Gates → journal (a repeat is answered from it, without the bytes) → media bytes → connector.
async fn send(state: &AppState, viewer: &Viewer, req: NewSend) -> Result<SendResult, RpcError> {
    let mut db = state.db.get().await.map_err(|e| internal(&e.into()))?;
    let target = gates::target(&db, viewer, &req.chat_id)
        .await
        .map_err(|e| internal(&e))??;
    gates::session(state.connector.as_ref(), &target.account_id)?;
    // Media enter the digest by their name (their SHA-256), so no bytes are needed yet.
    let digest = digest(req.tool, &target.chat_id, &req.payload);
    let wa_id = allocate_wa_id().map_err(|e| internal(&e))?;
    let message_id = target
        .key
        .message_id(&target.account_id, &target.chat_id, &wa_id);
    let r = Reservation {
        connection_id: &viewer.connection_id,
        request_id: &req.request_id,
        tool: req.tool,
        account_id: &target.account_id,
        chat_id: &target.chat_id,
        digest: &digest,
        recipient: &target.recipient,
        wa_id: &wa_id,
        message_id: &message_id,
    };
    let bytes = match &req.payload {
        Payload::Text(_) => None,
        Payload::Media { media, .. } | Payload::Voice { media, .. } => {
            // A key already journaled is answered from the journal: its bytes are not needed
            // (and may be gone). Only a new key reads them, with no pooled connection held.
            if let Some(e) = journal::get(&db, r.connection_id, r.request_id)
                .await
                .map_err(|e| internal(&e))?
            {
                drop(db);
                return replay(state, &r, e).await;
            }
            drop(db);
            let data = media::fetch(&state.nats, &state.subjects, media).await?;
            db = state.db.get().await.map_err(|e| internal(&e.into()))?;
            Some(data)
        }
    };
    let outbox_text = match &req.payload {
        Payload::Text(t) => t.clone(),
        Payload::Media { caption, .. } => caption.clone().unwrap_or_default(),
        Payload::Voice { .. } => String::new(),
    };
    match journal::reserve(&mut db, &r, Some(&outbox_text))
        .await
        .map_err(|e| internal(&e))?
    {
        Reserved::Full => {
            return Err(RpcError::new(
                ErrorCode::SendJournalFull,
                "this connection has used all 100,000 request ids; the owner must issue a new connection",
            ));
        }
        Reserved::Existing(e) => {
            // Never hold a pooled connection while waiting for another call's outcome.
            drop(db);
            return replay(state, &r, e).await;
        }
        Reserved::New => {}
    }
    let content = match (req.payload, bytes) {
        (Payload::Text(t), _) => OutboundContent::Text(t),
        (
            Payload::Media {
                kind,
                mime_type,
                filename,
                caption,
                seconds,
                ..
            },
            Some(data),
        ) => OutboundContent::Media {
            kind,
            mime_type,
            data,
            filename,
            caption,
            seconds,
        },
        (Payload::Voice { seconds, .. }, Some(data)) => OutboundContent::Voice { data, seconds },
        _ => return Err(internal(&anyhow::anyhow!("media bytes missing"))),
    };
    // No pooled connection is held while WhatsApp answers.
    drop(db);
    let message = OutboundMessage {
        account_id: target.account_id.clone(),
        recipient: target.recipient.clone(),
        wa_id: wa_id.clone(),
        content,
    };
    // The connector's work is a span of its own in the request's trace.
    let transmit = state
        .connector
        .send(message)
        .instrument(tracing::info_span!("connector.send"));
    let outcome = tokio::time::timeout(CONNECTOR_BUDGET, transmit).await;
    let mut echo = None;
    let (wanted, accepted_at) = match outcome {
        // Postgres keeps microseconds: answer exactly what a replay will read.
        Ok(Ok(ack)) => {
            echo = ack.echo;
            (JournalState::Accepted, Some(ack.at.trunc_subsecs(6)))
        }
        Ok(Err(e @ (SendError::CannotSend(_) | SendError::BeforeTransmission(_)))) => {
            tracing::warn!(message.id = %message_id, cause = %e, "send failed before transmission");
            (JournalState::Failed, None)
        }
        Ok(Err(e)) => {
            tracing::warn!(message.id = %message_id, cause = %e, "send outcome unknown");
            (JournalState::OutcomeUnknown, None)
        }
        Err(_) => {
            tracing::warn!(message.id = %message_id, "send outcome unknown: the connector did not answer in time");
            (JournalState::OutcomeUnknown, None)
        }
    };
    // The own message enters the archive while `accepted` is journaled; the answer waits for
    // both commits.
    let archive_echo = async {
        if let Some(inbound) = echo
            && let Err(e) = state.archive.ingest_live(&target.account_id, inbound).await
        {
            crate::archive::read::internal("send: own-send echo", &e);
        }
    };
    let (recorded, ()) = tokio::join!(record(state, &r, wanted, accepted_at), archive_echo);
    crate::metrics::send(recorded.as_str());
    tracing::info!(
        connection.id = %viewer.connection_id,
        message.id = %message_id,
        state = recorded.as_str(),
        "send"
    );
    Ok(SendResult {
        request_id: req.request_id,
        chat_id: target.chat_id,
        state: match recorded {
            JournalState::Accepted => SendState::Accepted,
            JournalState::Failed => SendState::Failed,
            _ => SendState::OutcomeUnknown,
        },
        message_id: Some(message_id),
        duplicate: false,
        accepted_at: accepted_at.filter(|_| recorded == JournalState::Accepted),
    })
}

/// Journal the final state; what could not be journaled reads as `outcome_unknown` (the row
/// stays `transmitting`, which start-up recovery also turns into `outcome_unknown`).
async fn record(
    state: &AppState,
    r: &Reservation<'_>,
    wanted: JournalState,
    accepted_at: Option<chrono::DateTime<chrono::Utc>>,
) -> JournalState {
    let result = async {
        let db = state.db.get().await?;
        journal::finish(&db, r.connection_id, r.request_id, wanted, accepted_at).await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => wanted,
        Err(e) => {
            crate::archive::read::internal("send: journal outcome", &e);
            if let Ok(db) = state.db.get().await {
                let _ = journal::finish(
                    &db,
                    r.connection_id,
                    r.request_id,
                    JournalState::OutcomeUnknown,
                    None,
                )
                .await;
            }
            JournalState::OutcomeUnknown
        }
    }
}

/// Answer a key that exists: `send_request_conflict` when the payload or chat differ, else its
/// saved outcome (waiting for it while another call is still sending).
async fn replay(
    state: &AppState,
    r: &Reservation<'_>,
    mut entry: Entry,
) -> Result<SendResult, RpcError> {
    if entry.digest != r.digest || entry.tool != r.tool || entry.chat_id != r.chat_id {
        return Err(RpcError::new(
            ErrorCode::SendRequestConflict,
            "this request_id was used for another message or chat; choose a new request_id",
        ));
    }
    let deadline = tokio::time::Instant::now() + WAIT_FOR_OTHER;
    let mut pause = Duration::from_millis(5);
    while !entry.state.is_final() {
        if tokio::time::Instant::now() >= deadline {
            return Err(RpcError::new(
                ErrorCode::DeadlineExceeded,
                "an earlier call with this request_id is still sending; ask get_send_status",
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
        let db = state.db.get().await.map_err(|e| internal(&e.into()))?;
        entry = journal::get(&db, r.connection_id, r.request_id)
            .await
            .map_err(|e| internal(&e))?
            .ok_or_else(|| internal(&anyhow::anyhow!("journal row vanished")))?;
    }
    Ok(entry.result(true))
}

/// SHA-256 over the tool, the chat and the payload, each field length-prefixed (absent and
/// empty differ). Media enter by their digest, never their bytes.
pub fn digest(tool: &str, chat_id: &str, payload: &Payload) -> Vec<u8> {
    let mut h = Sha256::new();
    let mut put = |b: Option<&[u8]>| match b {
        None => h.update([0u8]),
        Some(b) => {
            h.update([1u8]);
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        }
    };
    put(Some(tool.as_bytes()));
    put(Some(chat_id.as_bytes()));
    match payload {
        Payload::Text(t) => put(Some(t.as_bytes())),
        Payload::Media {
            kind,
            mime_type,
            media,
            filename,
            caption,
            seconds,
        } => {
            put(Some(format!("{kind:?}").as_bytes()));
            put(Some(media.object.as_bytes()));
            put(Some(mime_type.as_bytes()));
            put(filename.as_deref().map(str::as_bytes));
            put(caption.as_deref().map(str::as_bytes));
            put(seconds.map(u32::to_be_bytes).as_ref().map(|s| &s[..]));
        }
        Payload::Voice { media, seconds } => {
            put(Some(media.object.as_bytes()));
            put(Some(&seconds.to_be_bytes()));
        }
    }
    h.finalize().to_vec()
}

/// A fresh WhatsApp message id in WhatsApp Web's style (`3EB0` + 18 upper-case hex digits).
fn allocate_wa_id() -> anyhow::Result<String> {
    let mut b = [0u8; 9];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(format!("3EB0{}", hex::encode_upper(b)))
}

fn internal(e: &anyhow::Error) -> RpcError {
    crate::archive::read::internal(CONTEXT, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_separate_tool_chat_and_payload() {
        let t = |s: &str| Payload::Text(s.into());
        let base = digest("send_message", "c_1", &t("hi"));
        assert_eq!(base, digest("send_message", "c_1", &t("hi")));
        assert_ne!(base, digest("send_message", "c_2", &t("hi")));
        assert_ne!(base, digest("send_message", "c_1", &t("hi!")));
        let m = |caption: Option<&str>| Payload::Media {
            kind: MediaKind::Image,
            mime_type: "image/png".into(),
            media: MediaRef {
                object: "ab".into(),
                size: 1,
            },
            filename: None,
            caption: caption.map(Into::into),
            seconds: None,
        };
        assert_ne!(
            digest("send_media", "c_1", &m(None)),
            digest("send_media", "c_1", &m(Some("")))
        );
        let id = allocate_wa_id().unwrap();
        assert!(id.starts_with("3EB0") && id.len() == 22);
    }
}
