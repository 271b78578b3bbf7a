//! `send_message`: a text to one chat, through the send gates and the journal.

use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{MAX_TEXT_CHARS, SendMessageRequest, SendResult};

use crate::error::Error;
use crate::send::{self, NewSend, Payload};
use crate::state::AppState;
use crate::viewer::Viewer;

/// Serve one request: the body checked here, the grant and everything else in [`send::serve`].
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let req = super::decode::<SendMessageRequest>(payload).and_then(new_send);
    super::finish(send::serve(&state.sender, grant, req).await)
}

/// Serve one request for a caller already authorised as `viewer`.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: SendMessageRequest,
) -> Result<SendResult, Error> {
    send::run(&state.sender, viewer, new_send(req)?).await
}

/// The send a valid request asks for: a text of 1–65,536 characters, not only white space.
fn new_send(req: SendMessageRequest) -> Result<NewSend, Error> {
    send::gates::check_ids(&req.chat_id, &req.request_id)?;
    let chars = req.text.chars().count();
    if chars == 0 || chars > MAX_TEXT_CHARS || req.text.trim().is_empty() {
        return Err(Error::invalid("text", "expected 1–65,536 characters"));
    }
    Ok(NewSend {
        tool: "send_message",
        chat_id: req.chat_id,
        request_id: req.request_id,
        payload: Payload::Text(req.text),
    })
}
