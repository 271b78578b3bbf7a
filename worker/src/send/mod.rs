//! Sending (DESIGN §5): the gates ([`gates`]), the durable idempotent journal ([`journal`]),
//! media bytes from the object store ([`media`]), the outbox behind `unconfirmed_sends`
//! ([`outbox`]), start-up recovery ([`recovery`]), what names a send ([`identity`]) and what
//! connectors transmit ([`outbound`]).
//!
//! One send, in order, each step committed before the next: the grant check and the chat
//! lookup (pipelined on one connection: one round trip) → gates → a key already journaled
//! replays its saved outcome (never reading media) → media read and verified → reserve the key,
//! `transmitting`, with its outbox row (one statement, one commit) → connector →
//! `accepted` (on WhatsApp's ack, committed with the own message it archives) / `failed`
//! (nothing left) / `outcome_unknown` (anything after the hand-over) → answer. Simultaneous
//! calls with one key: one reserves, the others wait for its outcome and answer it with
//! `duplicate: true`.

pub mod gates;
pub mod identity;
pub mod journal;
pub mod media;
pub mod outbound;
pub mod outbox;
pub mod recovery;

use std::time::Duration;

use chrono::SubsecRound as _;
use tracing::Instrument as _;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{MediaKind, MediaRef, SendResult, SendState};
use wazap_shared::{ErrorCode, RpcError};

use self::identity::allocate_wa_id;
pub use self::identity::digest;
use self::journal::{Entry, JournalState, Reservation, Reserved};
use self::outbound::{OutboundContent, OutboundMessage, SendError};
use crate::grants;
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

impl Payload {
    /// Where a media send's bytes are.
    fn media(&self) -> Option<&MediaRef> {
        match self {
            Self::Text(_) => None,
            Self::Media { media, .. } | Self::Voice { media, .. } => Some(media),
        }
    }
}

/// Serve one send request for `grant`. `req` is the handler's validation of the body: its
/// error is answered only once the grant is known good (an unauthorised caller learns nothing
/// from validation). The grant check and the chat lookup share one pooled connection and go out
/// together (tokio-postgres pipelines them): one round trip, where one after the other cost
/// two. The lookup needs no viewer, and nothing is decided from it before the grant check
/// passes.
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    req: Result<NewSend, RpcError>,
) -> Result<SendResult, RpcError> {
    let req = match req.and_then(checked) {
        Ok(r) => r,
        Err(e) => {
            let viewer = grants::authorize(&state.db, grant).await?;
            state.grants.put(&viewer);
            return Err(e);
        }
    };
    let db = state.db.get().await.map_err(|e| internal(&e.into()))?;
    let (viewer, found) = tokio::join!(
        grants::authorize_on(&db, grant),
        gates::lookup(&db, &req.chat_id)
    );
    let viewer = viewer?;
    state.grants.put(&viewer);
    let found = found.map_err(|e| internal(&e))?;
    leased(state, &viewer, db, found, req).await
}

/// Run one send for a caller already authorised as `viewer` (the chat is looked up on its own).
pub async fn run(state: &AppState, viewer: &Viewer, req: NewSend) -> Result<SendResult, RpcError> {
    let req = checked(req)?;
    let db = state.db.get().await.map_err(|e| internal(&e.into()))?;
    let found = gates::lookup(&db, &req.chat_id)
        .await
        .map_err(|e| internal(&e))?;
    leased(state, viewer, db, found, req).await
}

/// The checks every send tool shares: opaque ids, and a well-formed media reference.
fn checked(req: NewSend) -> Result<NewSend, RpcError> {
    gates::check_ids(&req.chat_id, &req.request_id)?;
    req.payload.media().map(media::check_ref).transpose()?;
    Ok(req)
}

/// The chat gate, then the send. A media send holds a [`media::Lease`] on its object from
/// here to its answer, so no other request deletes the bytes while this one may still need
/// them.
async fn leased(
    state: &AppState,
    viewer: &Viewer,
    db: deadpool_postgres::Client,
    found: Option<gates::Found>,
    req: NewSend,
) -> Result<SendResult, RpcError> {
    let lease = req
        .payload
        .media()
        .map(|m| media::Lease::take(&state.subjects, &m.object));
    let answer = match gates::allow(viewer, found) {
        Ok(target) => send(state, viewer, db, target, req).await,
        Err(e) => Err(e),
    };
    if let Some(lease) = lease {
        lease.release(&state.nats, &state.subjects).await;
    }
    answer
}

/// Session gate → journal (a repeat is answered from it, without the bytes) → media bytes →
/// connector, for a request whose grant and chat passed.
async fn send(
    state: &AppState,
    viewer: &Viewer,
    mut db: deadpool_postgres::Client,
    target: gates::Target,
    req: NewSend,
) -> Result<SendResult, RpcError> {
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
    match journal::reserve(&db, &r, Some(&outbox_text))
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
    let recorded = finish(state, &r, &target.account_id, wanted, accepted_at, echo).await;
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

/// Journal the final state and archive the own message WhatsApp acknowledged. An accepted
/// send with its message commits both in one writer transaction (one flight of statements,
/// and an accepted send is always in the archive); should that fail, each is done on its
/// own, concurrently. The answer waits for both.
async fn finish(
    state: &AppState,
    r: &Reservation<'_>,
    account_id: &str,
    wanted: JournalState,
    accepted_at: Option<chrono::DateTime<chrono::Utc>>,
    echo: Option<crate::archive::Inbound>,
) -> JournalState {
    let echo = match (wanted, accepted_at, echo) {
        (JournalState::Accepted, Some(at), Some(inbound)) => {
            let also = journal::accepted_with_echo(r.connection_id, r.request_id, at);
            match state
                .archive
                .ingest_live_with(account_id, inbound.clone(), also)
                .await
            {
                Ok(_) => return JournalState::Accepted,
                Err(e) => {
                    crate::archive::read::internal("send: accepted with its own message", &e);
                    Some(inbound)
                }
            }
        }
        (_, _, echo) => echo,
    };
    let archive_echo = async {
        if let Some(inbound) = echo
            && let Err(e) = state.archive.ingest_live(account_id, inbound).await
        {
            crate::archive::read::internal("send: own-send echo", &e);
        }
    };
    let (recorded, ()) = tokio::join!(record(state, r, wanted, accepted_at), archive_echo);
    recorded
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

fn internal(e: &anyhow::Error) -> RpcError {
    crate::archive::read::internal(CONTEXT, e)
}
