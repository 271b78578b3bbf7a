//! Recent sends for the owner: send journal rows and refused send attempts, with their
//! connection and chat names, newest first, optionally for one connection or one chat. Neither
//! the journal nor the refusals hold a body, so none can be shown.
//!
//! Refusals are recorded here too ([`record_refusal`]), called by the send path when its chat
//! gate refuses a chat that exists.

use deadpool_postgres::{GenericClient, Pool};
use wazap_shared::ErrorCode;
use wazap_shared::wire::owner::{RefusedSend, SendRow, SendsPage, SendsRequest};

use crate::error::{Context as _, Error};

/// Refused attempts kept; each new one deletes those past this many, so an agent retrying a
/// refused send in a loop cannot grow the table.
pub const MAX_REFUSALS: i64 = 1_000;

/// The name the owner knows chat `ch` by (as the journal's page always showed it).
const CHAT_NAME: &str =
    "coalesce(nullif(ch.name, ''), nullif(ch.push_name, ''), '+' || ch.phone, '')";

/// The newest journal rows and refused attempts.
pub async fn recent(pool: &Pool, req: SendsRequest) -> Result<SendsPage, Error> {
    let limit = req.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(Error::invalid("limit", "must be 1-200"));
    }
    let limit = i64::from(limit);
    let client = pool.get().await.context("recent sends: database")?;
    let filter = (&req.connection_id, &req.chat_id);
    let sends = client
        .query(
            &format!(
                "select j.connection_id, coalesce(c.name, ''), j.request_id, j.tool, j.chat_id,
                        {CHAT_NAME}, j.state, j.created_at, j.updated_at
                   from send_journal j
                   left join connections c on c.connection_id = j.connection_id
                   left join chats ch on ch.account_id = j.account_id and ch.chat_id = j.chat_id
                  where ($2::text is null or j.connection_id = $2)
                    and ($3::text is null or j.chat_id = $3)
                  order by j.created_at desc, j.request_id
                  limit $1"
            ),
            &[&limit, filter.0, filter.1],
        )
        .await
        .context("recent sends: query")?;
    let refused = client
        .query(
            &format!(
                "select r.connection_id, coalesce(c.name, ''), r.tool, r.chat_id, {CHAT_NAME},
                        r.reason, r.at
                   from send_refusals r
                   left join connections c on c.connection_id = r.connection_id
                   left join chats ch on ch.account_id = r.account_id and ch.chat_id = r.chat_id
                  where ($2::text is null or r.connection_id = $2)
                    and ($3::text is null or r.chat_id = $3)
                  order by r.id desc
                  limit $1"
            ),
            &[&limit, filter.0, filter.1],
        )
        .await
        .context("recent sends: query")?;
    Ok(SendsPage {
        sends: sends
            .iter()
            .map(|r| SendRow {
                connection_id: r.get(0),
                connection_name: r.get(1),
                request_id: r.get(2),
                tool: r.get(3),
                chat_id: r.get(4),
                chat_name: r.get(5),
                state: r.get(6),
                created_at: r.get(7),
                updated_at: r.get(8),
            })
            .collect(),
        refused: refused
            .iter()
            .map(|r| RefusedSend {
                connection_id: r.get(0),
                connection_name: r.get(1),
                tool: r.get(2),
                chat_id: r.get(3),
                chat_name: r.get(4),
                reason: r.get(5),
                at: r.get(6),
            })
            .collect(),
    })
}

/// A send refused by the chat gate, as the owner's sends page names it: which connection,
/// which chat (of which account) and tool, and the refusal.
#[derive(Debug, Clone, Copy)]
pub struct Refusal<'a> {
    /// The connection that tried.
    pub connection_id: &'a str,
    /// The chat's account.
    pub account_id: &'a str,
    /// The chat's current id.
    pub chat_id: &'a str,
    /// The tool, when known.
    pub tool: Option<&'a str>,
    /// The refusal's code: `send_not_permitted` is kept as it is; `chat_not_found` for a chat
    /// that exists means it is outside the scope.
    pub code: ErrorCode,
}

/// Record `refusal` and delete all but the newest [`MAX_REFUSALS`], in one statement. Other
/// refusals (a malformed id, a session that cannot send) are not about the chat and are not
/// recorded. A failure is logged, never answered: the agent's answer is the refusal itself.
pub async fn record_refusal(db: &impl GenericClient, refusal: Refusal<'_>) {
    let reason = match refusal.code {
        ErrorCode::SendNotPermitted => "send_not_permitted",
        ErrorCode::ChatNotFound => "chat_out_of_scope",
        _ => return,
    };
    let recorded = db
        .execute(
            "with added as (
                insert into send_refusals (connection_id, account_id, chat_id, tool, reason)
                values ($1, $2, $3, $4, $5)
             )
             delete from send_refusals
              where id <= (select id from send_refusals order by id desc offset $6 limit 1)",
            &[
                &refusal.connection_id,
                &refusal.account_id,
                &refusal.chat_id,
                &refusal.tool,
                &reason,
                // The statement's snapshot does not see the row it adds: keep one fewer.
                &(MAX_REFUSALS - 1),
            ],
        )
        .await;
    if let Err(e) = recorded {
        tracing::warn!(error = %e, reason, "a refused send was not recorded");
    }
}
