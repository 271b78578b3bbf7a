//! The RPC edge: one module per op on `<prefix>.rpc.<account>.<op>`, and the dispatcher that
//! serves them.
//!
//! The dispatcher takes every request from the `wazap-worker` queue group, runs each in its own
//! task, decodes the op from the subject and the body into the op's request type, authorises it
//! (every op but `ping` and `jwks` needs a current grant: the token the request presents,
//! verified here, for a connection Postgres still accepts), calls the handler and replies with a
//! [`Reply`] envelope. Each request runs inside its caller's deadline ([`Deadline::scope`]), read
//! from its headers, which the send path consults before it transmits. On shutdown it stops
//! taking requests and lets in-flight ones finish.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::{FutureExt as _, StreamExt as _};
use serde::de::DeserializeOwned;
use tokio::time::timeout_at;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;
use wazap_shared::bus::{Deadline, Reply, Rpc, encode_reply};
use wazap_shared::grant::{Presented, VerifiedGrant};
use wazap_shared::subjects::op;
use wazap_shared::wire::read::{ListChats, ReadMessages, SearchContacts, SearchGroups};
use wazap_shared::wire::send::GetSendStatus;
use wazap_shared::wire::system::{Jwks, Ping};
use wazap_shared::{ErrorCode, RpcError};

use crate::error::Error;
use crate::grants;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::viewer::Viewer;
use speculate::granted_read;

mod args;
pub mod get_attachment;
pub mod get_send_status;
pub mod jwks;
pub mod list_chats;
mod oauth_ops;
mod owner_ops;
pub mod ping;
pub mod read_messages;
mod scope;
pub mod search_attachments;
pub mod search_contacts;
pub mod search_groups;
pub mod search_messages;
pub mod send_check;
pub mod send_media;
pub mod send_message;
pub mod send_voice_note;
mod speculate;
pub mod wait_for_messages;

/// The queue group every worker joins, so each request reaches exactly one worker.
pub const QUEUE_GROUP: &str = "wazap-worker";
/// The last part of the drain, kept for handing the last replies to NATS.
const FLUSH_RESERVE: Duration = Duration::from_secs(1);

/// Serve the requests on `subject` (an account's `<prefix>.rpc.<account>.>`, or
/// `<prefix>.rpc._any.>`) until shutdown is asked for, then stop taking new ones, wait for those
/// in flight and flush their replies — every step only until the shutdown's one deadline
/// ([`crate::shutdown::DRAIN_LIMIT`]), so a NATS server that no longer answers cannot hold the
/// worker. Fails if the subscription cannot be made or ends early.
pub async fn serve_subject(
    state: AppState,
    subject: String,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let sub = subscribe(&state, &subject).await?;
    serve_on(state, sub, subject, shutdown).await
}

/// Subscribe to `subject` in the workers' queue group, confirmed by the server when this
/// returns (so a request sent after it reaches this worker).
pub async fn subscribe(state: &AppState, subject: &str) -> anyhow::Result<async_nats::Subscriber> {
    let sub = state
        .nats
        .queue_subscribe(subject.to_owned(), QUEUE_GROUP.into())
        .await?;
    state.nats.flush().await?;
    Ok(sub)
}

/// [`serve_subject`] on a subscription made by [`subscribe`].
pub async fn serve_on(
    state: AppState,
    mut sub: async_nats::Subscriber,
    subject: String,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    tracing::info!(subject = %subject, "serving requests");
    let tracker = TaskTracker::new();
    let ended_early = loop {
        tokio::select! {
            biased;
            () = shutdown.requested() => break false,
            msg = sub.next() => match msg {
                Some(msg) => {
                    tracker.spawn(handle(state.clone(), msg));
                }
                None => break true,
            },
        }
    };
    // One deadline for every step below; requests get all of it but the flush's reserve.
    let deadline = shutdown.deadline();
    let requests_by = deadline.checked_sub(FLUSH_RESERVE).unwrap_or(deadline);
    // No new deliveries; requests already handed to this worker still get their answers. Once
    // the server has taken the unsubscribe, a new request is refused at once ("no responders",
    // `worker_unavailable`) rather than routed to a worker that will not answer it.
    match timeout_at(requests_by, sub.drain()).await {
        Err(_) => tracing::warn!("unsubscribe not sent by the drain limit; abandoned"),
        Ok(Err(e)) => tracing::warn!(error = %e, "unsubscribe failed"),
        Ok(Ok(())) => {
            let caught_up = wazap_shared::bus::server_caught_up(&state.nats);
            if !timeout_at(requests_by, caught_up).await.unwrap_or(false) {
                tracing::warn!("NATS did not confirm the unsubscribe");
            }
        }
    }
    let drain = async {
        while let Some(msg) = sub.next().await {
            tracker.spawn(handle(state.clone(), msg));
        }
        tracker.close();
        tracker.wait().await;
    };
    if timeout_at(requests_by, drain).await.is_err() {
        tracing::warn!(
            in_flight = tracker.len(),
            "requests still running (or deliveries NATS never ended) at the drain limit; \
             abandoned"
        );
    }
    // Replies published so far leave the client's buffer before the worker goes — unless the
    // server no longer answers: then they are abandoned at the deadline.
    match timeout_at(deadline, state.nats.flush()).await {
        Err(_) => {
            tracing::warn!("NATS did not confirm the last replies by the drain limit; abandoned")
        }
        Ok(Err(e)) => tracing::debug!(error = %e, "NATS flush at shutdown failed"),
        Ok(Ok(())) => {}
    }
    anyhow::ensure!(!ended_early, "the NATS subscription ended");
    tracing::info!(subject = %subject, "stopped serving requests");
    Ok(())
}

