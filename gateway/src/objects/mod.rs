//! The gateway's side of media hand-over (DESIGN §8): validated bytes go into this deployment's
//! JetStream object-store bucket, named by their SHA-256, and only a [`MediaRef`] rides in the
//! RPC body (NATS refuses bodies over 1 MB). The bucket is opened (or created: 1 h TTL, at most
//! `MEDIA_MAX_BYTES`, `WAZAP_NATS_REPLICAS` copies) on first use, so a gateway starts and serves read tools without JetStream.
//!
//! What a send may store, and for how long:
//! - each credential has a share of bytes in flight through this gateway ([`quota`]); over it,
//!   or when JetStream refuses because the bucket is full, the send is `busy`, nothing kept;
//! - a write that fails midway purges what it wrote ([`write`]);
//! - when the send's RPC ends with an error other than `send_outcome_unknown`, the gateway
//!   deletes the object at once, unless another request relies on the same bytes ([`claims`]);
//!   otherwise the worker deletes it once it is done with it, and the TTL takes anything missed.

mod claims;
mod quota;
mod write;

use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::{self, object_store};
use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use tokio::sync::{Mutex, OnceCell};
use tokio::time::Instant;
use wazap_shared::wire::send::MediaRef;
use wazap_shared::{ErrorCode, RpcError};

use self::claims::{ClaimTable, Ended, Made, Version};
use self::quota::{Quota, QuotaHold};
use self::write::{Bucket, WriteError};

pub(crate) use self::quota::PER_CREDENTIAL_BYTES;

/// Longest wait for opening the bucket and storing one object.
const STORE_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest wait for deleting the object of a failed send.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// A lazily opened handle to the media bucket; cheap to share (`Arc`).
pub(crate) struct MediaStore {
    inner: Arc<Inner>,
    quota: Arc<Quota>,
}

struct Inner {
    js: jetstream::Context,
    bucket: String,
    /// Copies of the bucket on a cluster (`WAZAP_NATS_REPLICAS`).
    replicas: usize,
    opened: OnceCell<Bucket>,
    /// Held across "is it there yet? else put", and across a delete: a put over an existing
    /// name replaces the object and purges its chunks, which would cut off a worker reading the
    /// same bytes for an identical request; and a delete must not slip between another
    /// request's finding the object and its claim on it.
    writing: Mutex<()>,
    /// The names this gateway's requests in flight rely on (taken under `writing`).
    claims: StdMutex<ClaimTable>,
}

impl std::fmt::Debug for MediaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaStore")
            .field("bucket", &self.inner.bucket)
            .finish_non_exhaustive()
    }
}

/// One send's stored media: the reference for the RPC, the send's claim on the object and its
/// bytes on the credential's share. Hand it back with [`MediaStore::finish`] when the RPC ends;
/// dropped without that (the request went away mid-call), the object is left to the worker and
/// the TTL, as for an unknown outcome.
#[derive(Debug)]
pub(crate) struct Stored {
    /// What the RPC carries.
    pub(crate) media: MediaRef,
    claim: Claim,
    _quota: QuotaHold,
}

impl MediaStore {
    /// A store in `bucket` (of `replicas` copies) over `nats`, with `per_credential` bytes in
    /// flight per credential; nothing is contacted until the first [`Self::put`].
    pub(crate) fn new(
        nats: async_nats::Client,
        bucket: String,
        replicas: usize,
        per_credential: u64,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                js: jetstream::new(nats),
                bucket,
                replicas,
                opened: OnceCell::new(),
                writing: Mutex::new(()),
                claims: StdMutex::new(ClaimTable::default()),
            }),
            quota: Quota::new(per_credential),
        }
    }

    /// Store `bytes` for a send of `credential` (a connection id) under their lowercase hex
    /// SHA-256, reusing an object already stored under that name. `busy` when the credential's
    /// share or the bucket is full; other failures are logged once (never the bytes) and
    /// answered as `worker_unavailable`. Nothing of a failed put stays stored.
    pub(crate) async fn put(&self, credential: &str, bytes: Bytes) -> Result<Stored, RpcError> {
        let size = bytes.len();
        let quota = self
            .quota
            .try_take(credential, size as u64)
            .ok_or_else(over_quota)?;
        let object = hex_sha256(&bytes);
        // Its own task: a request that goes away mid-write (its client gone) must not stop the
        // write halfway, which would leave chunks behind. The claim it returns, dropped unused,
        // deletes what it stored.
        let inner = Arc::clone(&self.inner);
        let name = object.clone();
        let task = tokio::spawn(async move {
            let claim = inner.store(&name, &bytes).await?;
            Ok::<_, RpcError>((claim, quota))
        });
        let (mut claim, quota) = task
            .await
            .map_err(|e| unavailable(&format!("store task: {e}")))??;
        // From here the RPC may leave at any await: a request dropped now has an unknown
        // outcome.
        claim.if_dropped = Ended::Spared;
        Ok(Stored {
            media: MediaRef {
                object,
                size: size as u64,
            },
            claim,
            _quota: quota,
        })
    }

    /// The send's RPC ended with `error` (`None`: answered, whatever the state): give the bytes
    /// back to the credential's share, and, when it failed with a known outcome and no other
    /// request relies on the object, delete it before the caller answers (so a retry finds
    /// none of it).
    pub(crate) async fn finish(&self, stored: Stored, error: Option<&RpcError>) {
        let ended = match error {
            Some(e) if e.code != ErrorCode::SendOutcomeUnknown => Ended::Failed,
            _ => Ended::Spared,
        };
        let Stored { claim, _quota, .. } = stored;
        claim.release(ended).await;
    }
}

