//! The send operations shared by the MCP tools and `POST /api/send/*` (DESIGN §5): argument
//! checks (opaque `chat_id`, `request_id`, text length), media validation, the worker's
//! `send_check` (no byte is stored for a send the worker would refuse), the hand-over of
//! media bytes to the object store (within the credential's share; deleted again when the
//! send fails with a known outcome: `objects`), and the RPC to the worker within the send deadline (which
//! travels with it, so the worker does not begin a send after it). A call cut off once it left
//! — its deadline passed, the worker or NATS went away — answers `send_outcome_unknown`
//! (`wazap_shared::bus::request_error`). The worker decides permission, session state and the
//! journal; the gateway only pre-checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use wazap_shared::bus::Rpc;

use wazap_shared::checks;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{
    GetSendStatus, GetSendStatusRequest, SendCheck, SendCheckRequest, SendMedia, SendMediaRequest,
    SendMediaRpc, SendMessage, SendMessageRequest, SendResult, SendVoiceNote, SendVoiceNoteRequest,
    SendVoiceRpc,
};
use wazap_shared::{ErrorCode, RpcError};

use crate::bus::Bus;
use crate::media::{self, Base64};
use crate::objects::{MediaStore, Stored};

/// Least time left for the worker once the media is stored.
const MIN_WORKER_TIME: Duration = Duration::from_secs(1);

/// Sends on behalf of a verified grant; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Sender {
    bus: Bus,
    media: Arc<MediaStore>,
    /// The send deadline (DESIGN §5: 60 s), media hand-over included.
    deadline: Duration,
}

impl Sender {
    /// A sender over `bus`, storing media in `media`, within `deadline` per send.
    pub(crate) fn new(bus: Bus, media: Arc<MediaStore>, deadline: Duration) -> Self {
        Self {
            bus,
            media,
            deadline,
        }
    }

    /// `send_message`.
    pub(crate) async fn message(
        &self,
        grant: &VerifiedGrant,
        req: &SendMessageRequest,
    ) -> Result<SendResult, RpcError> {
        check_target(&req.chat_id, &req.request_id)?;
        checks::send_text(&req.text)?;
        self.bus
            .call::<SendMessage>(Some(grant), req, Some(self.deadline))
            .await
    }

    /// `send_media`: validate, store the bytes, then ask the worker. `data` is where the
    /// request's base64 is ([`media::validate_media`]).
    pub(crate) async fn media(
        &self,
        grant: &VerifiedGrant,
        req: &SendMediaRequest,
        data: Base64<'_>,
    ) -> Result<SendResult, RpcError> {
        let started = Instant::now();
        check_target(&req.chat_id, &req.request_id)?;
        let valid = media::validate_media(req, data)?;
        self.may_send(grant, &req.chat_id).await?;
        let stored = self
            .media
            .put(&grant.connection_id, Bytes::from(valid.bytes))
            .await?;
        let rpc = SendMediaRpc {
            chat_id: req.chat_id.clone(),
            request_id: req.request_id.clone(),
            kind: req.kind,
            media: stored.media.clone(),
            mime_type: valid.mime_type,
            filename: req.filename.clone(),
            caption: valid.caption,
            seconds: req.seconds,
        };
        self.call_then_finish::<SendMedia>(grant, &rpc, started, stored)
            .await
    }

    /// `send_voice_note`: validate, store the bytes, then ask the worker (`data` as for
    /// [`Self::media`]).
    pub(crate) async fn voice(
        &self,
        grant: &VerifiedGrant,
        req: &SendVoiceNoteRequest,
        data: Base64<'_>,
    ) -> Result<SendResult, RpcError> {
        let started = Instant::now();
        check_target(&req.chat_id, &req.request_id)?;
        let bytes = media::validate_voice(req, data)?;
        self.may_send(grant, &req.chat_id).await?;
        let stored = self
            .media
            .put(&grant.connection_id, Bytes::from(bytes))
            .await?;
        let rpc = SendVoiceRpc {
            chat_id: req.chat_id.clone(),
            request_id: req.request_id.clone(),
            media: stored.media.clone(),
            seconds: req.seconds,
        };
        self.call_then_finish::<SendVoiceNote>(grant, &rpc, started, stored)
            .await
    }

    /// Ask the worker to send stored media, within what is left of the deadline, then hand the
    /// media back to the store: an error with a known outcome (the worker refused, or was never
    /// asked) has its object deleted before the answer.
    async fn call_then_finish<R: Rpc<Response = SendResult>>(
        &self,
        grant: &VerifiedGrant,
        rpc: &R::Request,
        started: Instant,
        stored: Stored,
    ) -> Result<SendResult, RpcError> {
        let result = match remaining(self.deadline, started) {
            Ok(left) => self.bus.call::<R>(Some(grant), rpc, Some(left)).await,
            Err(e) => Err(e),
        };
        self.media.finish(stored, result.as_ref().err()).await;
        result
    }

    /// Ask the worker whether `grant` may send to `chat_id` before any byte is stored: a
    /// credential that may not (read-only, revoked, another chat) leaves nothing in the bucket.
    async fn may_send(&self, grant: &VerifiedGrant, chat_id: &str) -> Result<(), RpcError> {
        let check = SendCheckRequest {
            chat_id: chat_id.to_owned(),
        };
        self.bus
            .call::<SendCheck>(Some(grant), &check, None)
            .await
            .map(|_| ())
    }

    /// `get_send_status`.
    pub(crate) async fn status(
        &self,
        grant: &VerifiedGrant,
        req: &GetSendStatusRequest,
    ) -> Result<SendResult, RpcError> {
        checks::request_id(&req.request_id)?;
        self.bus.call::<GetSendStatus>(Some(grant), req, None).await
    }
}

/// The shared checkers (the worker runs them again): an opaque `chat_id`, then a
/// `request_id` of its shape.
fn check_target(chat_id: &str, request_id: &str) -> Result<(), RpcError> {
    checks::send_chat_id(chat_id)?;
    checks::request_id(request_id)
}

/// What is left of `deadline` after the media hand-over. When too little is, the worker was
/// never asked: nothing was sent, which `deadline_exceeded` says (the outcome is known).
fn remaining(deadline: Duration, started: Instant) -> Result<Duration, RpcError> {
    deadline
        .checked_sub(started.elapsed())
        .filter(|d| *d >= MIN_WORKER_TIME)
        .ok_or_else(|| {
            RpcError::new(
                ErrorCode::DeadlineExceeded,
                "the send deadline passed while storing the media, so nothing was sent; retry \
                 with the same request_id",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_must_be_opaque_ids() {
        for chat in [
            "+972501234567",
            "972501234567",
            "972501234567@s.whatsapp.net",
            "120363025246125486@g.us",
            "https://wa.me/972501234567",
            "/etc/passwd",
            "c_../x",
            "",
        ] {
            let e = check_target(chat, "r-1").unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{chat}");
            assert!(e.message.starts_with("chat_id:"));
            assert!(!e.message.contains(chat) || chat.is_empty());
        }
        for rid in ["", "has space", "ü", &"x".repeat(129)] {
            let e = check_target("c_abc", rid).unwrap_err();
            assert!(e.message.starts_with("request_id:"), "{rid}");
        }
        assert!(check_target("c_abc123", "reply-1:a.b_c").is_ok());
    }
}
