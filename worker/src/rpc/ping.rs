//! `ping`: a cheap readiness probe for the gateways' `/readyz`. Needs no grant and says nothing
//! about any chat: the archive's identity, the default account's session state, and whether
//! Postgres answers — or `worker_unavailable` naming the stopped task while one of the worker's
//! supervised tasks is down ([`crate::supervise`]).

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
        client.simple_query("select 1").await.ok().map(|_| ())
    };
    let database = matches!(tokio::time::timeout(DB_PROBE, probe).await, Ok(Some(())));
    Ok(PingResponse {
        archive_id: state.archive.meta().archive_id.to_string(),
        sync: state.connector.state(DEFAULT_ACCOUNT),
        database,
    })
}
