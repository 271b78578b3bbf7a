//! `account_status`: each account's truth as the worker serving it records it — its session
//! state and since when, the history sync it is receiving, what its archive holds — read by every
//! worker: the owner's dashboard, `ping`'s readiness, the state a read of an account served
//! elsewhere reports. A state counts only while the worker that wrote it still holds the
//! account's lease: a dead worker's last word is not the account's state.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::{ArchiveCounts, HistoryProgress};

/// The records whose writer holds the account's lease now.
macro_rules! held {
    () => {
        "join worker_lease l on l.name = 'account:' || s.account_id
                            and l.holder = s.holder and l.expires_at > now()"
    };
}

/// What is recorded of one account.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Its state, while the worker that recorded it still serves it.
    pub state: Option<SyncState>,
    /// Since when it has been in that state (served), or when it was last served (not: the
    /// last record, refreshed every half minute, or its lease's end if later).
    pub since: Option<DateTime<Utc>>,
    /// History sync so far on its current connection.
    pub history: Option<HistoryProgress>,
    /// Its archive, as last counted.
    pub archive: Option<ArchiveCounts>,
}

/// Record `account`'s state and history progress as `holder` sees it; `since` moves only when
/// the state changes.
pub async fn record_state(
    pool: &Pool,
    account: &str,
    state: SyncState,
    history: Option<HistoryProgress>,
    holder: &str,
) -> anyhow::Result<()> {
    let db = pool.get().await?;
    let (pages, messages, percent) = match history {
        Some(h) => (
            Some(h.pages as i32),
            Some(h.messages as i64),
            h.percent.map(i16::from),
        ),
        None => (None, None, None),
    };
    db.execute(
        "insert into account_status as s (account_id, state, since, holder, updated_at,
                                           history_pages, history_messages, history_percent)
         values ($1, $2, now(), $3, now(), $4, $5, $6)
         on conflict (account_id) do update
            set since = case when s.state = excluded.state and s.holder = excluded.holder
                             then s.since else now() end,
                state = excluded.state, holder = excluded.holder, updated_at = now(),
                history_pages = excluded.history_pages,
                history_messages = excluded.history_messages,
                history_percent = excluded.history_percent",
        &[
            &account,
            &state.as_str(),
            &holder,
            &pages,
            &messages,
            &percent,
        ],
    )
    .await?;
    Ok(())
}

/// `holder` still serves `account`: the time of its record moves on, so once it stops the
/// dashboard can say since when the account has not been served.
pub async fn touch(pool: &Pool, account: &str, holder: &str) -> anyhow::Result<()> {
    let db = pool.get().await?;
    db.execute(
        "update account_status set updated_at = now() where account_id = $1 and holder = $2",
        &[&account, &holder],
    )
    .await?;
    Ok(())
}

/// Count what `account`'s archive holds and record it. The messages' share of the disk is their
/// share of the message table's rows (as the planner last counted them) applied to the table
/// with its indexes; files and thumbnails are summed by their stored size, never read.
pub async fn record_counts(pool: &Pool, account: &str) -> anyhow::Result<()> {
    let db = pool.get().await?;
    db.execute(
        "with m as (select count(*) as n, max(ts) as newest from messages where account_id = $1),
              f as (select count(*) as n,
                           coalesce(sum(coalesce(pg_column_size(data), 0)
                                        + coalesce(pg_column_size(thumbnail), 0)
                                        + coalesce(pg_column_size(media), 0)), 0)::bigint
                               as bytes
                      from attachments where account_id = $1),
              share as (select least(1.0, m.n / greatest(c.reltuples, 1)::float8)
                               * pg_total_relation_size('messages') as bytes
                          from m, pg_class c where c.oid = 'messages'::regclass)
         update account_status
            set messages = m.n,
                chats = (select count(*) from chats
                          where account_id = $1 and last_message_at is not null),
                media = f.n, newest_at = m.newest,
                disk_bytes = f.bytes + share.bytes::bigint, counted_at = now()
           from m, f, share
          where account_id = $1",
        &[&account],
    )
    .await?;
    Ok(())
}

/// `account`'s state, if the worker serving it recorded one.
pub async fn served_state(
    db: &impl GenericClient,
    account: &str,
) -> Result<Option<SyncState>, tokio_postgres::Error> {
    let stmt = db
        .prepare_cached(concat!(
            "select s.state from account_status s ",
            held!(),
            " where s.account_id = $1"
        ))
        .await?;
    Ok(db
        .query_opt(&stmt, &[&account])
        .await?
        .and_then(|r| SyncState::parse(r.get(0))))
}

/// An account in use (not removed) that no worker has recorded as served, if any.
pub async fn first_unserved(
    db: &impl GenericClient,
) -> Result<Option<String>, tokio_postgres::Error> {
    let stmt = db
        .prepare_cached(concat!(
            "select a.account_id from accounts a
              where a.removed_at is null
                and not exists (select 1 from account_status s ",
            held!(),
            " where s.account_id = a.account_id) limit 1"
        ))
        .await?;
    Ok(db.query_opt(&stmt, &[]).await?.map(|r| r.get(0)))
}

/// Everything recorded, by account.
pub async fn all(
    db: &impl GenericClient,
) -> Result<HashMap<String, Recorded>, tokio_postgres::Error> {
    let rows = db
        .query(
            concat!(
                "select s.account_id, s.state, l.name is not null, s.since,
                        greatest(s.updated_at, least(nullif(la.expires_at, '-infinity'), now())),
                        s.history_pages, s.history_messages, s.history_percent,
                        s.messages, s.chats, s.media, s.newest_at, s.disk_bytes, s.counted_at
                   from account_status s
                   left join worker_lease la on la.name = 'account:' || s.account_id
                   left ",
                held!()
            ),
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let served: bool = r.get(2);
            let history = r.get::<_, Option<i32>>(5).map(|pages| HistoryProgress {
                pages: pages.max(0) as u32,
                messages: r.get::<_, Option<i64>>(6).unwrap_or(0).max(0) as u64,
                percent: r
                    .get::<_, Option<i16>>(7)
                    .and_then(|p| u8::try_from(p).ok()),
            });
            let archive = r
                .get::<_, Option<DateTime<Utc>>>(13)
                .map(|counted_at| ArchiveCounts {
                    messages: r.get::<_, Option<i64>>(8).unwrap_or(0),
                    chats: r.get::<_, Option<i64>>(9).unwrap_or(0),
                    media: r.get::<_, Option<i64>>(10).unwrap_or(0),
                    newest_at: r.get(11),
                    disk_bytes: r.get::<_, Option<i64>>(12).unwrap_or(0),
                    counted_at,
                });
            let recorded = Recorded {
                state: served.then(|| SyncState::parse(r.get(1))).flatten(),
                since: Some(if served { r.get(3) } else { r.get(4) }),
                history: history.filter(|_| served),
                archive,
            };
            (r.get(0), recorded)
        })
        .collect())
}
