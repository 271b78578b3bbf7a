//! The client-facing OAuth ops (`oauth_*`, `wire::oauth`): no session and no grant; a public
//! client proves itself with PKCE and the tokens it holds ([`crate::oauth`] decides). Their
//! refusals travel as [`wazap_shared::wire::oauth::OAuthAnswer::Refused`], in OAuth's terms;
//! only a failure of the worker itself is an RPC error.

use wazap_shared::subjects::op;

use super::{decode, finish};
use crate::oauth::{clients, consent, tokens};
use crate::state::AppState;

/// Serve OAuth op `op`; `None` when `op` is not one.
pub(super) async fn dispatch(
    state: &AppState,
    op: &str,
    payload: &[u8],
) -> Option<(bytes::Bytes, &'static str)> {
    let db = &state.db;
    Some(match op {
        op::OAUTH_REGISTER => match decode(payload) {
            Ok(metadata) => finish(clients::register(db, metadata).await),
            Err(e) => finish::<()>(Err(e)),
        },
        op::OAUTH_AUTHORIZE => match decode(payload) {
            Ok(req) => finish(
                consent::authorize(db, req)
                    .await
                    .map(wazap_shared::wire::oauth::OAuthAnswer::Done),
            ),
            Err(e) => finish::<()>(Err(e)),
        },
        op::OAUTH_TOKEN => match decode(payload) {
            Ok(req) => finish(tokens::token(db, req).await),
            Err(e) => finish::<()>(Err(e)),
        },
        op::OAUTH_REVOKE => match decode(payload) {
            Ok(req) => finish(tokens::revoke(db, &state.tokens, req).await),
            Err(e) => finish::<()>(Err(e)),
        },
        _ => return None,
    })
}
