//! `get_attachment` (DESIGN §5, §8): one file's bytes and metadata. The bytes come from the
//! archive's cache (`attachments.data`), or from the connector's download (then cached), and
//! travel to the gateway through the JetStream object store, named by their SHA-256; the RPC
//! reply carries only the reference. Files of `#private` messages, stories and chats outside
//! the read scope are `not_found`. The account is the one the id names; an `account_id` is
//! checked like every read's (malformed, or another than the id's: `invalid_argument`;
//! unknown: `account_not_found`).

use async_nats::jetstream;
use sha2::{Digest as _, Sha256};
use wazap_shared::ErrorCode;
use wazap_shared::ids::{DEFAULT_ACCOUNT, is_attachment_id};
use wazap_shared::wire::search::{
    AttachmentMeta, GetAttachmentRequest, GetAttachmentRpcResponse, MAX_ATTACHMENT_BYTES,
};
use wazap_shared::wire::send::MediaRef;

use crate::archive::read::{self, attachments};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "get_attachment";

/// Fetch one attachment into the object store.
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: GetAttachmentRequest,
) -> Result<GetAttachmentRpcResponse, Error> {
    if !is_attachment_id(&req.attachment_id) {
        return Err(Error::invalid("attachment_id", "expected an attachment_id"));
    }
    let max = match req.max_bytes {
        None => MAX_ATTACHMENT_BYTES,
        Some(n) if (1..=MAX_ATTACHMENT_BYTES).contains(&n) => n,
        Some(_) => return Err(Error::invalid("max_bytes", "expected 1–8388608")),
    };
    let account = super::args::account(
        req.account_id.as_deref(),
        &[("attachment_id", super::args::of(Some(&req.attachment_id)))],
    )?;
    let inside = super::args::viewer_in(viewer, &account)?;
    let viewer: &Viewer = &inside;
    let db = read::connection(&state.db, CONTEXT).await?;
    let lookup = async {
        attachments::attachment(&db, viewer, &account, &req.attachment_id, max)
            .await
            .context(CONTEXT)
    };
    // Another account than the default one is looked up in the same flight as the file.
    let found = if req.account_id.is_some() || account != DEFAULT_ACCOUNT {
        read::in_account(&db, &account, CONTEXT, lookup).await?
    } else {
        lookup.await?
    }
    .ok_or_else(|| Error::new(ErrorCode::NotFound, "no such attachment"))?;
    if let Some(size) = found.cached.or(found.size) {
        check_size(size, max)?;
    }
    // Cached bytes came with the lookup (they are within `max`, checked just above).
    let bytes = match found.bytes {
        Some(b) => b,
        None => {
            drop(db);
            // Only the worker serving the account reaches WhatsApp for it.
            let download = match state.served.get(&found.account_id) {
                Some(a) => {
                    a.connector
                        .download(&found.account_id, &found.attachment_id)
                        .await
                }
                None => Ok(None),
            };
            let downloaded = download
                .map_err(|e| Error::internal("attachment download", e))?
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::NotFound,
                        "this file's bytes are not available (never downloaded, and WhatsApp \
                         cannot provide them now)",
                    )
                })?;
            let db = read::connection(&state.db, CONTEXT).await?;
            attachments::cache_bytes(&db, &found.account_id, &found.attachment_id, &downloaded)
                .await
                .context(CONTEXT)?;
            downloaded
        }
    };
    check_size(bytes.len() as u64, max)?;
    let media = put(state, &bytes).await?;
    Ok(GetAttachmentRpcResponse {
        meta: AttachmentMeta {
            account_id: found.account_id,
            attachment_id: found.attachment_id,
            message_id: found.message_id,
            chat_id: found.chat_id,
            kind: found.kind,
            mime_type: found.mime_type,
            filename: found.filename,
            size: bytes.len() as u64,
            timestamp: found.ts,
        },
        media,
    })
}

/// `media_too_large` naming the limit when `size` exceeds `max`.
fn check_size(size: u64, max: u64) -> Result<(), Error> {
    if size > max {
        return Err(Error::new(
            ErrorCode::MediaTooLarge,
            format!("the file has {size} bytes, more than max_bytes ({max})"),
        ));
    }
    Ok(())
}

/// Put `bytes` into the attachment bucket (creating it when it is missing) and return the
/// reference. The name is the bytes' hex SHA-256 plus a random suffix: every request gets its
/// own object, because the gateway deletes what it has read, and two reads of one attachment at
/// once must not share (or purge) an object.
async fn put(state: &AppState, bytes: &[u8]) -> Result<MediaRef, Error> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| unavailable(&e))?;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let object = format!("out-{}-{}", hex(&Sha256::digest(bytes)), hex(&nonce));
    let js = jetstream::new(state.nats.clone());
    let bucket = state.subjects.attachment_bucket();
    let store = wazap_shared::bus::media_store_with(&js, &bucket, state.nats_replicas)
        .await
        .map_err(|e| unavailable(&e))?;
    let mut reader = bytes;
    store
        .put(object.as_str(), &mut reader)
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(MediaRef {
        object,
        size: bytes.len() as u64,
    })
}

/// The object store failed: logged once, answered `worker_unavailable`.
fn unavailable(e: &dyn std::fmt::Display) -> Error {
    tracing::warn!(error = %e, "attachment bytes could not be handed to the gateway");
    Error::new(
        ErrorCode::WorkerUnavailable,
        "the media store (NATS JetStream) is unavailable; retry later",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_over_the_limit_name_it() {
        assert!(check_size(10, 10).is_ok());
        let e = check_size(11, 10).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MediaTooLarge);
        assert!(e.message().contains("max_bytes (10)"));
    }
}
