//! Writing one object into the media bucket, and taking it out again. The object store's own
//! `put` stops where an error meets it and leaves the chunks it wrote to the bucket's TTL (an
//! hour of up to 8 MiB, counted against the bucket's `max_bytes`); this one writes the same
//! layout (chunks on `$O.<bucket>.C.<nuid>`, then the metadata on `$O.<bucket>.M.<name>`, so
//! the worker's reader and the object store's `info`/`get`/`delete` read it as their own) and,
//! when any step fails, purges what it wrote before answering. A refusal because the bucket is
//! full (its `max_bytes`, or the server's storage) is told apart ([`WriteError::Full`]).

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::object_store::{ObjectInfo, ObjectOptions, ObjectStore};
use async_nats::jetstream::{self, stream::Stream};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use tokio::time::Instant;

/// The object store's chunk size, so objects look like its own.
const CHUNK: usize = 128 * 1024;

/// The longest a cleanup after a failed write may take (it runs after the write's deadline).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The bucket as this gateway writes it: the object store (metadata), its stream (purges) and
/// the JetStream context (publishes).
pub(super) struct Bucket {
    pub(super) js: jetstream::Context,
    pub(super) name: String,
    pub(super) store: ObjectStore,
    pub(super) stream: Stream,
}

/// Why a write failed; what it wrote is gone either way (best effort: a cleanup that fails too
/// leaves it to the TTL, and is logged).
#[derive(Debug)]
pub(super) enum WriteError {
    /// JetStream refused to store more: the bucket's `max_bytes` or the server's storage.
    Full,
    /// Anything else (NATS gone, a timeout), with a cause for the log.
    Failed(String),
}

impl Bucket {
    /// Write `bytes` as object `name` with `description`, before `deadline`. `replaces` is the
    /// object stored under `name` before, if any: its chunks are purged once the new metadata
    /// stands.
    pub(super) async fn write(
        &self,
        name: &str,
        bytes: &Bytes,
        description: String,
        replaces: Option<&ObjectInfo>,
        deadline: Instant,
    ) -> Result<ObjectInfo, WriteError> {
        let nuid = uuid::Uuid::new_v4().simple().to_string();
        match self
            .write_parts(name, bytes, description, &nuid, deadline)
            .await
        {
            Ok(info) => {
                if let Some(old) = replaces.filter(|o| !o.deleted && o.nuid != nuid)
                    && let Err(e) = self.purge(&chunk_subject(&self.name, &old.nuid)).await
                {
                    tracing::warn!(error = %e, "a replaced media object's chunks stay until the TTL");
                }
                Ok(info)
            }
            Err((e, attempted_meta)) => {
                self.clean_up(name, &nuid, attempted_meta).await;
                Err(e)
            }
        }
    }

    /// The chunks on `$O.<bucket>.C.<nuid>`, then the metadata (which replaces any older
    /// metadata under `name`). An error says whether the metadata was sent (it may have landed).
    async fn write_parts(
        &self,
        name: &str,
        bytes: &Bytes,
        description: String,
        nuid: &str,
        deadline: Instant,
    ) -> Result<ObjectInfo, (WriteError, bool)> {
        let chunks = chunk_subject(&self.name, nuid);
        let mut count = 0;
        for start in (0..bytes.len()).step_by(CHUNK) {
            let chunk = bytes.slice(start..bytes.len().min(start + CHUNK));
            self.publish(chunks.clone(), None, chunk, deadline)
                .await
                .map_err(|e| (e, false))?;
            count += 1;
        }
        let info = ObjectInfo {
            name: name.to_owned(),
            description: Some(description),
            metadata: Default::default(),
            headers: None,
            options: Some(ObjectOptions {
                link: None,
                max_chunk_size: Some(CHUNK),
            }),
            bucket: self.name.clone(),
            nuid: nuid.to_owned(),
            size: bytes.len(),
            chunks: count,
            modified: None,
            digest: Some(format!(
                "SHA-256={}",
                URL_SAFE.encode(Sha256::digest(bytes))
            )),
            deleted: false,
        };
        let meta = serde_json::to_vec(&info)
            .map_err(|e| (WriteError::Failed(format!("encode metadata: {e}")), false))?;
        let mut headers = HeaderMap::new();
        // Like the object store's put: the new metadata replaces every older message of its
        // subject.
        headers.insert("Nats-Rollup", "sub");
        self.publish(
            meta_subject(&self.name, name),
            Some(headers),
            meta.into(),
            deadline,
        )
        .await
        .map_err(|e| (e, true))?;
        Ok(info)
    }

