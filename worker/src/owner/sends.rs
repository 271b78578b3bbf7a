//! Recent sends for the owner: send journal rows with their connection and chat names, newest
//! first. The journal never holds a body, so none can be shown.

use deadpool_postgres::Pool;
use wazap_shared::wire::owner::{SendRow, SendsPage, SendsRequest};

use crate::error::{Context as _, Error};

/// The newest journal rows.
pub async fn recent(pool: &Pool, req: SendsRequest) -> Result<SendsPage, Error> {
    let limit = req.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(Error::invalid("limit", "must be 1-200"));
    }
    let rows = pool
        .get()
        .await
        .context("recent sends: database")?
        .query(
            "select j.connection_id, coalesce(c.name, ''), j.request_id, j.tool, j.chat_id,
                    coalesce(nullif(ch.name, ''), nullif(ch.push_name, ''), '+' || ch.phone, ''),
                    j.state, j.created_at, j.updated_at
               from send_journal j
               left join connections c on c.connection_id = j.connection_id
               left join chats ch on ch.account_id = j.account_id and ch.chat_id = j.chat_id
              order by j.created_at desc, j.request_id
              limit $1",
            &[&i64::from(limit)],
        )
        .await
        .context("recent sends: query")?;
    Ok(SendsPage {
        sends: rows
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
    })
}
