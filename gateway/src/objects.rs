//! The gateway's side of media hand-over (DESIGN §8): validated bytes go into this deployment's
//! JetStream object-store bucket, named by their SHA-256, and only a [`MediaRef`] rides in the
//! RPC body (NATS refuses bodies over 1 MB). The bucket is opened (or created, 1 h TTL) on first
//! use, so a gateway starts and serves read tools without JetStream. The worker reads and
//! deletes the object.

use std::time::Duration;

use async_nats::jetstream::{self, object_store};
use sha2::{Digest as _, Sha256};
use tokio::sync::{Mutex, OnceCell};
use wazap_shared::wire::send::MediaRef;
use wazap_shared::{ErrorCode, RpcError};

/// Longest wait for opening the bucket or storing one object.
const STORE_TIMEOUT: Duration = Duration::from_secs(20);

/// A lazily opened handle to the media bucket.
pub(crate) struct MediaStore {
    js: jetstream::Context,
    bucket: String,
    store: OnceCell<object_store::ObjectStore>,
    /// Held across "is it there yet? else put": a put over an existing name replaces the object
    /// and purges its chunks, which would cut off a worker reading the same bytes for an
    /// identical request.
    writing: Mutex<()>,
}

impl std::fmt::Debug for MediaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaStore")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl MediaStore {
    /// A store in `bucket` over `nats`; nothing is contacted until the first [`Self::put`].
    pub(crate) fn new(nats: async_nats::Client, bucket: String) -> Self {
        Self {
            js: jetstream::new(nats),
            bucket,
            store: OnceCell::new(),
            writing: Mutex::new(()),
        }
    }

    /// Store `bytes` under their lowercase hex SHA-256 (reusing an object already stored under
    /// that name) and return the reference. Failures are logged once (never the bytes) and
    /// answered as `worker_unavailable`.
    pub(crate) async fn put(&self, bytes: &[u8]) -> Result<MediaRef, RpcError> {
        let object = hex_sha256(bytes);
        let stored = tokio::time::timeout(STORE_TIMEOUT, async {
            let store = self
                .store
                .get_or_try_init(|| self.open())
                .await
                .map_err(|e| format!("open bucket: {e}"))?;
            let _writing = self.writing.lock().await;
            if let Ok(info) = store.info(&object).await
                && !info.deleted
                && info.size == bytes.len()
            {
                // The same bytes (same SHA-256) are already waiting: reuse them, marked as put
                // again (a fresh description), so a worker's delete that the last request
                // naming them scheduled leaves them alone (it compares nuid and description).
                let touch = object_store::UpdateMetadata {
                    name: object.clone(),
                    description: Some(uuid::Uuid::new_v4().simple().to_string()),
                    ..Default::default()
                };
                return store
                    .update_metadata(&object, touch)
                    .await
                    .map_err(|e| format!("mark object: {e}"));
            }
            let mut reader = bytes;
            store
                .put(object.as_str(), &mut reader)
                .await
                .map_err(|e| format!("put object: {e}"))
        })
        .await;
        match stored {
            Ok(Ok(info)) if info.size == bytes.len() => Ok(MediaRef {
                object,
                size: bytes.len() as u64,
            }),
            Ok(Ok(_)) => Err(unavailable("stored size differs")),
            Ok(Err(cause)) => Err(unavailable(&cause)),
            Err(_) => Err(unavailable("timed out")),
        }
    }

    /// Open the bucket, creating it when it does not exist yet.
    async fn open(&self) -> Result<object_store::ObjectStore, async_nats::Error> {
        wazap_shared::bus::media_store(&self.js, &self.bucket).await
    }
}

/// Lowercase hex SHA-256.
pub(crate) fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn unavailable(cause: &str) -> RpcError {
    tracing::warn!(error = cause, "media could not be stored for the worker");
    RpcError::new(
        ErrorCode::WorkerUnavailable,
        "the media store (NATS JetStream) is unavailable; retry later",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_hex_sha256() {
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