/// Answer one request and log it once.
async fn handle(state: AppState, msg: async_nats::Message) {
    let Some(reply_to) = msg.reply.clone() else {
        tracing::debug!("ignored a message without a reply subject");
        return;
    };
    let started = Instant::now();
    let op = state
        .subjects
        .rpc_route(&msg.subject)
        .map(|(_, op)| op)
        .unwrap_or_default()
        .to_owned();
    // Who the caller is comes from the token alone, verified here: no header is believed.
    let grant = match Presented::from_headers(msg.headers.as_ref()) {
        Some(presented) => state.tokens.verify(presented).await,
        None => None,
    };
    let connection_id = grant.as_ref().map(|g| g.connection_id.clone());
    let span = tracing::info_span!("rpc", op = %op, connection.id = connection_id.as_deref());
    // Join the trace of the gateway span that sent this request (W3C traceparent in headers).
    wazap_shared::telemetry::propagation::set_parent(&span, msg.headers.as_ref());
    // The caller's deadline, for the send path: no transmission begins after it.
    let deadline = Deadline::from_headers(msg.headers.as_ref());
    let work = dispatch(&state, &op, grant.as_ref(), &msg.payload);
    let work = AssertUnwindSafe(Deadline::scope(deadline, work))
        .catch_unwind()
        .instrument(span)
        .await;
    let (body, outcome) = work.unwrap_or_else(|_| {
        let e = RpcError::from(Error::internal(
            "rpc: handler panicked",
            anyhow::anyhow!("op {op}"),
        ));
        (
            encode_reply::<()>(&Reply::Error(e)),
            ErrorCode::Internal.as_str(),
        )
    });
    if let Err(e) = state.nats.publish(reply_to, body).await {
        tracing::warn!(op = %op, error = %e, "reply could not be sent");
    }
    crate::metrics::rpc(&op, outcome, started.elapsed());
    tracing::debug!(
        op = %op,
        connection.id = connection_id.as_deref(),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        outcome,
        "rpc"
    );
}

/// Route `op` to its handler; the reply body and the outcome (`ok` or an error code). Public
/// so the worker's tests enter where a gateway's request does.
pub async fn dispatch(
    state: &AppState,
    op: &str,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    match op {
        op::PING => open::<Ping>(state, payload, ping::handle).await,
        op::JWKS => open::<Jwks>(state, payload, jwks::handle).await,
        op::LIST_CHATS => {
            granted_read::<ListChats>(state, grant, payload, list_chats::handle).await
        }
        op::SEARCH_CONTACTS => {
            granted_read::<SearchContacts>(state, grant, payload, search_contacts::handle).await
        }
        op::SEARCH_GROUPS => {
            granted_read::<SearchGroups>(state, grant, payload, search_groups::handle).await
        }
        op::READ_MESSAGES => {
            granted_read::<ReadMessages>(state, grant, payload, read_messages::handle).await
        }
        op::WAIT_FOR_MESSAGES => {
            use wazap_shared::wire::wait::WaitForMessages;
            granted_read::<WaitForMessages>(state, grant, payload, wait_for_messages::handle).await
        }
        op::SEARCH_MESSAGES => {
            use wazap_shared::wire::search::SearchMessages;
            granted_read::<SearchMessages>(state, grant, payload, search_messages::handle).await
        }
        op::SEARCH_ATTACHMENTS => {
            use wazap_shared::wire::search::SearchAttachments;
            granted_read::<SearchAttachments>(state, grant, payload, search_attachments::handle)
                .await
        }
        op::GET_ATTACHMENT => {
            use wazap_shared::wire::search::GetAttachment;
            granted_read::<GetAttachment>(state, grant, payload, get_attachment::handle).await
        }
        // Sends check the grant on the connection that looks the chat up (`send::serve`).
        op::SEND_MESSAGE => send_message::serve(state, grant, payload).await,
        op::SEND_MEDIA => send_media::serve(state, grant, payload).await,
        op::SEND_VOICE_NOTE => send_voice_note::serve(state, grant, payload).await,
        op::SEND_CHECK => send_check::serve(state, grant, payload).await,
        op::GET_SEND_STATUS => {
            granted_read::<GetSendStatus>(state, grant, payload, get_send_status::handle).await
        }
        owner if owner.starts_with("owner_") => owner_ops::dispatch(state, owner, payload)
            .await
            .unwrap_or_else(|| {
                finish::<()>(Err(Error::new(ErrorCode::NotFound, "unknown operation")))
            }),
        oauth if oauth.starts_with("oauth_") => oauth_ops::dispatch(state, oauth, payload)
            .await
            .unwrap_or_else(|| {
                finish::<()>(Err(Error::new(ErrorCode::NotFound, "unknown operation")))
            }),
        _ => finish::<()>(Err(Error::new(ErrorCode::NotFound, "unknown operation"))),
    }
}

