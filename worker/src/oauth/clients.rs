//! OAuth clients: registration by Dynamic Client Registration (RFC 7591; public clients only,
//! proven by PKCE) or by a Client ID Metadata Document (the client id is the document's URL;
//! the gateway fetched it), and the lookup of a registered client. A registration the owner never
//! approves lapses after [`UNAPPROVED_CLIENT_SECS`]: anyone may register, so unapproved ones
//! must not pile up. Lapsed ones are removed at the next registration.

use chrono::Utc;
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::types::Json;
use wazap_shared::oauth::{ClientMetadata, OAuthError, UNAPPROVED_CLIENT_SECS};
use wazap_shared::wire::oauth::{OAuthAnswer, RegisteredClient};

use crate::error::{Context as _, Error};
use crate::grants::random_hex;

/// A registered client, as the authorization endpoint and the consent page need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its id.
    pub id: String,
    /// `dcr` or `cimd`.
    pub registration: String,
    /// What it registered (checked when it was).
    pub metadata: ClientMetadata,
}

/// Register a public client: its metadata checked again here (the gateway pre-checked it),
/// kept with a new random id, lapsing unless approved.
pub async fn register(
    pool: &Pool,
    metadata: ClientMetadata,
) -> Result<OAuthAnswer<RegisteredClient>, Error> {
    let metadata = match metadata.checked() {
        Ok(m) => m,
        Err(e) => return Ok(e.into()),
    };
    let id = format!("wzcl_{}", random_hex(16).context("register: client id")?);
    let client = pool.get().await.context("register: database")?;
    client
        .execute(
            "delete from oauth_clients c where c.expires_at < now()
                and not exists (select 1 from connections k where k.oauth_client_id = c.client_id)",
            &[],
        )
        .await
        .context("register: lapse")?;
    client
        .execute(
            "insert into oauth_clients (client_id, registration, metadata, expires_at)
             values ($1, 'dcr', $2, now() + make_interval(secs => $3))",
            &[&id, &Json(&metadata), &(UNAPPROVED_CLIENT_SECS as f64)],
        )
        .await
        .context("register: insert")?;
    tracing::info!(oauth.client = %id, "oauth client registered");
    Ok(OAuthAnswer::Done(RegisteredClient {
        client_id: id,
        client_id_issued_at: Utc::now().timestamp(),
        metadata,
    }))
}

/// Keep the metadata document the gateway fetched for the client whose id is its URL
/// (`cimd`), checked again here: refreshed on every authorization request, lapsing like a
/// registration until the owner approves it. A URL that is a `dcr` client's id is not taken.
pub async fn remember_document(
    db: &impl GenericClient,
    client_id: &str,
    metadata: ClientMetadata,
) -> Result<Result<(), OAuthError>, Error> {
    let metadata = match metadata.checked() {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    db.execute(
        "insert into oauth_clients (client_id, registration, metadata, expires_at)
         values ($1, 'cimd', $2, now() + make_interval(secs => $3))
         on conflict (client_id) do update set metadata = excluded.metadata,
             expires_at = case when oauth_clients.expires_at is null then null
                               else excluded.expires_at end
         where oauth_clients.registration = 'cimd'",
        &[
            &client_id,
            &Json(&metadata),
            &(UNAPPROVED_CLIENT_SECS as f64),
        ],
    )
    .await
    .context("oauth client: document")?;
    Ok(Ok(()))
}

/// The client `id`, unless unknown or lapsed.
pub async fn find(db: &impl GenericClient, id: &str) -> Result<Option<Client>, Error> {
    let row = db
        .query_opt(
            "select client_id, registration, metadata from oauth_clients
              where client_id = $1 and (expires_at is null or expires_at > now())",
            &[&id],
        )
        .await
        .context("oauth client: select")?;
    row.map(|row| -> Result<Client, Error> {
        let Json(metadata): Json<ClientMetadata> =
            row.try_get("metadata").context("oauth client: decode")?;
        Ok(Client {
            id: row.get("client_id"),
            registration: row.get("registration"),
            metadata,
        })
    })
    .transpose()
}

/// Keep client `id` for good: the owner approved it.
pub async fn keep(db: &impl GenericClient, id: &str) -> Result<(), Error> {
    db.execute(
        "update oauth_clients set expires_at = null where client_id = $1",
        &[&id],
    )
    .await
    .context("oauth client: keep")?;
    Ok(())
}
