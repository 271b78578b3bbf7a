//! Send permissions (DESIGN §4, §6): `none`, `selected` (1–100 unique chats the connection may
//! read, inside the archive policy) or `all` (every chat inside the read scope and policy; it
//! extends neither). Every accepted edit advances the send revision, never the credential
//! revision, and keeps the token; a stale credential or send revision changes nothing.

use std::collections::HashSet;

use deadpool_postgres::{Pool, Transaction};
use tokio_postgres::types::Json;
use wazap_shared::ErrorCode;
use wazap_shared::ids::is_chat_id;
use wazap_shared::wire::grants::{ReadScope, SendMode, SendPermission};

use super::connections::send_mode;
use crate::error::{Context as _, Error};

/// Most chats a `selected` permission may list.
pub const MAX_SEND_CHATS: usize = 100;

/// An edit of a connection's send permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionEdit {
    /// The connection.
    pub id: String,
    /// The credential revision the editor saw (checked when given).
    pub revision: Option<u32>,
    /// The new mode.
    pub mode: SendMode,
    /// The chats, for `selected`; empty for `none` and `all`.
    pub chats: Vec<String>,
    /// The send revision the editor saw (checked when given).
    pub expected_send_revision: Option<u32>,
}

/// Why an edit was not applied.
#[derive(Debug, thiserror::Error)]
pub enum PermissionError {
    /// The credential or send revision changed since the editor looked (HTTP 409).
    #[error("changed elsewhere: reopen and edit again")]
    Stale,
    /// The edit is invalid, or the connection is unknown, revoked or expired.
    #[error("{0}")]
    Rejected(Error),
}

impl From<Error> for PermissionError {
    fn from(e: Error) -> Self {
        Self::Rejected(e)
    }
}

/// Apply `edit` atomically; the new permission.
pub async fn set_send_permission(
    pool: &Pool,
    edit: PermissionEdit,
) -> Result<SendPermission, PermissionError> {
    let mut client = pool.get().await.context("send permission: database")?;
    let tx = client
        .transaction()
        .await
        .context("send permission: begin")?;
    let permission = set_on(&tx, &edit).await?;
    tx.commit().await.context("send permission: commit")?;
    Ok(permission)
}

/// [`set_send_permission`] in the caller's transaction (the consent page sets the first
/// permission of the connection it creates), which the caller commits.
pub(crate) async fn set_on(
    tx: &Transaction<'_>,
    edit: &PermissionEdit,
) -> Result<SendPermission, PermissionError> {
    let row = tx
        .query_opt(
            "select c.revision, c.send_revision, c.read_scope,
                    (c.revoked_at is null and c.expires_at > now()) as active,
                    coalesce(p.excluded_chats, '{}') as excluded
               from connections c left join archive_policy p on p.singleton
              where c.connection_id = $1
              for update of c",
            &[&edit.id],
        )
        .await
        .context("send permission: select")?
        .ok_or_else(|| Error::new(ErrorCode::NotFound, "connection: not found"))?;
    let revision: i32 = row.get("revision");
    let send_revision: i32 = row.get("send_revision");
    let Json(scope): Json<ReadScope> = row.get("read_scope");
    let active: bool = row.get("active");
    let excluded: Vec<String> = row.get("excluded");
    if !active {
        return Err(Error::invalid("id", "the connection is revoked or expired").into());
    }
    if edit
        .revision
        .is_some_and(|r| i64::from(r) != i64::from(revision))
        || edit
            .expected_send_revision
            .is_some_and(|r| i64::from(r) != i64::from(send_revision))
    {
        return Err(PermissionError::Stale);
    }
    let chats = match edit.mode {
        SendMode::None | SendMode::All => {
            if !edit.chats.is_empty() {
                return Err(Error::invalid("chats", "must be empty for none and all").into());
            }
            Vec::new()
        }
        SendMode::Selected => {
            check_selected(&edit.chats, &scope, &excluded)?;
            let known: i64 = tx
                .query_one(
                    "select count(distinct chat_id) from chats where chat_id = any($1)",
                    &[&edit.chats],
                )
                .await
                .context("send permission: chats")?
                .get(0);
            if known != edit.chats.len() as i64 {
                return Err(Error::invalid(
                    "chats",
                    "every chat must be one this connection may read",
                )
                .into());
            }
            edit.chats.clone()
        }
    };
    let mode = match edit.mode {
        SendMode::None => "none",
        SendMode::Selected => "selected",
        SendMode::All => "all",
    };
    let row = tx
        .query_one(
            "update connections
                set send_mode = $2, send_chats = $3, send_revision = send_revision + 1
              where connection_id = $1
              returning send_mode, send_chats, send_revision",
            &[&edit.id, &mode, &chats],
        )
        .await
        .context("send permission: update")?;
    let permission = SendPermission {
        mode: send_mode(row.get(0)).context("send permission: decode")?,
        chats: row.get(1),
        revision: u32::try_from(row.get::<_, i32>(2)).unwrap_or_default(),
    };
    tracing::info!(
        connection.id = %edit.id,
        mode,
        chats = permission.chats.len(),
        send_revision = permission.revision,
        "send permission changed"
    );
    Ok(permission)
}

/// `selected`: 1–100 unique opaque chat ids, each inside the read scope and not excluded.
fn check_selected(chats: &[String], scope: &ReadScope, excluded: &[String]) -> Result<(), Error> {
    if chats.is_empty() || chats.len() > MAX_SEND_CHATS {
        return Err(Error::invalid("chats", "selected needs 1–100 chats"));
    }
    let mut seen = HashSet::new();
    for c in chats {
        if !is_chat_id(c) {
            return Err(Error::invalid("chats", "expected opaque chat ids (c_…)"));
        }
        if !seen.insert(c) {
            return Err(Error::invalid("chats", "each chat at most once"));
        }
        if !scope.allows_chat(c) || excluded.contains(c) {
            return Err(Error::invalid(
                "chats",
                "every chat must be one this connection may read",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wazap_shared::wire::grants::ChatSelection;

    #[test]
    fn selected_chats_stay_inside_scope_and_policy() {
        let scope = ReadScope {
            chats: ChatSelection::AllExcept {
                chats: vec!["c_2".into()],
            },
            since: None,
            until: None,
            ..ReadScope::all()
        };
        let excluded = vec!["c_3".to_owned()];
        let ok = |c: &[&str]| {
            check_selected(
                &c.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &scope,
                &excluded,
            )
        };
        assert!(ok(&["c_1"]).is_ok());
        assert!(ok(&[]).is_err());
        assert!(ok(&["c_1", "c_1"]).is_err());
        assert!(ok(&["c_2"]).is_err());
        assert!(ok(&["c_3"]).is_err());
        assert!(ok(&["+972501234567"]).is_err());
        let many: Vec<String> = (0..101).map(|i| format!("c_{i}")).collect();
        assert!(check_selected(&many, &scope, &excluded).is_err());
    }
}
