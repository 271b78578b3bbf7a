//! The statements that apply chat-statistics deltas: one `UPDATE` over the deltas' arrays
//! (or scalars for one chat), touching only the rows that change.

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::types::ToSql;

use super::{ChatDelta, Deltas};

/// Deltas below this many chats are applied in one statement.
const HALVES_FROM: usize = 256;

/// Apply history `deltas` in two halves on two connections at once: a history page can touch
/// thousands of chats, and this is the one step of its ingest nothing else runs beside. The
/// halves share no chat, and history deltas can be applied twice (they carry no unread
/// count), so a half that fails leaves the whole to be applied again.
pub(super) async fn apply_halves(
    pool: &Pool,
    account: &str,
    deltas: &Deltas,
) -> anyhow::Result<()> {
    if deltas.len() < HALVES_FROM {
        return apply(&pool.get().await?, account, deltas).await;
    }
    let (a, b) = (pool.get().await?, pool.get().await?);
    let (sa, sb) = (
        a.prepare_cached(APPLY).await?,
        b.prepare_cached(APPLY).await?,
    );
    let (ca, cb) = (
        Columns::of(deltas.iter().step_by(2)),
        Columns::of(deltas.iter().skip(1).step_by(2)),
    );
    let (pa, pb) = (ca.params(&account), cb.params(&account));
    let (ra, rb) = tokio::join!(a.execute(&sa, &pa), b.execute(&sb, &pb));
    ra?;
    rb?;
    Ok(())
}

/// Apply `deltas` to the chats of `account`, touching only rows that change.
pub(crate) async fn apply(
    tx: &impl GenericClient,
    account: &str,
    deltas: &Deltas,
) -> anyhow::Result<()> {
    if deltas.is_empty() {
        return Ok(());
    }
    let stmt = tx.prepare_cached(statement(deltas)).await?;
    let cols = Columns::of(deltas);
    tx.execute(&stmt, &cols.params(&account)).await?;
    Ok(())
}

/// The update of the chat statistics, reading the deltas from `$from` (`u`: chat_id, ts, pos,
/// unread, reset, push_name), touching only rows that change.
macro_rules! apply_sql {
    ($from:literal) => {
        concat!(
            "update chats c set
     last_message_at = greatest(c.last_message_at, u.ts),
     last_position = greatest(c.last_position, u.pos),
     unread_count = case when u.reset then u.unread else c.unread_count + u.unread end,
     push_name = coalesce(u.push_name, c.push_name)
   from ",
            $from,
            "
  where c.account_id = $1 and c.chat_id = u.chat_id
    and ((u.ts is not null and (c.last_message_at is null or u.ts > c.last_message_at))
      or (u.pos is not null and (c.last_position is null or u.pos > c.last_position))
      or u.unread <> 0
      or (u.reset and c.unread_count <> 0)
      or (u.push_name is not null and u.push_name is distinct from c.push_name))"
        )
    };
}

/// The statement [`apply`] runs for several chats, with [`Columns`] as `$2..$7` (arrays).
pub(crate) const APPLY: &str = apply_sql!(
    "unnest($2::text[], $3::timestamptz[], $4::int8[], $5::int4[], $6::bool[],
               $7::text[]) as u(chat_id, ts, pos, unread, reset, push_name)"
);

/// The statement for one chat (a live delivery's usual case), with [`Columns`] as `$2..$7`
/// (scalars). Why a second statement: Postgres plans [`APPLY`] anew at every call, as its
/// custom plan counts the arrays' elements while a generic one guesses 100 rows, and that
/// planning cost twice the update itself; this one keeps its generic plan.
pub(crate) const APPLY_ONE: &str = apply_sql!(
    "(select $2::text as chat_id, $3::timestamptz as ts, $4::int8 as pos,
                $5::int4 as unread, $6::bool as reset, $7::text as push_name) u"
);

/// The statement applying `deltas` (not empty): [`APPLY_ONE`] or [`APPLY`].
pub(crate) fn statement(deltas: &Deltas) -> &'static str {
    if deltas.len() == 1 { APPLY_ONE } else { APPLY }
}

/// Deltas as the parameters of [`statement`]: one element per chat.
pub(crate) struct Columns<'a> {
    chat: Vec<&'a str>,
    ts: Vec<Option<DateTime<Utc>>>,
    pos: Vec<Option<i64>>,
    unread: Vec<i32>,
    reset: Vec<bool>,
    push: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    /// The arrays of `deltas`, one element per chat.
    pub(crate) fn of(deltas: impl IntoIterator<Item = (&'a String, &'a ChatDelta)>) -> Self {
        let deltas = deltas.into_iter();
        let n = deltas.size_hint().0;
        let mut c = Columns {
            chat: Vec::with_capacity(n),
            ts: Vec::with_capacity(n),
            pos: Vec::with_capacity(n),
            unread: Vec::with_capacity(n),
            reset: Vec::with_capacity(n),
            push: Vec::with_capacity(n),
        };
        for (chat, d) in deltas {
            c.chat.push(chat.as_str());
            c.ts.push(d.ts);
            c.pos.push(d.position);
            c.unread.push(d.unread);
            c.reset.push(d.reset);
            c.push.push(d.push_name.as_deref());
        }
        c
    }

    /// The parameters of [`statement`] for `account`: scalars for one chat, else arrays.
    pub(crate) fn params<'p>(&'p self, account: &'p &'p str) -> [&'p (dyn ToSql + Sync); 7] {
        if self.chat.len() == 1 {
            return [
                account,
                &self.chat[0],
                &self.ts[0],
                &self.pos[0],
                &self.unread[0],
                &self.reset[0],
                &self.push[0],
            ];
        }
        [
            account,
            &self.chat,
            &self.ts,
            &self.pos,
            &self.unread,
            &self.reset,
            &self.push,
        ]
    }
}
