//! Media bytes between gateway and worker (DESIGN §8): the gateway puts validated bytes into
//! the JetStream object store, named by their SHA-256; the worker reads them (bounded by
//! [`FETCH_TIMEOUT`]), checks size and digest (else `invalid_media`), and deletes them when the
//! last request in flight that names them ends.
//!
//! One object can serve several requests at once: identical repeats of one `request_id`, or the
//! same photo sent to several chats (the gateway stores both under the same name). Each request
//! holds a [`Lease`] on the name from its arrival to its answer; the object is deleted only
//! [`GRACE`] after the last lease is released, with none taken and the bytes not put again since,
//! so no request in flight or on its way loses bytes it may still need. "Put again" is told by
//! the object's `nuid` and description (the gateway renews the description when it reuses bytes
//! already stored): the delete names the object a holder read (or, when none did, the one
//! stored as the last lease ended, looked up before that request answers), never bytes put
//! again after the answer. What the worker never deletes (a lease dropped without release, a
//! failed delete) goes with the bucket's 1 h TTL.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use async_nats::jetstream;
use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncReadExt as _;
use wazap_shared::ErrorCode;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::send::{MAX_MEDIA_BYTES, MediaRef};

use crate::error::Error;

/// Longest wait for the object store to hand over one object's bytes.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// How long an object outlives the last request that named it: a request naming the same
/// bytes may still be on its way (the same photo sent to two chats from two gateways, a repeat
/// sent again at once), and would find them gone. A request that puts the bytes again makes a
/// new object, which the delete of an older request's release leaves alone.
pub const GRACE: Duration = Duration::from_secs(1);

/// In-flight requests per (bucket, object name).
static LEASES: LazyLock<Mutex<HashMap<(String, String), Claims>>> = LazyLock::new(Default::default);

/// The requests in flight on one object name.
#[derive(Debug, Default)]
struct Claims {
    /// How many hold a lease.
    held: usize,
    /// The object a holder last read under the name.
    read: Option<Stored>,
}

/// Which object is stored under a name: its `nuid`, and its description, which the gateway
/// renews when it reuses bytes already stored (a put again that keeps the `nuid`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stored {
    nuid: String,
    description: Option<String>,
}

impl Stored {
    fn of(info: &jetstream::object_store::ObjectInfo) -> Self {
        Self {
            nuid: info.nuid.clone(),
            description: info.description.clone(),
        }
    }
}

/// One in-flight request's claim on an object: while any lease on a name is held, the object
/// is not deleted. Release it with [`Lease::release`]; a lease merely dropped (a panic, a
/// cancelled request) stops protecting the object and leaves it to the bucket's TTL.
#[derive(Debug)]
pub struct Lease {
    key: Option<(String, String)>,
}

impl Lease {
    /// Claim `object` in `subjects`' media bucket for one request.
    pub fn take(subjects: &Subjects, object: &str) -> Self {
        let key = (subjects.media_bucket(), object.to_owned());
        LEASES
            .lock()
            .expect("media lease lock")
            .entry(key.clone())
            .or_default()
            .held += 1;
        Self { key: Some(key) }
    }

    /// Give the claim back. When it was the last, the object is deleted after [`GRACE`] if no
    /// request has claimed the name meanwhile and it is still the object the requests used (a
    /// request on its way puts the bytes again under the same name, as a new object), best
    /// effort: the bucket's TTL removes what this misses. When no holder read the bytes (every
    /// one was answered from the journal), the object stored now is the one named, looked up
    /// before this returns: what this request's answer prompts is put after it.
    pub async fn release(mut self, nats: &async_nats::Client) {
        let Some(key) = self.key.take() else { return };
        let Some(read) = forget(&key) else { return };
        let js = jetstream::new(nats.clone());
        match read {
            Some(stored) => {
                tokio::spawn(async move {
                    if let Ok(store) = js.get_object_store(&key.0).await {
                        delete_later(store, key, stored).await;
                    }
                });
            }
            None => {
                let Ok(store) = js.get_object_store(&key.0).await else {
                    return;
                };
                let Ok(now) = store.info(&key.1).await else {
                    return;
                };
                tokio::spawn(delete_later(store, key, Stored::of(&now)));
            }
        }
    }
}

