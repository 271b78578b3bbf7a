//! `send_check`: whether a media send may go ahead, asked by a gateway before it stores the
//! bytes ([`send::check`]); nothing is journaled.

use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{SendCheckRequest, SendCheckResponse};

use crate::send;
use crate::state::AppState;

/// Serve one request.
pub async fn serve(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
) -> (bytes::Bytes, &'static str) {
    let result = match super::decode::<SendCheckRequest>(payload) {
        Ok(req) => match super::sender_for(state, grant, Some(&req.chat_id)).await {
            Ok(sender) => send::check(&sender, grant, &req.chat_id).await,
            Err(e) => Err(e),
        },
        // A body that does not decode is told only to a caller whose grant is good.
        Err(e) => match crate::grants::authorize(&state.db, grant).await {
            Ok(_) => Err(e),
            Err(refused) => Err(refused),
        },
    };
    super::finish(result.map(|()| SendCheckResponse {}))
}
