//! After the reservation: a full journal or a key that exists is answered from the journal; a
//! new key goes to the connector — unless its caller's deadline has passed or this worker lost
//! its lease — and its outcome is journaled (with the own message WhatsApp acknowledged) before the answer.

use chrono::SubsecRound as _;
use tracing::Instrument as _;
use wazap_shared::ErrorCode;
use wazap_shared::bus::Deadline;
use wazap_shared::wire::send::{SendResult, SendState};

use super::journal::{self, JournalState, Reservation, Reserved};
use super::{CONNECTOR_BUDGET, Plan, Sender, replay};
use crate::connector::outbound::{OutboundContent, OutboundMessage, SendError};
use crate::error::Error;

/// Answer what [`journal::reserve`] found, or transmit the key it reserved. No pooled
/// connection is held here: not while WhatsApp answers, nor while another call finishes.
pub(super) async fn after_reserve(
    state: &Sender,
    plan: &Plan,
    reserved: Reserved,
    content: OutboundContent,
) -> Result<SendResult, Error> {
    match reserved {
        Reserved::Full => Err(Error::new(
            ErrorCode::SendJournalFull,
            "this connection has used all 100,000 request ids; the owner must issue a new connection",
        )),
        Reserved::Existing(e) => replay(state, &plan.reservation(), e).await,
        Reserved::New if Deadline::current().is_some_and(Deadline::passed) => {
            Ok(not_begun(state, plan, "its caller's deadline had passed").await)
        }
        Reserved::New if state.lease.as_ref().is_some_and(|l| !l.is_held()) => {
            Ok(not_begun(state, plan, "this worker no longer holds the lease").await)
        }
        Reserved::New => Ok(transmit(state, plan, content).await),
    }
}

/// Nothing is handed over, `because`:
/// - the caller's deadline ([`Deadline::current`]) passed: nobody waits for the answer, and the
///   caller was told the outcome is unknown, so a transmission begun now is one no answer
///   covers. (A request without a deadline, from a gateway older than the header, is handed
///   over as before.)
/// - this worker lost its lease ([`crate::lease`]): another worker may be serving already.
///
/// The key is journaled `failed` (nothing was transmitted), which a retry of it reads at once;
/// if the fence refuses that write, the new holder's recovery settles the row.
async fn not_begun(state: &Sender, plan: &Plan, because: &'static str) -> SendResult {
    tracing::warn!(
        connection.id = %plan.connection_id,
        message.id = %plan.message_id,
        because,
        "send not handed over"
    );
    let r = plan.reservation();
    let recorded = record(state, &r, (JournalState::Failed, None), None).await;
    crate::metrics::send(recorded.as_str());
    SendResult {
        request_id: plan.request_id.clone(),
        chat_id: plan.target.chat_id.clone(),
        state: match recorded {
            JournalState::Failed => SendState::Failed,
            _ => SendState::OutcomeUnknown,
        },
        message_id: Some(plan.message_id.clone()),
        duplicate: false,
        accepted_at: None,
    }
}

/// Hand the reserved send to the connector and journal what came of it.
async fn transmit(state: &Sender, plan: &Plan, content: OutboundContent) -> SendResult {
    let message = OutboundMessage {
        account_id: plan.target.account_id.clone(),
        recipient: plan.target.recipient.clone(),
        wa_id: plan.wa_id.clone(),
        content,
    };
    // The connector's work is a span of its own in the request's trace.
    let transmit = state
        .connector
        .send(message)
        .instrument(tracing::info_span!("connector.send"));
    let outcome = tokio::time::timeout(CONNECTOR_BUDGET, transmit).await;
    let mut echo = None;
    let mut refusal = None;
    let message_id = &plan.message_id;
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
        Ok(Err(SendError::Refused(code))) => {
            tracing::warn!(message.id = %message_id, wa.error = %code, "send refused by WhatsApp: outcome unknown");
            refusal = Some(code);
            (JournalState::OutcomeUnknown, None)
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
    let r = plan.reservation();
    let recorded = finish(state, &r, (wanted, refusal.as_deref()), accepted_at, echo).await;
    crate::metrics::send(recorded.as_str());
    tracing::info!(
        connection.id = %plan.connection_id,
        message.id = %message_id,
        state = recorded.as_str(),
        "send"
    );
    SendResult {
        request_id: plan.request_id.clone(),
        chat_id: plan.target.chat_id.clone(),
        state: match recorded {
            JournalState::Accepted => SendState::Accepted,
            JournalState::Failed => SendState::Failed,
            _ => SendState::OutcomeUnknown,
        },
        message_id: Some(message_id.clone()),
        duplicate: false,
        accepted_at: accepted_at.filter(|_| recorded == JournalState::Accepted),
    }
}

/// Journal the final state and archive the own message WhatsApp acknowledged. An accepted
/// send with its message commits both in one writer transaction (one flight of statements,
/// and an accepted send is always in the archive); should that fail, each is done on its
/// own, concurrently. The answer waits for both.
async fn finish(
    state: &Sender,
    r: &Reservation<'_>,
    (wanted, refusal): (JournalState, Option<&str>),
    accepted_at: Option<chrono::DateTime<chrono::Utc>>,
    echo: Option<crate::archive::Inbound>,
) -> JournalState {
    let account_id = r.account_id;
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
                    Error::internal("send: accepted with its own message", e).log();
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
            Error::internal("send: own-send echo", e).log();
        }
    };
    let (recorded, ()) = tokio::join!(
        record(state, r, (wanted, refusal), accepted_at),
        archive_echo
    );
    recorded
}

/// Journal the final state; what could not be journaled reads as `outcome_unknown` (the row
/// stays `transmitting`, which start-up recovery also turns into `outcome_unknown`).
async fn record(
    state: &Sender,
    r: &Reservation<'_>,
    (wanted, refusal): (JournalState, Option<&str>),
    accepted_at: Option<chrono::DateTime<chrono::Utc>>,
) -> JournalState {
    let result = async {
        let db = state.db.get().await?;
        journal::finish(
            &db,
            r.connection_id,
            r.request_id,
            (wanted, refusal),
            accepted_at,
        )
        .await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => wanted,
        Err(e) => {
            Error::internal("send: journal outcome", e).log();
            if let Ok(db) = state.db.get().await {
                let _ = journal::finish(
                    &db,
                    r.connection_id,
                    r.request_id,
                    (JournalState::OutcomeUnknown, refusal),
                    None,
                )
                .await;
            }
            JournalState::OutcomeUnknown
        }
    }
}