/// Serve an op that needs no grant.
async fn open<R: Rpc>(
    state: &AppState,
    payload: &[u8],
    handler: impl AsyncFn(&AppState, R::Request) -> Result<R::Response, Error>,
) -> (bytes::Bytes, &'static str) {
    let result = match decode::<R::Request>(payload) {
        Ok(req) => handler(state, req).await,
        Err(e) => Err(e),
    };
    finish(result)
}

/// Serve an op that needs a current grant: authorise first (so an unauthorised caller learns
/// nothing from validation), then decode, then call the handler with the [`Viewer`].
async fn granted<R: Rpc>(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
    handler: impl AsyncFn(&AppState, &Viewer, R::Request) -> Result<R::Response, Error>,
) -> (bytes::Bytes, &'static str) {
    let result = match grants::authorize(&state.db, grant).await {
        Ok(accepted) => {
            state.grants.put(&accepted);
            match decode::<R::Request>(payload) {
                Ok(req) => handler(state, &accepted.viewer, req).await,
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    finish(result)
}

/// Encode a result as a reply envelope, with its outcome for the log line.
fn finish<T: serde::Serialize>(result: Result<T, Error>) -> (bytes::Bytes, &'static str) {
    let result = result.map_err(RpcError::from);
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) => e.code.as_str(),
    };
    (encode_reply(&Reply::from(result)), outcome)
}

/// The sender of the account `chat_id` names (the default account's without one), when this
/// worker serves it. When it does not, the refusal: the grant's first (who asks comes before
/// where it asks), then why the account is not served here ([`AppState::serving`]).
async fn sender_for(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    chat_id: Option<&str>,
) -> Result<crate::send::Sender, Error> {
    let account = wazap_shared::ids::read_account(None, &[chat_id]);
    if let Some(served) = state.served.get(account) {
        return Ok(served.sender.clone());
    }
    grants::authorize(&state.db, grant).await?;
    Ok(state.serving(account).await?.sender.clone())
}

/// Run a send op's checked request `req` on the sender of its chat's account; a request that
/// did not pass its checks is answered after the grant's check alone.
async fn send_op(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    req: Result<crate::send::NewSend, Error>,
) -> (bytes::Bytes, &'static str) {
    let req = match req {
        Ok(r) => r,
        Err(e) => {
            let refused = grants::authorize(&state.db, grant).await;
            return finish::<wazap_shared::wire::send::SendResult>(refused.and(Err(e)));
        }
    };
    let result = match sender_for(state, grant, Some(req.chat_id())).await {
        Ok(sender) => crate::send::serve(&sender, grant, Ok(req)).await,
        Err(e) => Err(e),
    };
    finish(result)
}

/// Decode a request body (`wazap_shared::bus::decode_request`, the sim's decoder too).
fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, Error> {
    Ok(wazap_shared::bus::decode_request(payload)?)
}

/// The one place a worker [`Error`] becomes a wire error: a refusal keeps its code and
/// message; an internal failure is logged once ([`Error::log`]) and the caller gets `internal`
/// with the trace id the log line carries.
impl From<Error> for RpcError {
    fn from(e: Error) -> Self {
        match e {
            Error::Refused { code, message } => RpcError::new(code, message),
            internal @ Error::Internal { .. } => RpcError::internal(internal.log()),
        }
    }
}
