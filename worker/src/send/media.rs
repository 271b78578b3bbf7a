//! Media bytes between gateway and worker (DESIGN §8): the gateway puts validated bytes into
//! the JetStream object store, named by their SHA-256; the worker reads them, checks size and
//! digest (else `invalid_media`), and deletes them once the send is journaled.

use async_nats::jetstream;
use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncReadExt as _;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::send::{MAX_MEDIA_BYTES, MediaRef};
use wazap_shared::{ErrorCode, RpcError};

/// True when `name` is a lowercase hex SHA-256.
fn is_digest_name(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn invalid(why: &str) -> RpcError {
    RpcError::new(ErrorCode::InvalidMedia, format!("media: {why}"))
}

/// Read the object `media` names and check it is exactly the bytes it claims to be.
pub async fn fetch(
    nats: &async_nats::Client,
    subjects: &Subjects,
    media: &MediaRef,
) -> Result<Bytes, RpcError> {
    if !is_digest_name(&media.object) {
        return Err(RpcError::invalid(
            "media.object",
            "expected the lowercase hex SHA-256 of the bytes",
        ));
    }
    if media.size == 0 || media.size > MAX_MEDIA_BYTES as u64 {
        return Err(RpcError::new(
            ErrorCode::MediaTooLarge,
            "media: empty or over 8 MiB",
        ));
    }
    let js = jetstream::new(nats.clone());
    let store = js
        .get_object_store(subjects.media_bucket())
        .await
        .map_err(|e| {
            tracing::debug!(error = %e, "media bucket not available");
            invalid("the bytes did not arrive; send the request again")
        })?;
    let mut object = store.get(&media.object).await.map_err(|e| {
        tracing::debug!(error = %e, "media object not available");
        invalid("the bytes did not arrive; send the request again")
    })?;
    let mut data = Vec::with_capacity(media.size as usize);
    (&mut object)
        .take(MAX_MEDIA_BYTES as u64 + 1)
        .read_to_end(&mut data)
        .await
        .map_err(|e| {
            tracing::debug!(error = %e, "media object unreadable");
            invalid("the bytes could not be read; send the request again")
        })?;
    if data.len() as u64 != media.size || hex::encode(Sha256::digest(&data)) != media.object {
        return Err(invalid("the bytes do not match their size and digest"));
    }
    Ok(Bytes::from(data))
}

/// Delete the object (best effort: the bucket's short TTL removes what this misses).
pub async fn discard(nats: &async_nats::Client, subjects: &Subjects, object: &str) {
    let js = jetstream::new(nats.clone());
    match js.get_object_store(subjects.media_bucket()).await {
        Ok(store) => {
            if let Err(e) = store.delete(object).await {
                tracing::debug!(error = %e, "media object not deleted");
            }
        }
        Err(e) => tracing::debug!(error = %e, "media bucket not available for delete"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_hex_digests() {
        assert!(is_digest_name(&hex::encode(Sha256::digest(b"x"))));
        assert!(!is_digest_name("../etc/passwd"));
        assert!(!is_digest_name(&"A".repeat(64)));
    }
}
