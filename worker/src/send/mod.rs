//! Sending (DESIGN §5): the gates ([`gates`]), the durable idempotent journal ([`journal`]),
//! media bytes from the object store ([`media`]), the outbox behind `unconfirmed_sends`
//! ([`outbox`]), start-up recovery ([`recovery`]), what names a send ([`identity`]), what
//! connectors transmit ([`outbound`]) and the recipients' receipts they hand back
//! ([`receipts`]).
//!
//! One send, in order, each step committed before the next: the grant check and the chat
//! lookup (pipelined on one connection: one round trip) → gates → a key already journaled
//! replays its saved outcome (never reading media) → media read and verified → reserve the key,
//! `transmitting`, with its outbox row (one statement, one commit) → connector →
//! `accepted` (on WhatsApp's ack, committed with the own message it archives) / `failed`
//! (nothing left) / `outcome_unknown` (anything after the hand-over) → answer ([`transmit`]).
//! Simultaneous calls with one key: one reserves, the others wait for its outcome and answer it
//! with `duplicate: true`. A text from a connection to a chat both seen accepted before skips
//! the first step: one statement re-checks the grant and the chat and reserves ([`fast`]).

mod fast;
pub mod gates;
pub mod handling;
pub mod identity;
pub mod journal;
pub mod media;
pub mod outbox;
pub mod receipts;
pub mod recovery;
mod refusal;
mod transmit;

use std::time::Duration;

use tokio_postgres::types::ToSql;
use wazap_shared::ErrorCode;
use wazap_shared::checks;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{MediaKind, MediaRef, SendResult};

use self::identity::allocate_wa_id;
pub use self::identity::digest;
use self::journal::{Entry, Reservation, Reserved};
use crate::archive::Archive;
use crate::connector::DynConnector;
use crate::connector::outbound::OutboundContent;
use crate::error::{Context as _, Error};
use crate::grants::{self, GrantCache};
use crate::viewer::Viewer;
use wazap_shared::subjects::Subjects;

/// How long the connector may take to transmit and be acknowledged (the op's deadline is 60 s;
/// the rest is margin for the journal and the answer).
pub const CONNECTOR_BUDGET: Duration = Duration::from_secs(50);
/// How long a call waits for a simultaneous call with the same key to finish.
const WAIT_FOR_OTHER: Duration = Duration::from_secs(55);
pub(crate) const CONTEXT: &str = "send";

/// What sending needs: cheap handles to the worker's pool, archive, connector and NATS, and the
/// memos it speculates with (shared with the read ops: the grant cache is one).
#[derive(Clone)]
pub struct Sender {
    /// The Postgres pool.
    pub db: deadpool_postgres::Pool,
    /// The archive (an acknowledged send's own message is archived at once).
    pub archive: Archive,
    /// The WhatsApp side.
    pub connector: DynConnector,
    /// The NATS client (media bytes come from its object store).
    pub nats: async_nats::Client,
    /// This deployment's subjects.
    pub subjects: Subjects,
    /// Each connection's grant at its last accepted request.
    pub grants: GrantCache,
    /// Where each chat id led the last send that looked it up.
    pub targets: gates::Targets,
    /// The lease this worker serves under, checked again just before a hand-over: a worker
    /// that lost it (paused past its expiry, say) transmits nothing. `None` outside a serving
    /// worker (tests that build the state themselves).
    pub lease: Option<crate::lease::Held>,
    /// The keys calls in this process are handling (a retry settles an abandoned one at once).
    pub handling: handling::Handling,
}

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

/// One send request, checked: only [`NewSend::new`] makes one.
#[derive(Debug, Clone)]
pub struct NewSend {
    /// The tool (`send_message`, `send_media`, `send_voice_note`).
    tool: &'static str,
    /// The opaque chat id.
    chat_id: String,
    /// The caller's key.
    request_id: String,
    /// What to send.
    payload: Payload,
}