impl Inner {
    /// Open the bucket (once), then write or reuse `name`, and claim it.
    async fn store(self: &Arc<Self>, name: &str, bytes: &Bytes) -> Result<Claim, RpcError> {
        let deadline = Instant::now() + STORE_TIMEOUT;
        let bucket = tokio::time::timeout_at(deadline, self.open())
            .await
            .map_err(|_| unavailable("open bucket: timed out"))?
            .map_err(|e| unavailable(&format!("open bucket: {e}")))?;
        // Waiting this long behind other writes means the store is saturated: `busy`.
        let _writing = tokio::time::timeout_at(deadline, self.writing.lock())
            .await
            .map_err(|_| saturated())?;
        let existing = bucket.store.info(name).await.ok();
        if let Some(found) = existing
            .as_ref()
            .filter(|i| !i.deleted && i.size == bytes.len())
        {
            // The same bytes (same SHA-256) are already waiting: reuse them, marked as put
            // again (a fresh description), so a delete that an earlier request scheduled (the
            // worker's, or another gateway's) leaves them alone: both compare nuid and
            // description.
            let touch = object_store::UpdateMetadata {
                name: name.to_owned(),
                description: Some(new_description()),
                ..Default::default()
            };
            let marked =
                tokio::time::timeout_at(deadline, bucket.store.update_metadata(name, touch))
                    .await
                    .map_err(|_| unavailable("mark object: timed out"))?
                    .map_err(|e| unavailable(&format!("mark object: {e}")))?;
            // Deleted between the look and the mark: write it anew below.
            if !marked.deleted && marked.size == bytes.len() {
                return Ok(self.claim(
                    name,
                    Made::Reused {
                        found: version(found),
                    },
                    &marked,
                ));
            }
        }
        let info = bucket
            .write(name, bytes, new_description(), existing.as_ref(), deadline)
            .await
            .map_err(|e| match e {
                WriteError::Full => full(),
                WriteError::Failed(cause) => unavailable(&format!("put object: {cause}")),
            })?;
        Ok(self.claim(name, Made::Created, &info))
    }

    /// Open the bucket, creating it when it does not exist yet.
    async fn open(&self) -> Result<&Bucket, async_nats::Error> {
        self.opened
            .get_or_try_init(|| async {
                let store =
                    wazap_shared::bus::media_store_with(&self.js, &self.bucket, self.replicas)
                        .await?;
                let stream = self.js.get_stream(format!("OBJ_{}", self.bucket)).await?;
                Ok(Bucket {
                    js: self.js.clone(),
                    name: self.bucket.clone(),
                    store,
                    stream,
                })
            })
            .await
    }

    /// Record a request's claim on `name`, stored as `info` (under the writing lock).
    fn claim(self: &Arc<Self>, name: &str, made: Made, info: &object_store::ObjectInfo) -> Claim {
        self.claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(name, made, version(info));
        Claim {
            inner: Some(Arc::clone(self)),
            name: name.to_owned(),
            if_dropped: Ended::Failed,
        }
    }

    /// Delete object `name` if it is still `doomed` and no request here has claimed it since.
    async fn delete(&self, name: &str, doomed: Version) {
        let deleted = tokio::time::timeout(DELETE_TIMEOUT, async {
            let _writing = self.writing.lock().await;
            let claimed = self
                .claims
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_claimed(name);
            let Some(bucket) = self.opened.get() else {
                return Ok(false);
            };
            if claimed {
                return Ok(false);
            }
            match bucket.store.info(name).await {
                Ok(now) if !now.deleted && version(&now) == doomed => bucket
                    .store
                    .delete(name)
                    .await
                    .map(|()| true)
                    .map_err(|e| e.to_string()),
                _ => Ok(false),
            }
        })
        .await;
        match deleted {
            Ok(Ok(true)) => {
                tracing::debug!(object = name, "a failed send's media object was deleted")
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "a failed send's media object stays until the TTL")
            }
            Err(_) => tracing::warn!("a failed send's media object stays until the TTL: timed out"),
        }
    }
}

/// One request's reliance on an object (see [`claims`]).
struct Claim {
    inner: Option<Arc<Inner>>,
    name: String,
    /// How the request ended if the claim is dropped unreleased.
    if_dropped: Ended,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim").field("object", &self.name).finish()
    }
}

impl Claim {
    /// The request ended as `ended`: delete the object when that was the last claim and it is
    /// this gateway's to delete.
    async fn release(mut self, ended: Ended) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let doomed = inner
            .claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(&self.name, ended);
        if let Some(doomed) = doomed {
            inner.delete(&self.name, doomed).await;
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let doomed = inner
            .claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(&self.name, self.if_dropped);
        if let Some(doomed) = doomed
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let name = std::mem::take(&mut self.name);
            runtime.spawn(async move { inner.delete(&name, doomed).await });
        }
    }
}

fn version(info: &object_store::ObjectInfo) -> Version {
    Version {
        nuid: info.nuid.clone(),
        description: info.description.clone(),
    }
}

/// A fresh description: the mark that tells one write or reuse of an object from another.
fn new_description() -> String {
    uuid::Uuid::new_v4().simple().to_string()
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

fn over_quota() -> RpcError {
    tracing::info!("media send shed: the credential's media bytes in flight are at its share");
    RpcError::new(
        ErrorCode::Busy,
        "this connection has too much media in flight; retry when a send has finished",
    )
}

fn saturated() -> RpcError {
    tracing::warn!("media send shed: other media writes held the store for the whole wait");
    RpcError::new(
        ErrorCode::Busy,
        "too many media sends are being stored; retry in a moment",
    )
}

fn full() -> RpcError {
    tracing::warn!("media send shed: the media bucket is full");
    RpcError::new(
        ErrorCode::Busy,
        "the media store is full; retry in a moment",
    )
}

#[cfg(test)]
mod tests;
