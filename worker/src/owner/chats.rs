//! Chats by name for the owner's editors: the send-permission editor lists only what a
//! connection may read (its read scope and the archive policy), the read-scope editor one
//! account's chats, the policy page every chat. Searched by name or phone number, paged; the
//! selected chats are named separately so the editor can count and show them even when they
//! are outside the loaded page.

use deadpool_postgres::Pool;
use tokio_postgres::types::Json;
use wazap_shared::ErrorCode;
use wazap_shared::ids::{ACCOUNT_ID_RULE, is_account_id};
use wazap_shared::wire::grants::ReadScope;
use wazap_shared::wire::owner::{ChatPage, ChatsRequest, OwnerChat};

use crate::error::{Context as _, Error};

/// Default page size.
pub const DEFAULT_LIMIT: u32 = 50;
/// Largest page.
pub const MAX_LIMIT: u32 = 200;
/// Most chat ids [`ChatsRequest::named`] may list.
pub const MAX_NAMED: usize = 10_000;

/// The name the owner knows a chat by: contact or group name, the person's own name, their
/// number, or the kind.
const NAME: &str = "coalesce(nullif(name, ''), nullif(push_name, ''), '+' || phone, kind)";

/// One page of chats matching `req`.
pub async fn list(pool: &Pool, req: ChatsRequest) -> Result<ChatPage, Error> {
    let limit = req.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::invalid("limit", "must be 1-200"));
    }
    if req.named.len() > MAX_NAMED || req.query.chars().count() > 200 {
        return Err(Error::invalid("named", "too long"));
    }
    if req.account_id.as_deref().is_some_and(|a| !is_account_id(a)) {
        return Err(Error::invalid("account_id", ACCOUNT_ID_RULE));
    }
    let client = pool.get().await.context("owner chats: database")?;
    if let Some(account) = &req.account_id {
        client
            .query_opt("select 1 from accounts where account_id = $1", &[account])
            .await
            .context("owner chats: query")?
            .ok_or_else(|| Error::new(ErrorCode::AccountNotFound, "no such account"))?;
    }
    let allowed: Option<(ReadScope, Vec<String>)> = match &req.connection_id {
        None => None,
        Some(id) => {
            let row = client
                .query_opt(
                    "select c.read_scope, coalesce(p.excluded_chats, '{}')
                       from connections c left join archive_policy p on p.singleton
                      where c.connection_id = $1",
                    &[id],
                )
                .await
                .context("owner chats: query")?
                .ok_or_else(|| Error::new(ErrorCode::NotFound, "connection: not found"))?;
            let Json(scope): Json<ReadScope> = row.get(0);
            Some((scope, row.get(1)))
        }
    };
    let rows = client
        .query(
            &format!(
                "select chat_id, {NAME}, kind from chats
                  where ($2::text is null or account_id = $2)
                    and ($1 = '' or strpos(lower(coalesce(name, '') || ' ' || coalesce(push_name, '')
                        || ' +' || coalesce(phone, '')), lower($1)) > 0)
                  order by last_message_at desc nulls last, chat_id"
            ),
            &[&req.query.trim(), &req.account_id],
        )
        .await
        .context("owner chats: query")?;
    let matching: Vec<OwnerChat> = rows
        .iter()
        .map(|r| OwnerChat {
            id: r.get(0),
            name: r.get(1),
            kind: r.get(2),
        })
        .filter(|c| {
            allowed.as_ref().is_none_or(|(scope, excluded)| {
                scope.allows_chat(&c.id) && !excluded.contains(&c.id)
            })
        })
        .collect();
    let total = u32::try_from(matching.len()).unwrap_or(u32::MAX);
    let chats = matching
        .into_iter()
        .skip(req.offset as usize)
        .take(limit as usize)
        .collect();
    let named = if req.named.is_empty() {
        Vec::new()
    } else {
        client
            .query(
                &format!("select distinct on (chat_id) chat_id, {NAME}, kind from chats where chat_id = any($1)"),
                &[&req.named],
            )
            .await
            .context("owner chats: query")?
            .iter()
            .map(|r| OwnerChat {
                id: r.get(0),
                name: r.get(1),
                kind: r.get(2),
            })
            .collect()
    };
    Ok(ChatPage {
        chats,
        total,
        named,
    })
}
