//! The per-request check: a gateway-verified grant becomes a [`Viewer`] only when its connection
//! exists, is neither revoked nor expired, the token's revision is current, and a `local`
//! connection is used from loopback. One prepared query per request, on a pooled connection
//! ([`authorize`]) or on one the caller holds ([`authorize_on`]).

use std::sync::LazyLock;

use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::types::Json;
use wazap_shared::ErrorCode;
use wazap_shared::grant::{ConnectionKind, VerifiedGrant};
use wazap_shared::wire::grants::{ReadScope, SendPermission};

use super::connections::send_mode;
use crate::error::{Context as _, Error};
use crate::viewer::Viewer;

/// Whether a connection's credential is usable now, by Postgres' clock (so that every worker
/// agrees).
const ACTIVE: &str = "(c.revoked_at is null and c.expires_at > now())";

/// A digest of what a [`Viewer`] is made of — the connection's read scope and send permission
/// and the archive policy — as [`Authorized::row`] remembers it and [`grant_guard`] compares
/// it. It tells a change, not an adversary: only the owner writes these rows.
const GRANT_ROW: &str = "sha256(convert_to(row(c.read_scope, c.send_mode, c.send_chats,
    c.send_revision, coalesce(p.excluded_chats, '{}'))::text, 'UTF8'))";

/// The connection and the archive policy in one round trip.
static AUTHORIZE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "select c.kind, c.revision, {ACTIVE} as active,
            c.read_scope, c.send_mode, c.send_chats, c.send_revision,
            coalesce(p.excluded_chats, '{{}}') as excluded_chats, {GRANT_ROW} as grant_row
         from connections c left join archive_policy p on p.singleton
         where c.connection_id = $1"
    )
});

/// A query whose `ok` column fails (division by zero) unless connection `connection` would
/// still be accepted for a grant of revision `revision` from loopback or not (`loopback`),
/// with its scope, permission and policy digested as `row` (each a `$n` parameter):
/// [`authorize_on`]'s checks in one query, for a statement that must not commit on a grant
/// that changed since it was remembered.
pub(crate) fn grant_guard(connection: &str, revision: &str, loopback: &str, row: &str) -> String {
    format!(
        "select 1 / count(*) as ok from connections c left join archive_policy p on p.singleton
          where c.connection_id = {connection} and {ACTIVE} and c.revision = {revision}
            and (c.kind <> 'local' or {loopback}) and {GRANT_ROW} = {row}"
    )
}

/// An accepted grant: the caller's [`Viewer`] and what [`grant_guard`] needs to tell, later,
/// that it still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    /// Who the caller is and what it may do.
    pub viewer: Viewer,
    /// The digest of the rows the viewer was read from.
    pub row: Vec<u8>,
}

/// The one answer for every rejected grant: which check failed is logged, never told.
fn rejected() -> Error {
    Error::new(
        ErrorCode::Unauthenticated,
        "the token is not valid (missing, expired, revoked or replaced)",
    )
}

/// Authorise one request. Missing grant, unknown connection, revoked, expired, stale revision,
/// or a `local` connection from a non-loopback client ⇒ `unauthenticated`, all alike.
pub async fn authorize(pool: &Pool, grant: Option<&VerifiedGrant>) -> Result<Authorized, Error> {
    let Some(grant) = grant else {
        tracing::debug!("rejected: no grant");
        return Err(rejected());
    };
    let client = pool.get().await.context("authorize: database")?;
    authorize_on(&client, Some(grant)).await
}

/// [`authorize`] on a connection the caller holds, so it can send another query on it at the
/// same time (tokio-postgres pipelines them: one round trip for both). The send path looks its
/// chat up this way; what it found is used only once this check has passed.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "authorize"))]
pub async fn authorize_on(
    client: &impl GenericClient,
    grant: Option<&VerifiedGrant>,
) -> Result<Authorized, Error> {
    let Some(grant) = grant else {
        tracing::debug!("rejected: no grant");
        return Err(rejected());
    };
    let stmt = client
        .prepare_cached(&AUTHORIZE)
        .await
        .context("authorize: prepare")?;
    let row = client
        .query_opt(&stmt, &[&grant.connection_id])
        .await
        .context("authorize: query")?;
    let Some(row) = row else {
        tracing::debug!(connection.id = %grant.connection_id, "rejected: unknown connection");
        return Err(rejected());
    };
    let decoded = (|| -> anyhow::Result<_> {
        let kind: String = row.try_get("kind")?;
        let kind: ConnectionKind = kind.parse().map_err(anyhow::Error::msg)?;
        let revision: i32 = row.try_get("revision")?;
        let active: bool = row.try_get("active")?;
        Ok((kind, revision, active))
    })();
    let (kind, revision, active) = decoded.context("authorize: decode")?;
    let reason = if !active {
        Some("revoked or expired")
    } else if i64::from(revision) != i64::from(grant.revision) {
        Some("stale revision")
    } else if kind == ConnectionKind::Local && !grant.loopback {
        Some("local connection from a non-loopback client")
    } else {
        None
    };
    if let Some(reason) = reason {
        tracing::debug!(connection.id = %grant.connection_id, reason, "rejected");
        return Err(rejected());
    }
    let accepted = || -> anyhow::Result<_> {
        Ok(Authorized {
            viewer: viewer(&grant.connection_id, &row)?,
            row: row.try_get("grant_row")?,
        })
    };
    accepted().context("authorize: decode")
}

/// The viewer of an accepted row.
fn viewer(connection_id: &str, row: &tokio_postgres::Row) -> anyhow::Result<Viewer> {
    let Json(scope): Json<ReadScope> = row.try_get("read_scope")?;
    Ok(Viewer {
        connection_id: connection_id.to_owned(),
        scope,
        send: SendPermission {
            mode: send_mode(row.try_get("send_mode")?)?,
            chats: row.try_get("send_chats")?,
            revision: u32::try_from(row.try_get::<_, i32>("send_revision")?)?,
        },
        excluded_chats: row.try_get("excluded_chats")?,
    })
}
