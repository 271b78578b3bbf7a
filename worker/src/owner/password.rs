//! The owner password: argon2id with m = 19 MiB, t = 2, p = 1 (OWASP's minimum), stored as a
//! PHC string in `owner_credentials`. Hashing runs on the blocking pool (each hash holds
//! 19 MiB and a core for a while), only after the throttle allowed the attempt, and at most
//! [`HASHES_AT_ONCE`] at a time: a burst of logins waits its turn briefly, then is refused, so
//! it cannot take the worker's memory or cores.

use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Memory cost in KiB (19 MiB).
pub const M_COST_KIB: u32 = 19 * 1024;
/// Passes.
pub const T_COST: u32 = 2;
/// Lanes.
pub const P_COST: u32 = 1;
/// Shortest accepted password, in characters.
pub const MIN_CHARS: usize = 8;
/// Longest accepted password, in bytes: longer ones are refused before any hashing, so a huge
/// password cannot cost the worker more than a normal one.
pub const MAX_BYTES: usize = 1024;

/// How many argon2id hashes may run at once.
pub const HASHES_AT_ONCE: usize = 2;
/// How long a hash waits for its turn before it is refused ([`Busy`]).
const HASH_WAIT: Duration = Duration::from_secs(2);
static HASHING: Semaphore = Semaphore::const_new(HASHES_AT_ONCE);
/// Hashes started by this process, so a test can tell that a refusal ran none.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// How many argon2id hashes this process has started (hashing or verifying).
pub fn hashes_started() -> u64 {
    STARTED.load(Ordering::Relaxed)
}

/// [`HASHES_AT_ONCE`] hashes ran for all of [`HASH_WAIT`]: nothing was checked.
#[derive(Debug, thiserror::Error)]
#[error("too many password checks at once")]
pub struct Busy;

/// A turn to hash, held until the hash ends (moved into its blocking task, so a caller that
/// gives up does not free the turn early).
async fn turn() -> Result<SemaphorePermit<'static>, Busy> {
    match tokio::time::timeout(HASH_WAIT, HASHING.acquire()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(Busy),
    }
}

/// Why a password was not set.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Shorter than [`MIN_CHARS`] or longer than [`MAX_BYTES`].
    #[error("the password must be 8 characters to 1024 bytes long")]
    Length,
    /// Hashing or storing failed.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

fn hasher() -> anyhow::Result<Argon2<'static>> {
    let params = Params::new(M_COST_KIB, T_COST, P_COST, None)
        .map_err(|e| anyhow::anyhow!("argon2 parameters: {e}"))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// True when `password` has an acceptable length.
pub fn acceptable(password: &str) -> bool {
    password.len() <= MAX_BYTES && password.chars().count() >= MIN_CHARS
}

/// The PHC string of `password` with a fresh 16-byte salt.
pub async fn hash(password: &str) -> anyhow::Result<String> {
    let password = password.to_owned();
    let turn = turn().await?;
    STARTED.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
        let phc = hasher()?
            .hash_password_with_salt(password.as_bytes(), &salt)
            .map_err(|e| anyhow::anyhow!("argon2: {e}"))?;
        Ok(phc.to_string())
    })
    .await?
}

/// Whether `password` matches the stored PHC string (constant-time compare inside argon2).
pub async fn verify(password: &str, phc: &str) -> anyhow::Result<bool> {
    let (password, phc) = (password.to_owned(), phc.to_owned());
    let turn = turn().await?;
    STARTED.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        Ok(hasher()?
            .verify_password(password.as_bytes(), phc.as_str())
            .is_ok())
    })
    .await?
}

/// Set (or replace) the owner password. Every session ends: whoever knew the old one is out.
pub async fn set_password(pool: &Pool, password: &str) -> Result<(), PasswordError> {
    if !acceptable(password) {
        return Err(PasswordError::Length);
    }
    let phc = hash(password).await?;
    let mut client = pool.get().await.map_err(anyhow::Error::from)?;
    let tx = client.transaction().await.map_err(anyhow::Error::from)?;
    tx.execute(
        "insert into owner_credentials (password_hash) values ($1)
         on conflict (singleton) do update set password_hash = $1, updated_at = now()",
        &[&phc],
    )
    .await
    .map_err(anyhow::Error::from)?;
    tx.execute("delete from owner_sessions", &[])
        .await
        .map_err(anyhow::Error::from)?;
    super::throttle::reset_all(&tx)
        .await
        .map_err(anyhow::Error::from)?;
    tx.commit().await.map_err(anyhow::Error::from)?;
    tracing::info!("owner password set");
    Ok(())
}

/// At start-up: make `password` (from `WAZAP_OWNER_PASSWORD`) the owner password when none is
/// set yet; a password already set is kept. Returns whether it was set.
pub async fn bootstrap_password(pool: &Pool, password: Option<&str>) -> anyhow::Result<bool> {
    let Some(password) = password else {
        return Ok(false);
    };
    let exists = pool
        .get()
        .await?
        .query_opt("select 1 from owner_credentials", &[])
        .await?
        .is_some();
    if exists {
        return Ok(false);
    }
    match set_password(pool, password).await {
        Ok(()) => Ok(true),
        Err(PasswordError::Length) => {
            anyhow::bail!(
                "WAZAP_OWNER_PASSWORD: the password must be 8 characters to 1024 bytes long"
            )
        }
        Err(PasswordError::Failed(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_are_argon2id_with_the_owasp_parameters() {
        let phc = hash("correct horse").await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify("correct horse", &phc).await.unwrap());
        assert!(!verify("correct horsE", &phc).await.unwrap());
        assert!(!acceptable("short"));
        assert!(!acceptable(&"x".repeat(MAX_BYTES + 1)));
        assert!(acceptable(&"x".repeat(64)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hash_past_the_cap_waits_its_turn_then_is_refused() {
        let held: Vec<_> = futures::future::join_all((0..HASHES_AT_ONCE).map(|_| turn()))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        let started = tokio::time::Instant::now();
        assert!(turn().await.is_err());
        assert_eq!(started.elapsed(), HASH_WAIT);
        drop(held);
        assert!(turn().await.is_ok());
    }
}
