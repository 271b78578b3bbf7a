//! Failed-login throttling, per account (there is one owner), persisted in
//! `owner_login_throttle` so a restart does not reset it: the first [`FREE_FAILURES`] wrong
//! passwords cost nothing; each one after that locks logins for twice as long as the one before
//! (1 s, 2 s, 4 s, … at most [`MAX_LOCK_SECS`]). While locked, attempts are refused before any
//! hashing, with the right password too, and not counted (a stranger's burst cannot stretch the
//! lock). An attempt is counted before its password is checked, by the one statement that
//! also checks the lock ([`claim`]): concurrent guesses queue on the row, so none slips past a
//! lock another one is setting. A successful login resets the counter. The lock is bounded so
//! it cannot shut the owner out for long (OWASP: lockout must not become a DoS).

use deadpool_postgres::GenericClient;

/// Wrong passwords allowed before the first lock.
pub const FREE_FAILURES: i32 = 5;
/// The longest lock, in seconds.
pub const MAX_LOCK_SECS: f64 = 900.0;

/// Claim a login attempt: count it as a failure (until [`record_success`] says otherwise) and
/// lock when over the free allowance — or, while locked, refuse it (false) and count nothing.
pub async fn claim(db: &impl GenericClient) -> Result<bool, tokio_postgres::Error> {
    let claimed = db
        .execute(
            "update owner_login_throttle
                set failures = failures + 1,
                    locked_until = case when failures + 1 > $1::int4
                        then now() + least($2::float8, power(2, failures - $1)::float8) * interval '1 second'
                        end
              where locked_until is null or locked_until <= now()",
            &[&FREE_FAILURES, &MAX_LOCK_SECS],
        )
        .await?;
    Ok(claimed == 1)
}

/// A successful login: forget the failures.
pub async fn record_success(db: &impl GenericClient) -> Result<(), tokio_postgres::Error> {
    db.execute(
        "update owner_login_throttle set failures = 0, locked_until = null",
        &[],
    )
    .await?;
    Ok(())
}
