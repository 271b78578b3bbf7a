//! The owner's edits of AI connections beyond create/list/revoke (which live in
//! [`crate::grants::connections`]): rotate and read-scope edits, both a new credential revision
//! whose new token is shown once, old tokens stale at once, and send permission reset to `none`
//! (DESIGN §4); and the DESIGN §6 send-permission body, older shape included.

use chrono::Utc;
use deadpool_postgres::Pool;
use tokio_postgres::types::Json;
use wazap_shared::ErrorCode;
use wazap_shared::grant::{AUDIENCE, GrantClaims};
use wazap_shared::wire::grants::{ReadScope, SendMode, SendPermission};
use wazap_shared::wire::owner::{
    IssuedConnection, OwnerAnswer, OwnerConnection, SendPermissionRequest,
};

use crate::error::{Context as _, Error};
use crate::grants::connections::{ConnectionRow, normalize_scope};
use crate::grants::{self, PermissionEdit, PermissionError, issue_token};

/// A stored connection as the owner API shows it.
pub fn to_owner(row: ConnectionRow) -> OwnerConnection {
    OwnerConnection {
        id: row.id,
        name: row.name,
        kind: row.kind,
        revision: row.revision,
        created_at: row.created_at,
        expires_at: row.expires_at,
        revoked_at: row.revoked_at,
        read_scope: row.read_scope,
        send_permission: row.send,
        oauth_client: row.oauth_client,
    }
}

/// One connection by id, or `not_found`.
pub async fn get(pool: &Pool, id: &str) -> Result<OwnerConnection, Error> {
    grants::list_connections(pool)
        .await?
        .into_iter()
        .find(|c| c.id == id)
        .map(to_owner)
        .ok_or_else(|| Error::new(ErrorCode::NotFound, "connection: not found"))
}

/// A new credential revision for `id` (seen by the owner at `revision`), optionally with a new
/// read scope: old tokens go stale, send permission becomes `none` (its revision advances so
/// an open editor notices), and the new token is returned once.
pub async fn new_revision(
    pool: &Pool,
    id: &str,
    revision: u32,
    scope: Option<ReadScope>,
) -> Result<OwnerAnswer<IssuedConnection>, Error> {
    let scope = scope.map(normalize_scope).transpose()?;
    let mut client = pool.get().await.context("new revision: database")?;
    let tx = client.transaction().await.context("new revision: begin")?;
    let row = tx
        .query_opt(
            "select revision, (revoked_at is null and expires_at > now()) as active
               from connections where connection_id = $1 for update",
            &[&id],
        )
        .await
        .context("new revision: select")?
        .ok_or_else(|| Error::new(ErrorCode::NotFound, "connection: not found"))?;
    if !row.get::<_, bool>("active") {
        return Err(Error::invalid("id", "the connection is revoked or expired"));
    }
    if i64::from(row.get::<_, i32>("revision")) != i64::from(revision) {
        return Ok(OwnerAnswer::Stale);
    }
    let row = tx
        .query_one(
            "update connections
                set revision = revision + 1,
                    read_scope = coalesce($2, read_scope),
                    send_mode = 'none', send_chats = '{}', send_revision = send_revision + 1
              where connection_id = $1
              returning revision, expires_at, kind",
            &[&id, &scope.as_ref().map(Json)],
        )
        .await
        .context("new revision: update")?;
    let kind: String = row.get(2);
    let expires_at: chrono::DateTime<Utc> = row.get(1);
    let claims = GrantClaims {
        sub: id.to_owned(),
        rev: u32::try_from(row.get::<_, i32>(0)).unwrap_or_default(),
        aud: AUDIENCE.into(),
        exp: expires_at.timestamp(),
        iat: Utc::now().timestamp(),
        kind: kind
            .parse()
            .map_err(|e: String| Error::internal("new revision: kind", anyhow::Error::msg(e)))?,
    };
    let token = issue_token(&tx, &claims)
        .await
        .context("new revision: sign")?;
    tx.commit().await.context("new revision: commit")?;
    tracing::info!(
        connection.id = %id,
        revision = claims.rev,
        scope_changed = scope.is_some(),
        "connection has a new credential revision"
    );
    Ok(OwnerAnswer::Done(IssuedConnection {
        connection: get(pool, id).await?,
        token,
    }))
}

/// The DESIGN §6 send-permission edit. With `mode`, `expected_send_revision` is required;
/// without it (the older body) non-empty `chats` means selected, empty means none, and only
/// the credential revision is checked.
pub async fn set_send_permission(
    pool: &Pool,
    req: SendPermissionRequest,
) -> Result<OwnerAnswer<SendPermission>, Error> {
    let (mode, expected) =
        match req.mode {
            Some(mode) => (
                mode,
                Some(req.expected_send_revision.ok_or_else(|| {
                    Error::invalid("expected_send_revision", "required with mode")
                })?),
            ),
            None if req.chats.is_empty() => (SendMode::None, None),
            None => (SendMode::Selected, None),
        };
    let edit = PermissionEdit {
        id: req.id,
        revision: Some(req.revision),
        mode,
        chats: req.chats,
        expected_send_revision: expected,
    };
    match grants::set_send_permission(pool, edit).await {
        Ok(p) => Ok(OwnerAnswer::Done(p)),
        Err(PermissionError::Stale) => Ok(OwnerAnswer::Stale),
        Err(PermissionError::Rejected(e)) => Err(e),
    }
}
