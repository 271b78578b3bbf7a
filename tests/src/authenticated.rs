//! A stack on a NATS server that authenticates (`tests/e2e/ops/nats_auth`): the worker and the
//! harness connect with users of their own.

use wazap_worker::config::ConnectorKind;

use crate::Stack;

/// NATS users on a server that authenticates, for [`Stack::start_authenticated`]: each a user
/// name and password.
#[derive(Debug, Clone)]
pub struct NatsUsers {
    /// The server.
    pub url: String,
    /// The subject prefix its permissions are written for.
    pub prefix: String,
    /// The worker's user.
    pub worker: (String, String),
    /// The harness's own client ([`Stack::nats`]: sim ops, pings, token minting).
    pub harness: (String, String),
}

impl Stack {
    /// [`Stack::start`] on a NATS server that authenticates (`deploy/nats.conf`'s users): the
    /// worker connects as `users.worker`, [`Stack::nats`] as `users.harness`, under
    /// `users.prefix` (the server's permissions name it). Gateways get their user from the
    /// test ([`Stack::gateway`]'s variables).
    pub async fn start_authenticated(
        users: &NatsUsers,
        connector: ConnectorKind,
    ) -> anyhow::Result<Self> {
        crate::init_logs();
        for (_, password) in [&users.worker, &users.harness] {
            crate::leak::record_secret(crate::leak::kind::NATS_PASSWORD, password);
        }
        let harness = wazap_shared::config::NatsConfig::plain(&users.url)
            .with_user(&users.harness.0, &users.harness.1);
        let nats = wazap_shared::bus::connect(&harness, "wazap-tests").await?;
        Self::assemble(
            crate::TestDb::create().await?,
            connector,
            Default::default(),
            &users.url,
            users.prefix.clone(),
            nats,
            Some(users.worker.clone()),
        )
        .await
    }
}
