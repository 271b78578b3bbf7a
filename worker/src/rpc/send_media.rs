//! `send_media`: a photo, video, audio file or document whose bytes the gateway validated and
//! put into the object store; the worker re-checks the rules that need no bytes.

use wazap_shared::checks;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::SendMediaRpc;

use crate::error::Error;
use crate::send::{NewSend, Payload};
use crate::state::AppState;

/// Serve one request: the body checked here, the grant and everything else in [`send::serve`].
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let req = super::decode::<SendMediaRpc>(payload).and_then(new_send);
    super::send_op(state, grant, req).await
}

/// The send a valid request asks for (the rules that need no bytes).
fn new_send(req: SendMediaRpc) -> Result<NewSend, Error> {
    let mime_type = checks::mime_type(&req.mime_type)?;
    let caption = req.caption.as_deref();
    checks::caption_length(caption)?;
    checks::caption_for(req.kind, caption)?;
    checks::filename(req.kind, req.filename.as_deref())?;
    NewSend::new(
        "send_media",
        req.chat_id,
        req.request_id,
        Payload::Media {
            kind: req.kind,
            mime_type,
            media: req.media,
            filename: req.filename,
            caption: req.caption,
            seconds: req.seconds,
        },
    )
}
