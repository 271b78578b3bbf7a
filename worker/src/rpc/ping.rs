//! `ping`: a cheap readiness probe for the gateways' `/readyz`. Needs no grant and says nothing
//! about any chat: the archive's identity, the default account's session state, and whether
//! Postgres answers — or `worker_unavailable` naming the stopped task while one of the worker's
//! supervised tasks is down ([`crate::supervise`]), or while an account in use is served by no
//! worker ([`crate::fleet`]).

use std::time::Duration;

use wazap_shared::ErrorCode;
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_shared::wire::system::{PingRequest, PingResponse};

use crate::error::Error;
use crate::state::AppState;

/// How long the database probe may take; `ping`'s own deadline is 2 s.
const DB_PROBE: Duration = Duration::from_secs(1);

/// Answer `ping`: not ready while a supervised task is down.
pub async fn handle(state: &AppState, _req: PingRequest) -> Result<PingResponse, Error> {
    if let Some(why) = state.supervisor.not_ready() {
        return Err(Error::new(ErrorCode::WorkerUnavailable, why));
    }
    let probe = async {
        let client = state.db.get().await.ok()?;
        crate::db::account_status::first_unserved(&client)
            .await
            .ok()
    };
    let (database, unserved) = match tokio::time::timeout(DB_PROBE, probe).await {
        Ok(Some(unserved)) => (true, unserved),
        _ => (false, None),
    };
    // Ready means every account in use is served by some worker: a request about it reaches
    // the worker holding its lease. Between two holders it is not (at most a takeover).
    if unserved.is_some() {
        return Err(Error::new(
            ErrorCode::WorkerUnavailable,
            "an account is not served by any worker yet (starting, or being taken over)",
        ));
    }
    Ok(PingResponse {
        archive_id: state.meta.archive_id.to_string(),
        sync: state.sync_state(DEFAULT_ACCOUNT).await,
        database,
    })
}
