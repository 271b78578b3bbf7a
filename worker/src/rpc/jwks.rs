//! `jwks`: the public keys gateways verify bearer tokens with. Needs no grant: public keys are
//! public, and gateways fetch them before they can verify anything.

use wazap_shared::wire::system::{JwksRequest, JwksResponse};

use crate::error::Error;
use crate::grants;
use crate::state::AppState;

/// Answer `jwks`.
pub async fn handle(state: &AppState, _req: JwksRequest) -> Result<JwksResponse, Error> {
    grants::jwks(&state.db).await
}
