//! The archive policy (DESIGN §4): chats excluded from the archive (never stored from now on,
//! never returned, never a send target) and the fixed `#private` rule. Edits are checked
//! against the revision the owner saw.

use std::collections::HashSet;

use deadpool_postgres::Pool;
use wazap_shared::ids::is_chat_id;
use wazap_shared::wire::owner::{OwnerAnswer, Policy, SetPolicyRequest};

use crate::error::{Context as _, Error};
use crate::grants::connections::MAX_SCOPE_CHATS;

/// The policy now.
pub async fn get(pool: &Pool) -> Result<Policy, Error> {
    let row = pool
        .get()
        .await
        .context("policy: database")?
        .query_one("select excluded_chats, revision from archive_policy", &[])
        .await
        .context("policy: query")?;
    Ok(Policy {
        excluded_chats: row.get(0),
        revision: u32::try_from(row.get::<_, i32>(1)).unwrap_or_default(),
    })
}

/// Replace the excluded chats when `req.revision` is current.
pub async fn set(pool: &Pool, req: SetPolicyRequest) -> Result<OwnerAnswer<Policy>, Error> {
    let mut seen = HashSet::new();
    let mut chats = Vec::new();
    for c in req.excluded_chats {
        if !is_chat_id(&c) {
            return Err(Error::invalid(
                "excluded_chats",
                "expected opaque chat ids (c_…)",
            ));
        }
        if seen.insert(c.clone()) {
            chats.push(c);
        }
    }
    if chats.len() > MAX_SCOPE_CHATS {
        return Err(Error::invalid("excluded_chats", "at most 10000 chats"));
    }
    let revision = i32::try_from(req.revision).unwrap_or(i32::MAX);
    let row = pool
        .get()
        .await
        .context("policy: database")?
        .query_opt(
            "update archive_policy set excluded_chats = $1, revision = revision + 1
              where revision = $2 returning excluded_chats, revision",
            &[&chats, &revision],
        )
        .await
        .context("policy: update")?;
    let Some(row) = row else {
        return Ok(OwnerAnswer::Stale);
    };
    let policy = Policy {
        excluded_chats: row.get(0),
        revision: u32::try_from(row.get::<_, i32>(1)).unwrap_or_default(),
    };
    tracing::info!(
        excluded = policy.excluded_chats.len(),
        revision = policy.revision,
        "archive policy changed"
    );
    Ok(OwnerAnswer::Done(policy))
}
