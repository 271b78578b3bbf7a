//! `send_voice_note`: Ogg/Opus bytes (validated by the gateway, in the object store) sent with
//! WhatsApp's PTT flag.

use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{SendResult, SendVoiceRpc};

use crate::error::Error;
use crate::send::{self, NewSend, Payload};
use crate::state::AppState;
use crate::viewer::Viewer;

/// Longest voice note, in seconds.
pub const MAX_VOICE_SECONDS: u32 = 3600;

/// Serve one request: the body checked here, the grant and everything else in [`send::serve`].
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let req = super::decode::<SendVoiceRpc>(payload).and_then(new_send);
    super::finish(send::serve(&state.sender, grant, req).await)
}

/// Serve one request for a caller already authorised as `viewer`.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SendVoiceRpc,
) -> Result<SendResult, Error> {
    send::run(&state.sender, viewer, new_send(req)?).await
}

/// The send a valid request asks for: a voice note of 1–3600 s.
fn new_send(req: SendVoiceRpc) -> Result<NewSend, Error> {
    send::gates::check_ids(&req.chat_id, &req.request_id)?;
    if !(1..=MAX_VOICE_SECONDS).contains(&req.seconds) {
        return Err(Error::invalid("seconds", "expected 1–3600"));
    }
    Ok(NewSend {
        tool: "send_voice_note",
        chat_id: req.chat_id,
        request_id: req.request_id,
        payload: Payload::Voice {
            media: req.media,
            seconds: req.seconds,
        },
    })
}