impl NewSend {
    /// The opaque chat id it sends to (its account is the send's).
    pub fn chat_id(&self) -> &str {
        &self.chat_id
    }

    /// The worker's one check of what every send tool shares (the gateway ran the same
    /// checkers first): an opaque `chat_id`, a `request_id` of its shape, a well-formed media
    /// reference. Each tool's own fields are checked by its RPC op before it calls this.
    pub fn new(
        tool: &'static str,
        chat_id: String,
        request_id: String,
        payload: Payload,
    ) -> Result<Self, Error> {
        checks::send_chat_id(&chat_id)?;
        checks::request_id(&request_id)?;
        payload.media().map(media::check_ref).transpose()?;
        Ok(Self {
            tool,
            chat_id,
            request_id,
            payload,
        })
    }
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

/// Serve one send request for `grant`. `req` is the RPC op's validation of the body: its
/// error is answered only once the grant is known good (an unauthorised caller learns nothing
/// from validation). A text whose connection and chat were seen accepted before is reserved by
/// one statement that re-checks both ([`fast`]). Otherwise the grant check and the chat lookup
/// share one pooled connection and go out together (tokio-postgres pipelines them): one round
/// trip, where one after the other cost two. The lookup needs no viewer, and nothing is
/// decided from it before the grant check passes.
pub async fn serve(
    state: &Sender,
    grant: Option<&VerifiedGrant>,
    req: Result<NewSend, Error>,
) -> Result<SendResult, Error> {
    let req = match req {
        Ok(r) => r,
        Err(e) => {
            let accepted = grants::authorize(&state.db, grant).await?;
            state.grants.put(&accepted);
            return Err(e);
        }
    };
    // Held until this call's outcome is journaled: a retry meanwhile waits for it.
    let _handled = grant.map(|g| state.handling.enter(&g.connection_id, &req.request_id));
    let db = state.db.get().await.context(CONTEXT)?;
    if let Payload::Text(text) = &req.payload
        && let Some(guess) = fast::RememberedSend::of(state, grant, &req)
        && let Some((plan, reserved)) = guess.reserve(state, &db, &req, text).await?
    {
        drop(db);
        let content = OutboundContent::Text(text.clone());
        return transmit::after_reserve(state, &plan, reserved, content).await;
    }
    let (accepted, found) = tokio::join!(
        grants::authorize_on(&db, grant),
        gates::lookup(&db, &req.chat_id)
    );
    let accepted = accepted?;
    state.grants.put(&accepted);
    let found = found.context(CONTEXT)?;
    if let Some(found) = &found {
        state.targets.put(&req.chat_id, found);
    }
    gate_and_send(state, &accepted.viewer, db, found, req).await
}

/// `send_check`: the gates a send passes before anything is journaled or stored — the grant,
/// the chat (read scope, send permission), a session that can send — asked by a gateway before
/// it stores a media send's bytes. The send itself checks everything again.
pub async fn check(
    state: &Sender,
    grant: Option<&VerifiedGrant>,
    chat_id: &str,
) -> Result<(), Error> {
    let db = state.db.get().await.context(CONTEXT)?;
    let shape = checks::send_chat_id(chat_id);
    let (accepted, found) = tokio::join!(
        grants::authorize_on(&db, grant),
        gates::lookup(&db, chat_id)
    );
    let accepted = accepted?;
    state.grants.put(&accepted);
    // Answered only once the grant is known good: a stranger learns nothing from it.
    shape?;
    let found = found.context(CONTEXT)?;
    let target = refusal::allow_or_record(&db, &accepted.viewer, None, found).await?;
    gates::session(state.connector.as_ref(), &target.account_id)
}

/// The chat gate, then the send. A media send holds a [`media::Lease`] on its object from
/// here to its answer, so no other request deletes the bytes while this one may still need
/// them.
async fn gate_and_send(
    state: &Sender,
    viewer: &Viewer,
    db: deadpool_postgres::Client,
    found: Option<gates::LookedUpChat>,
    req: NewSend,
) -> Result<SendResult, Error> {
    let lease = req
        .payload
        .media()
        .map(|m| media::Lease::take(&state.subjects, &m.object));
    let answer = match refusal::allow_or_record(&db, viewer, Some(req.tool), found).await {
        Ok(target) => send(state, viewer, db, target, req).await,
        Err(e) => Err(e),
    };
    if let Some(lease) = lease {
        lease.release(&state.nats).await;
    }
    answer
}

/// A send named before anything is journaled: who sends what where, its digest and its
/// allocated WhatsApp id.
#[derive(Debug)]
struct Plan {
    connection_id: String,
    request_id: String,
    tool: &'static str,
    target: gates::Target,
    digest: Vec<u8>,
    wa_id: String,
    message_id: String,
}

impl Plan {
    /// Name the send `req` from `connection_id` to `target`. Media enter the digest by their
    /// name (their SHA-256), so no bytes are needed yet.
    fn new(connection_id: &str, target: gates::Target, req: &NewSend) -> Result<Self, Error> {
        let digest = digest(req.tool, &target.chat_id, &req.payload);
        let wa_id = allocate_wa_id().context(CONTEXT)?;
        let message_id = target
            .key
            .message_id(&target.account_id, &target.chat_id, &wa_id);
        Ok(Self {
            connection_id: connection_id.to_owned(),
            request_id: req.request_id.clone(),
            tool: req.tool,
            target,
            digest,
            wa_id,
            message_id,
        })
    }

