//! Owner sessions: a new random id at every login (so a cookie planted before login is
//! worthless: no fixation), kept in Postgres only as its SHA-256, with a CSRF token bound to it,
//! an idle limit ([`IDLE_SECS`]) and an absolute one ([`ABSOLUTE_SECS`]). Logout deletes the
//! row, so a replayed cookie is refused server-side.

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use sha2::{Digest as _, Sha256};
use wazap_shared::ErrorCode;
use wazap_shared::wire::owner::SessionInfo;

use super::password;
use super::source::Source;
use super::throttle::{self, Claim};
use crate::error::{Context as _, Error};
use crate::grants::random_hex;

/// A session ends after this long without a request.
pub const IDLE_SECS: f64 = 30.0 * 60.0;
/// A session ends this long after login, whatever happens.
pub const ABSOLUTE_SECS: i64 = 8 * 3600;

/// A session that passed [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its CSRF token.
    pub csrf: String,
    /// Its absolute end.
    pub expires_at: DateTime<Utc>,
}

/// What [`check`] decided about a valid session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The session is current (and, for a write, the CSRF token matched).
    Valid(Session),
    /// A write whose CSRF token is missing or not this session's.
    CsrfRejected,
}

fn digest(session_id: &str) -> Vec<u8> {
    Sha256::digest(session_id.as_bytes()).to_vec()
}

fn locked() -> Error {
    Error::new(
        ErrorCode::RateLimited,
        "too many failed logins; try again later",
    )
}

fn unauthenticated() -> Error {
    Error::new(ErrorCode::Unauthenticated, "log in first")
}

/// Equal strings, compared in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Check the password (throttled per `source` and globally) and start a new session; `old`
/// (the cookie the browser came with, if any) is deleted. A wrong password and an unset one get
/// the same answer.
pub async fn login(
    pool: &Pool,
    old: Option<&str>,
    pw: &str,
    source: &Source,
) -> Result<SessionInfo, Error> {
    let client = pool.get().await.context("owner login: database")?;
    match throttle::claim(&client, source)
        .await
        .context("owner login: database")?
    {
        Claim::Counted => {}
        Claim::SourceLocked => {
            tracing::warn!(%source, "owner login refused: this source is locked after repeated failures");
            return Err(locked());
        }
        Claim::AllLocked => {
            tracing::warn!(%source, "owner login refused: all sources locked after many failures");
            return Err(locked());
        }
    }
    let stored: Option<String> = client
        .query_opt("select password_hash from owner_credentials", &[])
        .await
        .context("owner login: database")?
        .map(|r| r.get(0));
    let ok = match (&stored, password::acceptable(pw)) {
        (Some(phc), true) => match password::verify(pw, phc).await {
            Ok(ok) => ok,
            Err(e) if e.is::<password::Busy>() => {
                tracing::warn!(%source, "owner login refused: too many password checks at once");
                return Err(Error::new(
                    ErrorCode::RateLimited,
                    "too many logins at once; try again in a moment",
                ));
            }
            Err(e) => Err(e).context("owner login: verify")?,
        },
        _ => false,
    };
    if !ok {
        // Counted by the claim.
        tracing::warn!(%source, password_set = stored.is_some(), "owner login failed");
        return Err(Error::new(ErrorCode::Unauthenticated, "wrong password"));
    }
    throttle::record_success(&client, source)
        .await
        .context("owner login: database")?;
    let id = random_hex(32).context("owner login: id")?;
    let csrf = random_hex(32).context("owner login: csrf")?;
    if let Some(old) = old {
        client
            .execute(
                "delete from owner_sessions where id_sha256 = $1",
                &[&digest(old)],
            )
            .await
            .context("owner login: database")?;
    }
    client
        .execute(
            "delete from owner_sessions where expires_at <= now()
                or last_seen_at <= now() - $1::float8 * interval '1 second'",
            &[&IDLE_SECS],
        )
        .await
        .context("owner login: database")?;
    let expires_at = Utc::now() + chrono::Duration::seconds(ABSOLUTE_SECS);
    client
        .execute(
            "insert into owner_sessions (id_sha256, csrf, expires_at) values ($1, $2, $3)",
            &[&digest(&id), &csrf, &expires_at],
        )
        .await
        .context("owner login: database")?;
    tracing::info!(%source, "owner logged in");
    Ok(SessionInfo {
        session: Some(id),
        csrf,
        expires_at,
    })
}

/// Check a session (and for a `write`, its CSRF token), refreshing its idle timer. No,
/// unknown or expired session: `unauthenticated`.
pub async fn check(
    pool: &Pool,
    session: Option<&str>,
    csrf: Option<&str>,
    write: bool,
) -> Result<Checked, Error> {
    let Some(session) = session.filter(|s| !s.is_empty()) else {
        return Err(unauthenticated());
    };
    let client = pool.get().await.context("owner session: database")?;
    let row = client
        .query_opt(
            "update owner_sessions set last_seen_at = now()
              where id_sha256 = $1 and expires_at > now()
                and last_seen_at > now() - $2::float8 * interval '1 second'
              returning csrf, expires_at",
            &[&digest(session), &IDLE_SECS],
        )
        .await
        .context("owner session: query")?
        .ok_or_else(unauthenticated)?;
    let stored: String = row.get(0);
    if write && !csrf.is_some_and(|c| same(c, &stored)) {
        tracing::warn!("owner write refused: CSRF token missing or wrong");
        return Ok(Checked::CsrfRejected);
    }
    Ok(Checked::Valid(Session {
        csrf: stored,
        expires_at: row.get(1),
    }))
}

/// End a session (idempotent).
pub async fn logout(pool: &Pool, session: &str) -> Result<(), Error> {
    pool.get()
        .await
        .context("owner logout: database")?
        .execute(
            "delete from owner_sessions where id_sha256 = $1",
            &[&digest(session)],
        )
        .await
        .context("owner logout: delete")?;
    tracing::info!("owner logged out");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_comparison_needs_the_whole_token() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(!same("", "a"));
    }
}
