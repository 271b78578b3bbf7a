//! `send_voice_note`: Ogg/Opus bytes (validated by the gateway, in the object store) sent with
//! WhatsApp's PTT flag.

use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::SendVoiceRpc;

use crate::error::Error;
use crate::send::{NewSend, Payload};
use crate::state::AppState;

/// Longest voice note, in seconds.
pub const MAX_VOICE_SECONDS: u32 = 3600;

/// Serve one request: the body checked here, the grant and everything else in [`send::serve`].
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let req = super::decode::<SendVoiceRpc>(payload).and_then(new_send);
    super::send_op(state, grant, req).await
}

/// The send a valid request asks for: a voice note of 1–3600 s.
fn new_send(req: SendVoiceRpc) -> Result<NewSend, Error> {
    if !(1..=MAX_VOICE_SECONDS).contains(&req.seconds) {
        return Err(Error::invalid("seconds", "expected 1–3600"));
    }
    NewSend::new(
        "send_voice_note",
        req.chat_id,
        req.request_id,
        Payload::Voice {
            media: req.media,
            seconds: req.seconds,
        },
    )
}