    /// What the journal reserves.
    fn reservation(&self) -> Reservation<'_> {
        Reservation {
            connection_id: &self.connection_id,
            request_id: &self.request_id,
            tool: self.tool,
            account_id: &self.target.account_id,
            chat_id: &self.target.chat_id,
            digest: &self.digest,
            recipient: &self.target.recipient,
            wa_id: &self.wa_id,
            message_id: &self.message_id,
        }
    }
}

/// Session gate → journal (a repeat is answered from it, without the bytes) → media bytes →
/// connector, for a request whose grant and chat passed.
async fn send(
    state: &Sender,
    viewer: &Viewer,
    mut db: deadpool_postgres::Client,
    target: gates::Target,
    req: NewSend,
) -> Result<SendResult, Error> {
    gates::session(state.connector.as_ref(), &target.account_id)?;
    let plan = Plan::new(&viewer.connection_id, target, &req)?;
    let r = plan.reservation();
    let content = match req.payload {
        Payload::Text(t) => OutboundContent::Text(t),
        Payload::Media { ref media, .. } | Payload::Voice { ref media, .. } => {
            // A key already journaled is answered from the journal: its bytes are not needed
            // (and may be gone). Only a new key reads them, with no pooled connection held.
            if let Some(e) = journal::get(&db, r.connection_id, r.request_id)
                .await
                .context(CONTEXT)?
            {
                drop(db);
                return replay(state, &r, e).await;
            }
            drop(db);
            let data = media::fetch(&state.nats, &state.subjects, media).await?;
            db = state.db.get().await.context(CONTEXT)?;
            with_bytes(req.payload, data)
        }
    };
    let outbox = Some(content.outbox_text());
    let reserved = match journal::reserve(&db, &r, outbox).await {
        Ok(reserved) => reserved,
        Err(e) => unreserved(state, &r, e, (&journal::RESERVE, &r.params(&outbox))).await?,
    };
    // Never hold a pooled connection while WhatsApp answers or another call finishes.
    drop(db);
    transmit::after_reserve(state, &plan, reserved, content).await
}

