//! `send_message`: a text to one chat, through the send gates and the journal.

use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::SendMessageRequest;

use crate::error::Error;
use crate::send::{NewSend, Payload};
use crate::state::AppState;

/// Serve one request: the body checked here, the grant and everything else in [`send::serve`].
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let req = super::decode::<SendMessageRequest>(payload).and_then(new_send);
    super::send_op(state, grant, req).await
}

/// The send a valid request asks for: a text of 1–65,536 characters, not only white space.
fn new_send(req: SendMessageRequest) -> Result<NewSend, Error> {
    wazap_shared::checks::send_text(&req.text)?;
    NewSend::new(
        "send_message",
        req.chat_id,
        req.request_id,
        Payload::Text(req.text),
    )
}
