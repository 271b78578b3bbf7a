//! `send_message`: a text to one chat, through the send gates and the journal.

use wazap_shared::RpcError;
use wazap_shared::wire::send::{MAX_TEXT_CHARS, SendMessageRequest, SendResult};

use crate::send::{self, NewSend, Payload};
use crate::state::AppState;
use crate::viewer::Viewer;

/// Send a text (1–65,536 characters).
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SendMessageRequest,
) -> Result<SendResult, RpcError> {
    send::gates::check_ids(&req.chat_id, &req.request_id)?;
    let chars = req.text.chars().count();
    if chars == 0 || chars > MAX_TEXT_CHARS || req.text.trim().is_empty() {
        return Err(RpcError::invalid("text", "expected 1–65,536 characters"));
    }
    send::run(
        state,
        viewer,
        NewSend {
            tool: "send_message",
            chat_id: req.chat_id,
            request_id: req.request_id,
            payload: Payload::Text(req.text),
        },
    )
    .await
}
