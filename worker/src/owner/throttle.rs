//! Failed-login throttling, persisted in Postgres so a restart does not reset it, at two levels:
//!
//! - **per source** (`owner_login_sources`, keyed by [`Source`]): the first [`FREE_FAILURES`]
//!   wrong passwords cost nothing; each one after that locks that source for twice as long as the
//!   one before (1 s, 2 s, 4 s, … at most [`MAX_LOCK_SECS`]). A stranger's burst locks the
//!   stranger out, not the owner logging in from elsewhere. A successful login clears its source.
//! - **globally** (the one row of `owner_login_throttle`): [`GLOBAL_FREE_FAILURES`] failures from
//!   all sources together, then every source is locked 1 s, 2 s, … at most
//!   [`GLOBAL_MAX_LOCK_SECS`], so guessing from many addresses at once stays bounded (about one
//!   guess a minute) while the owner is kept out for at most a minute at a time. The global count
//!   is forgotten [`GLOBAL_FORGET_SECS`] after the last failure, and a success takes back only its
//!   own attempt (the owner succeeding does not end someone else's attack).
//!
//! While either lock holds, attempts are refused before any hashing, with the right password too,
//! and counted nowhere (a burst cannot stretch a lock). An attempt is counted before its password
//! is checked, by the one statement that also checks both locks ([`claim`]): it locks the global
//! row first, so concurrent claims run one after another and none slips past a lock another one
//! is setting — 50 wrong passwords at once are 50 attempts, each counted or refused. Locks are
//! bounded so they cannot shut the owner out for long (OWASP: lockout must not become a DoS).

use deadpool_postgres::GenericClient;

use super::source::Source;

/// Wrong passwords a source may send before its first lock.
pub const FREE_FAILURES: i32 = 5;
/// A source's longest lock, in seconds.
pub const MAX_LOCK_SECS: f64 = 900.0;
/// Wrong passwords from all sources together before the first global lock.
pub const GLOBAL_FREE_FAILURES: i32 = 100;
/// The longest global lock, in seconds.
pub const GLOBAL_MAX_LOCK_SECS: f64 = 60.0;
/// The global count starts again this long after the last failure.
pub const GLOBAL_FORGET_SECS: f64 = 3600.0;
/// A source not heard from for this long is forgotten (its row deleted at the next claim).
pub const SOURCE_FORGET_SECS: f64 = 24.0 * 3600.0;

/// What [`claim`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Counted as a failure (until [`record_success`]); check the password.
    Counted,
    /// This source is locked: refused, nothing counted.
    SourceLocked,
    /// Every source is locked (the global allowance is spent): refused, nothing counted.
    AllLocked,
}

/// Claim a login attempt from `source`: count it as a failure of the source and globally (until
/// [`record_success`] says otherwise), locking whichever is over its allowance — or, while either
/// is locked, refuse it and count nothing. One statement: `g` locks the global row (so claims
/// queue on it and each sees the last one's counts), `src` counts the source unless a lock holds,
/// `bump` counts globally what `src` counted. (Exponents stop at 30, far past either cap, so a
/// months-long attack cannot overflow `power`.)
pub async fn claim(
    db: &impl GenericClient,
    source: &Source,
) -> Result<Claim, tokio_postgres::Error> {
    db.execute(
        "delete from owner_login_sources
          where last_failure_at <= now() - $1::float8 * interval '1 second'
            and (locked_until is null or locked_until <= now())",
        &[&SOURCE_FORGET_SECS],
    )
    .await?;
    let row = db
        .query_one(
            "with g as (
                 select failures, locked_until, last_failure_at
                   from owner_login_throttle for update
             ),
             gs as (
                 select case when last_failure_at > now() - $6::float8 * interval '1 second'
                             then failures else 0 end as failures,
                        coalesce(locked_until > now(), false) as locked
                   from g
             ),
             src as (
                 insert into owner_login_sources as s (source, failures, locked_until, last_failure_at)
                 select $1, 1,
                        case when 1 > $2::int4 then now() + interval '1 second' end, -- 2^0 s
                        now()
                   from gs where not gs.locked
                 on conflict (source) do update
                    set failures = s.failures + 1,
                        locked_until = case when s.failures + 1 > $2::int4
                            then now() + least($3::float8, power(2, least(s.failures - $2, 30))::float8)
                                 * interval '1 second'
                            end,
                        last_failure_at = now()
                  where s.locked_until is null or s.locked_until <= now()
                 returning 1
             ),
             bump as (
                 update owner_login_throttle
                    set failures = gs.failures + 1,
                        locked_until = case when gs.failures + 1 > $4::int4
                            then now() + least($5::float8, power(2, least(gs.failures - $4, 30))::float8)
                                 * interval '1 second'
                            end,
                        last_failure_at = now()
                   from gs, src
                 returning 1
             )
             select (select count(*) from src) = 1, (select locked from gs)",
            &[
                &source.key(),
                &FREE_FAILURES,
                &MAX_LOCK_SECS,
                &GLOBAL_FREE_FAILURES,
                &GLOBAL_MAX_LOCK_SECS,
                &GLOBAL_FORGET_SECS,
            ],
        )
        .await?;
    Ok(match (row.get::<_, bool>(0), row.get::<_, bool>(1)) {
        (true, _) => Claim::Counted,
        (false, true) => Claim::AllLocked,
        (false, false) => Claim::SourceLocked,
    })
}

/// A successful login from `source`: forget that source's failures, and take back the one this
/// attempt added to the global count (the rest of that count stays).
pub async fn record_success(
    db: &impl GenericClient,
    source: &Source,
) -> Result<(), tokio_postgres::Error> {
    db.execute(
        "with forgotten as (delete from owner_login_sources where source = $1)
         update owner_login_throttle set failures = greatest(failures - 1, 0)",
        &[&source.key()],
    )
    .await?;
    Ok(())
}

/// A new password: forget every failure, per source and global.
pub async fn reset_all(db: &impl GenericClient) -> Result<(), tokio_postgres::Error> {
    db.batch_execute(
        "delete from owner_login_sources;
         update owner_login_throttle set failures = 0, locked_until = null, last_failure_at = null;",
    )
    .await
}