    /// Publish one message to the bucket's stream and wait for JetStream's ack, by `deadline`.
    async fn publish(
        &self,
        subject: String,
        headers: Option<HeaderMap>,
        payload: Bytes,
        deadline: Instant,
    ) -> Result<(), WriteError> {
        let acked = tokio::time::timeout_at(deadline, async {
            let ack = match headers {
                Some(h) => self.js.publish_with_headers(subject, h, payload).await,
                None => self.js.publish(subject, payload).await,
            }
            .map_err(classify)?;
            ack.await.map_err(classify)
        })
        .await;
        match acked {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(WriteError::Failed("timed out".into())),
        }
    }

    /// Take out what a failed write left: its chunks, and its metadata if it landed (an ack
    /// lost after the server stored it), so the name is not left pointing at purged chunks.
    async fn clean_up(&self, name: &str, nuid: &str, attempted_meta: bool) {
        let cleaned = tokio::time::timeout(CLEANUP_TIMEOUT, async {
            if attempted_meta
                && let Ok(info) = self.store.info(name).await
                && info.nuid == nuid
                && !info.deleted
            {
                self.store.delete(name).await.map_err(|e| e.to_string())?;
            }
            self.purge(&chunk_subject(&self.name, nuid)).await
        })
        .await;
        match cleaned {
            Ok(Ok(())) => tracing::debug!("a failed media write's chunks were purged"),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "a failed media write's chunks stay until the TTL")
            }
            Err(_) => tracing::warn!("a failed media write's chunks stay until the TTL: timed out"),
        }
    }

    /// Purge every message on `subject` (one object's chunks).
    async fn purge(&self, subject: &str) -> Result<(), String> {
        self.stream
            .purge()
            .filter(subject)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The subject of the chunks of object version `nuid` in `bucket`.
fn chunk_subject(bucket: &str, nuid: &str) -> String {
    format!("$O.{bucket}.C.{nuid}")
}

/// The metadata subject of object `name` in `bucket` (the object store's encoding).
pub(super) fn meta_subject(bucket: &str, name: &str) -> String {
    format!("$O.{bucket}.M.{}", URL_SAFE.encode(name))
}

/// A publish error as a [`WriteError`]: JetStream's refusals for want of room are
/// [`WriteError::Full`].
fn classify(e: jetstream::context::PublishError) -> WriteError {
    use async_nats::jetstream::ErrorCode;
    let refused = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<jetstream::Error>())
        .map(|j| (j.error_code(), j.to_string()));
    match refused {
        Some((code, text))
            if matches!(
                code,
                ErrorCode::ACCOUNT_RESOURCES_EXCEEDED
                    | ErrorCode::INSUFFICIENT_RESOURCES
                    | ErrorCode::STORAGE_RESOURCES_EXCEEDED
            ) || (code == ErrorCode::STREAM_STORE_FAILED && text.contains("maximum")) =>
        {
            WriteError::Full
        }
        _ => WriteError::Failed(format!("publish: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_subjects_are_the_object_store_s() {
        // async-nats encodes names URL-safe with padding; a digest name is 64 bytes.
        let name = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let subject = meta_subject("p-media", name);
        assert!(subject.starts_with("$O.p-media.M."));
        assert_eq!(subject.len(), "$O.p-media.M.".len() + 88);
        assert!(subject.ends_with("=="));
    }
}
