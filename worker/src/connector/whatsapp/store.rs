//! The device store: the linked device's keys and Signal sessions, kept by whatsapp-rust's
//! SQLite backend in one file under `WAZAP_DATA_DIR` (never in Postgres, never in the repo).
//! SQLite, not an own Postgres backend, because upstream ships it crash-tested and the ~80
//! trait methods of a Postgres backend would churn with every minor release. One process owns
//! the store at a time: [`StoreLock`] is an exclusive OS file lock next to it, so `serve` and
//! `link` can never drive the same device at once (two connections would replace each other).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use whatsapp_rust::store::SqliteStore;

/// The store file's name inside the data directory.
const STORE_FILE: &str = "whatsapp.sqlite";
/// The lock file's name inside the data directory.
const LOCK_FILE: &str = "whatsapp.lock";

/// Where the device store of one account lives.
#[derive(Debug, Clone)]
pub struct StorePaths {
    dir: PathBuf,
}

impl StorePaths {
    /// The store inside `data_dir` (created on first use).
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: data_dir.into(),
        }
    }

    /// The store of `account` inside `data_dir`: the default account's is `data_dir` itself
    /// (where it was before there were several accounts), another's `data_dir/accounts/<id>`.
    pub fn for_account(data_dir: &Path, account: &str) -> Self {
        if account == wazap_shared::ids::DEFAULT_ACCOUNT {
            Self::new(data_dir)
        } else {
            Self::new(data_dir.join("accounts").join(account))
        }
    }

    /// The SQLite file.
    pub fn file(&self) -> PathBuf {
        self.dir.join(STORE_FILE)
    }

    /// Take the exclusive lock, creating the directory (mode 0700: it holds keys) if needed.
    /// Fails at once when another process holds it.
    pub fn lock(&self) -> anyhow::Result<StoreLock> {
        create_private_dir(&self.dir)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))
            .context("open the device store lock")?;
        match file.try_lock() {
            Ok(()) => Ok(StoreLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
                "another wazap-worker process is using the WhatsApp device store in this data \
                 directory (stop it, or link from the owner dashboard)"
            ),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(e).context("lock the WhatsApp device store")
            }
        }
    }

    /// [`StorePaths::lock`], retried for up to `wait` while another holder exits (a restart
    /// that overlaps the previous process's shutdown).
    pub async fn lock_within(&self, wait: std::time::Duration) -> anyhow::Result<StoreLock> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match self.lock() {
                Ok(lock) => return Ok(lock),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            }
        }
    }

    /// Open (or create) the store, readable by this user only. Requires the lock.
    pub async fn open(&self, _lock: &StoreLock) -> anyhow::Result<Arc<SqliteStore>> {
        let path = self.file();
        let url = path
            .to_str()
            .context("the data directory path is not valid UTF-8")?;
        let store = SqliteStore::new(url)
            .await
            .context("open the WhatsApp device store")?;
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .context("restrict the WhatsApp device store to this user")?;
        Ok(Arc::new(store))
    }

    /// Delete the store (the device's keys): after an unlink or a logout from the phone, so the
    /// next start pairs a fresh device. Requires the lock and no open client.
    pub fn wipe(&self, _lock: &StoreLock) -> anyhow::Result<()> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.file().into_os_string();
            name.push(suffix);
            match std::fs::remove_file(&name) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).context("delete the WhatsApp device store"),
            }
        }
        Ok(())
    }
}

/// Proof that this process owns the device store; released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

/// `dir` and its parents, the last one readable by this user only.
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .context("create the data directory (WAZAP_DATA_DIR)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("wazap-store-{}", std::process::id()));
        let paths = StorePaths::new(&dir);
        let first = paths.lock().unwrap();
        let err = paths.lock().unwrap_err().to_string();
        assert!(err.contains("another wazap-worker"), "{err}");
        drop(first);
        let again = paths.lock().unwrap();
        std::fs::write(paths.file(), b"x").unwrap();
        paths.wipe(&again).unwrap();
        assert!(!paths.file().exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
