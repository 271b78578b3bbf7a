//! The query behind `wait_for_messages`: messages from other people archived after a position,
//! in archive order, inside the viewer's read scope and the archive policy, optionally of one
//! chat or only those addressed to the account (direct chats, @-mentions, replies to its own
//! messages), with `#private` redacted by the same row mapping as `read_messages`.

use deadpool_postgres::GenericClient;
use wazap_shared::wire::grants::ChatSelection;

use super::messages::{ATTACHMENT_COLUMNS, to_message};
use super::{Params, chat_filter, time_filter};
use crate::viewer::Viewer;

/// `account`'s highest stored position (0 for none).
pub(crate) async fn highest(db: &impl GenericClient, account: &str) -> anyhow::Result<i64> {
    let stmt = db
        .prepare_cached("select coalesce(max(position), 0) from messages where account_id = $1")
        .await?;
    Ok(db.query_one(&stmt, &[&account]).await?.get(0))
}

/// What one poll asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct After<'a> {
    /// The account.
    pub(crate) account: &'a str,
    /// Only this chat (already resolved and checked against the scope).
    pub(crate) chat_id: Option<&'a str>,
    /// Only messages addressed to the account.
    pub(crate) addressed_to_me: bool,
    /// Messages strictly after this position…
    pub(crate) after: i64,
    /// …and at most this one (the highest committed position when the poll began, so every
    /// position up to it is visible).
    pub(crate) upto: i64,
    /// At most this many.
    pub(crate) limit: usize,
}

/// A message found by [`after`], with its archive position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Positioned {
    /// Its archive position.
    pub(crate) position: i64,
    /// The wire message (redacted when private).
    pub(crate) message: wazap_shared::wire::Message,
}

/// Messages from others in `(after, upto]` the viewer may read, oldest position first.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "wait.after"))]
pub(crate) async fn after(
    db: &impl GenericClient,
    viewer: &Viewer,
    q: After<'_>,
) -> anyhow::Result<Vec<Positioned>> {
    let mut p = Params::default();
    let acc = p.push(q.account.to_owned());
    // Across all chats the position index is the plan for any range, so the range and the
    // limit are hidden from the planner (`Params::push_opaque`: each poll was planned anew,
    // ~0.45 ms at 1M messages, ten times the query). Restricted to some chats, the plan must
    // see the range (a wide one is better read through the chat's index), so those polls
    // keep their custom plans.
    let narrow =
        q.chat_id.is_some() || matches!(viewer.scope.chats, ChatSelection::Selected { .. });
    let bound = |p: &mut Params, value: i64| {
        if narrow {
            p.push(value)
        } else {
            p.push_opaque(value)
        }
    };
    let (lo, hi) = (bound(&mut p, q.after), bound(&mut p, q.upto));
    let mut cond = chat_filter(viewer, "m.chat_id", &mut p);
    cond.push_str(" and ");
    cond.push_str(&time_filter(viewer, "m.ts", &mut p));
    if let Some(chat) = q.chat_id {
        cond.push_str(&format!(" and m.chat_id = {}", p.push(chat.to_owned())));
    }
    if q.addressed_to_me {
        cond.push_str(
            " and (m.mentions_me
                   or exists (select 1 from chats c
                               where c.account_id = m.account_id and c.chat_id = m.chat_id
                                 and c.kind = 'direct')
                   or (m.kind <> 'reaction' and exists (
                         select 1 from messages r
                          where r.account_id = m.account_id and r.message_id = m.reply_to
                            and r.from_me)))",
        );
    }
    let limit = bound(&mut p, i64::try_from(q.limit).unwrap_or(i64::MAX));
    let sql = format!(
        "select m.message_id, m.ts, m.kind, m.text, m.from_me, m.private,
                {sender}, coalesce(g.into_chat_id, m.sender_chat_id),
                m.reply_to, {ATTACHMENT_COLUMNS}, m.mentions_me, m.edited, m.reactions,
                m.chat_id, m.position
           from messages m
           left join chat_merges g
                  on g.account_id = m.account_id and g.from_chat_id = m.sender_chat_id
           left join attachments a on a.account_id = m.account_id and a.message_id = m.message_id
          where m.position > {lo} and m.position <= {hi} and m.account_id = {acc}
            and not m.from_me and {cond}
          order by m.position
          limit {limit}",
        sender = sender_name!("m"),
    );
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db
        .query(&stmt, &p.refs())
        .await?
        .iter()
        .map(|r| {
            let chat_id: String = r.get(18);
            let reactions: Option<serde_json::Value> = r.get(17);
            Positioned {
                position: r.get(19),
                message: to_message(r, &chat_id, r.get(15), r.get(16), reactions).message,
            }
        })
        .collect())
}
