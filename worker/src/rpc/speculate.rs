//! Read-only ops run their handler *while* Postgres re-checks the grant, with the viewer the
//! connection had at its last accepted request: one round trip off every read (DESIGN §11).
//! The fresh check still decides everything: refused ⇒ `unauthenticated` and the work is thrown
//! away; a different viewer (scope, permission or policy changed) ⇒ the handler runs again with
//! it. Only ops without effects a caller could see may speculate; sends authorise first.

use wazap_shared::bus::Rpc;
use wazap_shared::grant::VerifiedGrant;

use super::{decode, finish, granted};
use crate::error::Error;
use crate::grants;
use crate::state::AppState;
use crate::viewer::Viewer;

/// Serve a read-only op that needs a current grant (see the module docs).
pub(super) async fn granted_read<R: Rpc>(
    state: &AppState,
    grant: Option<&VerifiedGrant>,
    payload: &[u8],
    handler: impl AsyncFn(&AppState, &Viewer, R::Request) -> Result<R::Response, Error>,
) -> (bytes::Bytes, &'static str) {
    let remembered = grant.and_then(|g| state.grants.get(&g.connection_id));
    let Some(remembered) = remembered else {
        return granted::<R>(state, grant, payload, handler).await;
    };
    let guess = async {
        match decode::<R::Request>(payload) {
            Ok(req) => handler(state, &remembered.viewer, req).await,
            Err(e) => Err(e),
        }
    };
    let (fresh, guessed) = tokio::join!(grants::authorize(&state.db, grant), guess);
    let result = match fresh {
        Err(e) => {
            state.grants.forget(&remembered.viewer.connection_id);
            Err(e)
        }
        Ok(accepted) if accepted.viewer == remembered.viewer => guessed,
        Ok(accepted) => {
            tracing::debug!(connection.id = %accepted.viewer.connection_id, "grant changed; answering again");
            state.grants.put(&accepted);
            match decode::<R::Request>(payload) {
                Ok(req) => handler(state, &accepted.viewer, req).await,
                Err(e) => Err(e),
            }
        }
    };
    finish(result)
}
