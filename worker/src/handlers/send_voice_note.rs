//! `send_voice_note`: Ogg/Opus bytes (validated by the gateway, in the object store) sent with
//! WhatsApp's PTT flag.

use wazap_shared::RpcError;
use wazap_shared::wire::send::{SendResult, SendVoiceRpc};

use crate::send::{self, NewSend, Payload};
use crate::state::AppState;
use crate::viewer::Viewer;

/// Longest voice note, in seconds.
pub const MAX_VOICE_SECONDS: u32 = 3600;

/// Send a voice note (1–3600 s).
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SendVoiceRpc,
) -> Result<SendResult, RpcError> {
    send::gates::check_ids(&req.chat_id, &req.request_id)?;
    if !(1..=MAX_VOICE_SECONDS).contains(&req.seconds) {
        return Err(RpcError::invalid("seconds", "expected 1–3600"));
    }
    send::run(
        state,
        viewer,
        NewSend {
            tool: "send_voice_note",
            chat_id: req.chat_id,
            request_id: req.request_id,
            payload: Payload::Voice {
                media: req.media,
                seconds: req.seconds,
            },
        },
    )
    .await
}