/// The reservation statement failed. Postgres answered it with an error: nothing was reserved.
/// Its answer was lost (the link broke, a time bound passed): it may have committed, or may
/// still arrive, so the key is settled on another connection ([`journal::confirm`], which runs
/// `statement` again when nothing is there) and the call goes on with what that found. When
/// even that fails, nothing is handed over and the caller may retry the key: a row the lost
/// statement may have left is marked `failed` under this call's WhatsApp id (if that cannot be
/// written either, the next retry or the stale sweep settles it; it is never transmitted).
async fn unreserved(
    state: &Sender,
    r: &Reservation<'_>,
    e: anyhow::Error,
    statement: (&str, &[&(dyn ToSql + Sync)]),
) -> Result<Reserved, Error> {
    if journal::may_have_committed(&e) {
        let confirmed = async {
            let mut db = state.db.get().await?;
            journal::confirm(&mut db, r, statement).await
        };
        match confirmed.await {
            Ok(reserved) => {
                tracing::info!(
                    connection.id = %r.connection_id,
                    message.id = %r.message_id,
                    "the reservation's answer was lost; the key is settled again"
                );
                return Ok(reserved);
            }
            Err(e) => {
                tracing::warn!(error = %crate::error::redacted(e.as_ref()), "a reservation whose answer was lost could not be settled");
                if let Ok(db) = state.db.get().await
                    && let Err(e) =
                        journal::abandon(&db, r.connection_id, r.request_id, r.wa_id).await
                {
                    tracing::warn!(error = %crate::error::redacted(e.as_ref()), "an unconfirmed reservation could not be marked failed");
                }
            }
        }
    }
    Error::internal(CONTEXT, e).log();
    Err(Error::new(
        ErrorCode::WorkerUnavailable,
        "the send journal could not be written, so nothing was sent; retry with the same request_id",
    ))
}

/// A media payload's content, with its bytes.
fn with_bytes(payload: Payload, data: bytes::Bytes) -> OutboundContent {
    match payload {
        Payload::Text(t) => OutboundContent::Text(t),
        Payload::Media {
            kind,
            mime_type,
            filename,
            caption,
            seconds,
            ..
        } => OutboundContent::Media {
            kind,
            mime_type,
            data,
            filename,
            caption,
            seconds,
        },
        Payload::Voice { seconds, .. } => OutboundContent::Voice { data, seconds },
    }
}

/// Answer a key that exists: `send_request_conflict` when the payload or chat differ, else its
/// saved outcome (waiting for it while another call is still sending).
async fn replay(
    state: &Sender,
    r: &Reservation<'_>,
    mut entry: Entry,
) -> Result<SendResult, Error> {
    if entry.digest != r.digest || entry.tool != r.tool || entry.chat_id != r.chat_id {
        return Err(Error::new(
            ErrorCode::SendRequestConflict,
            "this request_id was used for another message or chat; choose a new request_id",
        ));
    }
    let deadline = tokio::time::Instant::now() + WAIT_FOR_OTHER;
    let mut pause = Duration::from_millis(5);
    // This call only replays the key from here: it never counts as one that may transmit it.
    let _replaying = state.handling.replaying(r.connection_id, r.request_id);
    while !entry.state.is_final() {
        let abandoned = state.handling.may_transmit(r.connection_id, r.request_id) == 0;
        if entry.stale || abandoned {
            // Abandoned by the call that reserved it (no call here may still transmit it — the
            // others handling it only replay it too — and only this worker transmits; or past
            // the connector's budget): settle it now, don't wait.
            let db = state.db.get().await.context(CONTEXT)?;
            journal::settle_stale(&db, Some((r.connection_id, r.request_id)), Duration::ZERO)
                .await
                .context(CONTEXT)?;
            entry = journal::get(&db, r.connection_id, r.request_id)
                .await
                .context(CONTEXT)?
                .ok_or_else(|| Error::internal(CONTEXT, anyhow::anyhow!("journal row vanished")))?;
            continue;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::new(
                ErrorCode::DeadlineExceeded,
                "an earlier call with this request_id is still sending; ask get_send_status",
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
        let db = state.db.get().await.context(CONTEXT)?;
        entry = journal::get(&db, r.connection_id, r.request_id)
            .await
            .context(CONTEXT)?
            .ok_or_else(|| Error::internal(CONTEXT, anyhow::anyhow!("journal row vanished")))?;
    }
    Ok(entry.result(true))
}