/// Delete the object `key` names (as `stored`) from `store` after [`GRACE`], unless a request
/// claimed the name meanwhile or the bytes were put again (or reused: a new description).
async fn delete_later(
    store: jetstream::object_store::ObjectStore,
    key: (String, String),
    stored: Stored,
) {
    tokio::time::sleep(GRACE).await;
    let claimed = LEASES.lock().expect("media lease lock").contains_key(&key);
    let same = store
        .info(&key.1)
        .await
        .is_ok_and(|i| Stored::of(&i) == stored);
    if !claimed
        && same
        && let Err(e) = store.delete(&key.1).await
    {
        tracing::debug!(error = %e, "media object not deleted");
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            forget(&key);
        }
    }
}

/// Drop one lease on `key`. When it was the last: `Some`, with the object a holder read, if one
/// did.
fn forget(key: &(String, String)) -> Option<Option<Stored>> {
    let mut leases = LEASES.lock().expect("media lease lock");
    match leases.get_mut(key) {
        Some(c) if c.held > 1 => {
            c.held -= 1;
            None
        }
        Some(_) => leases.remove(key).map(|c| c.read),
        None => Some(None),
    }
}

/// Note that a holder of a lease on `key` read the object `stored`.
fn note_read(key: (String, String), stored: Stored) {
    if let Some(c) = LEASES.lock().expect("media lease lock").get_mut(&key) {
        c.read = Some(stored);
    }
}

/// Check that `media` is shaped like a reference the gateway makes (a digest name, 1 byte to
/// 8 MiB), without reading it.
pub fn check_ref(media: &MediaRef) -> Result<(), Error> {
    if !is_digest_name(&media.object) {
        return Err(Error::invalid(
            "media.object",
            "expected the lowercase hex SHA-256 of the bytes",
        ));
    }
    if media.size == 0 || media.size > MAX_MEDIA_BYTES as u64 {
        return Err(Error::new(
            ErrorCode::MediaTooLarge,
            "media: empty or over 8 MiB",
        ));
    }
    Ok(())
}

/// True when `name` is a lowercase hex SHA-256.
fn is_digest_name(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn invalid(why: &str) -> Error {
    Error::new(ErrorCode::InvalidMedia, format!("media: {why}"))
}

/// Read the object `media` names, within [`FETCH_TIMEOUT`], and check it is exactly the bytes
/// it claims to be (its size and its SHA-256, which is its name).
pub async fn fetch(
    nats: &async_nats::Client,
    subjects: &Subjects,
    media: &MediaRef,
) -> Result<Bytes, Error> {
    tokio::time::timeout(FETCH_TIMEOUT, read(nats, subjects, media))
        .await
        .unwrap_or_else(|_| {
            tracing::debug!("media object not read in time");
            Err(invalid(
                "the bytes did not arrive in time; send the request again",
            ))
        })
}

async fn read(
    nats: &async_nats::Client,
    subjects: &Subjects,
    media: &MediaRef,
) -> Result<Bytes, Error> {
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
    note_read(
        (subjects.media_bucket(), media.object.clone()),
        Stored::of(&object.info),
    );
    Ok(Bytes::from(data))
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

    #[test]
    fn only_the_last_lease_on_a_name_may_delete_and_names_what_was_read() {
        let key = ("bucket-t".to_owned(), "obj-t".to_owned());
        let stored = |nuid: &str| Stored {
            nuid: nuid.to_owned(),
            description: None,
        };
        LEASES.lock().unwrap().entry(key.clone()).or_default().held = 3;
        note_read(key.clone(), stored("n1"));
        assert_eq!(forget(&key), None);
        note_read(key.clone(), stored("n2"));
        assert_eq!(forget(&key), None);
        assert_eq!(forget(&key), Some(Some(stored("n2"))));
        assert!(!LEASES.lock().unwrap().contains_key(&key));
        // A read noted with no lease held is not kept; a name nobody read names nothing.
        note_read(key.clone(), stored("n3"));
        LEASES.lock().unwrap().entry(key.clone()).or_default().held = 1;
        assert_eq!(forget(&key), Some(None));
    }
}
