//! The media store against a real NATS server with JetStream (`WAZAP_TEST_NATS_URL`, default
//! 127.0.0.1:4222), each test on a bucket of its own: the credential's share, a full bucket,
//! purges of failed writes, deletes of failed sends' objects and what is never deleted.

use std::time::Duration;

use async_nats::jetstream::{self, object_store};

use super::*;

const KIB: usize = 1024;

fn nats_url() -> String {
    std::env::var("WAZAP_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A fresh bucket name and a JetStream context on the test server.
async fn fresh() -> (async_nats::Client, jetstream::Context, String) {
    let nats = async_nats::connect(nats_url()).await.expect("NATS");
    let js = jetstream::new(nats.clone());
    let bucket = format!("gwu{}-media", &new_description()[..12]);
    (nats, js, bucket)
}

/// `n` bytes that differ from any other call's (so each is its own object).
fn blob(n: usize) -> Bytes {
    let seed = new_description();
    let mut bytes = seed.clone().into_bytes();
    bytes.resize(n, b'x');
    Bytes::from(bytes)
}

/// Messages and bytes in the bucket's stream (chunks and metadata).
async fn held(js: &jetstream::Context, bucket: &str) -> (u64, u64) {
    let mut stream = js
        .get_stream(format!("OBJ_{bucket}"))
        .await
        .expect("stream");
    let state = &stream.info().await.expect("info").state;
    (state.messages, state.bytes)
}

/// Whether object `name` is stored (and not deleted).
async fn exists(js: &jetstream::Context, bucket: &str, name: &str) -> bool {
    let store = js.get_object_store(bucket).await.expect("bucket");
    store.info(name).await.is_ok_and(|i| !i.deleted)
}

fn refused(code: ErrorCode) -> RpcError {
    RpcError::new(code, "refused")
}

async fn drop_bucket(js: &jetstream::Context, bucket: &str) {
    let _ = js.delete_object_store(bucket).await;
}

#[tokio::test]
async fn over_its_share_a_credential_is_busy_and_stores_nothing() {
    let (nats, js, bucket) = fresh().await;
    let store = MediaStore::new(nats, bucket.clone(), 1, (KIB * KIB) as u64);
    let first = store
        .put("conn_a", blob(600 * KIB))
        .await
        .expect("within the share");
    let (messages, _) = held(&js, &bucket).await;
    let e = store
        .put("conn_a", blob(600 * KIB))
        .await
        .expect_err("over the share");
    assert_eq!(e.code, ErrorCode::Busy);
    assert_eq!(
        held(&js, &bucket).await.0,
        messages,
        "nothing more was stored"
    );
    // Another credential has a share of its own.
    let other = store
        .put("conn_b", blob(600 * KIB))
        .await
        .expect("b's share");
    // The send's end gives the bytes back, however it ended.
    store.finish(first, None).await;
    let again = store
        .put("conn_a", blob(600 * KIB))
        .await
        .expect("back within");
    store
        .finish(again, Some(&refused(ErrorCode::SendOutcomeUnknown)))
        .await;
    store
        .finish(other, Some(&refused(ErrorCode::Internal)))
        .await;
    assert_eq!(store.quota.held("conn_a"), 0);
    assert_eq!(store.quota.held("conn_b"), 0);
    drop_bucket(&js, &bucket).await;
}

#[tokio::test]
async fn a_full_bucket_is_busy_and_keeps_no_chunk_of_the_refused_put() {
    let (nats, js, bucket) = fresh().await;
    // A bucket of 1 MiB, made before the gateway opens it: it keeps its limit.
    js.create_object_store(object_store::Config {
        bucket: bucket.clone(),
        max_bytes: (KIB * KIB) as i64,
        ..Default::default()
    })
    .await
    .expect("small bucket");
    let store = MediaStore::new(nats, bucket.clone(), 1, u64::MAX);
    let e = store
        .put("conn_a", blob(2 * KIB * KIB))
        .await
        .expect_err("more than the bucket holds");
    assert_eq!(e.code, ErrorCode::Busy, "{e:?}");
    assert_eq!(
        held(&js, &bucket).await,
        (0, 0),
        "the refused put's chunks stayed"
    );
    assert_eq!(store.quota.held("conn_a"), 0);
    // What fits is stored whole.
    let small = blob(300 * KIB);
    let stored = store.put("conn_a", small.clone()).await.expect("fits");
    assert!(exists(&js, &bucket, &hex_sha256(&small)).await);
    store.finish(stored, None).await;
    drop_bucket(&js, &bucket).await;
}

#[tokio::test]
async fn a_failed_send_s_object_goes_at_once_unless_another_request_relies_on_it() {
    let (nats, js, bucket) = fresh().await;
    let store = MediaStore::new(nats, bucket.clone(), 1, u64::MAX);
    let bytes = blob(300 * KIB);
    let name = hex_sha256(&bytes);

    // Two requests with the same bytes: the first to fail leaves them to the other.
    let a = store.put("conn_a", bytes.clone()).await.expect("a");
    let b = store.put("conn_b", bytes.clone()).await.expect("b reuses");
    assert_eq!(a.media.object, b.media.object);
    store
        .finish(a, Some(&refused(ErrorCode::SessionCannotSend)))
        .await;
    assert!(exists(&js, &bucket, &name).await, "deleted under b");
    store
        .finish(b, Some(&refused(ErrorCode::WorkerUnavailable)))
        .await;
    assert!(
        !exists(&js, &bucket, &name).await,
        "the last failure deletes"
    );
    assert_eq!(
        held(&js, &bucket).await.0,
        1,
        "only the deletion marker is left"
    );

    // A send whose outcome is unknown, or that was answered, leaves them to the worker.
    for ended in [Some(refused(ErrorCode::SendOutcomeUnknown)), None] {
        let c = store.put("conn_a", bytes.clone()).await.expect("c");
        store.finish(c, ended.as_ref()).await;
        assert!(exists(&js, &bucket, &name).await, "{ended:?}");
    }
    drop_bucket(&js, &bucket).await;
}

#[tokio::test]
async fn bytes_another_gateway_reused_are_never_deleted_here() {
    let (nats, js, bucket) = fresh().await;
    let here = MediaStore::new(nats.clone(), bucket.clone(), 1, u64::MAX);
    let there = MediaStore::new(nats, bucket.clone(), 1, u64::MAX);
    let bytes = blob(200 * KIB);
    let name = hex_sha256(&bytes);
    let mine = here
        .put("conn_a", bytes.clone())
        .await
        .expect("created here");
    let theirs = there
        .put("conn_b", bytes.clone())
        .await
        .expect("reused there");
    here.finish(mine, Some(&refused(ErrorCode::Internal))).await;
    assert!(
        exists(&js, &bucket, &name).await,
        "deleted under another gateway's request"
    );
    // The other gateway did not create them: it leaves them to the worker and the TTL.
    there
        .finish(theirs, Some(&refused(ErrorCode::Internal)))
        .await;
    assert!(exists(&js, &bucket, &name).await);
    drop_bucket(&js, &bucket).await;
}

#[tokio::test]
async fn a_request_gone_mid_write_leaves_nothing_and_one_gone_mid_call_leaves_it() {
    let (nats, js, bucket) = fresh().await;
    let store = MediaStore::new(nats, bucket.clone(), 1, u64::MAX);
    // Open the bucket first, so the write is what the timeout cuts.
    let opened = store.put("conn_a", blob(KIB)).await.expect("open");
    store.finish(opened, None).await;
    let before = held(&js, &bucket).await.0;
    let cut_bytes = blob(4 * KIB * KIB);
    let cut_name = hex_sha256(&cut_bytes);
    let cut = tokio::time::timeout(Duration::from_millis(1), store.put("conn_a", cut_bytes));
    assert!(cut.await.is_err(), "the put finished within 1 ms");
    // The write finishes on its own, then its unused claim deletes what it stored.
    let objects = js.get_object_store(&bucket).await.expect("bucket");
    let by = Instant::now() + Duration::from_secs(10);
    while !objects.info(&cut_name).await.is_ok_and(|i| i.deleted) {
        assert!(Instant::now() < by, "a cut-off request's object stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        held(&js, &bucket).await.0,
        before + 1,
        "more than its deletion marker is left"
    );
    assert_eq!(store.quota.held("conn_a"), 0);
    // Dropped after the put (the RPC may have left): kept for the worker.
    let bytes = blob(KIB);
    drop(store.put("conn_a", bytes.clone()).await.expect("put"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(exists(&js, &bucket, &hex_sha256(&bytes)).await);
    drop_bucket(&js, &bucket).await;
}

#[tokio::test]
async fn a_bucket_made_without_a_limit_gets_one_when_opened() {
    let (nats, js, bucket) = fresh().await;
    js.create_object_store(object_store::Config {
        bucket: bucket.clone(),
        ..Default::default()
    })
    .await
    .expect("old bucket");
    let stream = format!("OBJ_{bucket}");
    let mut old = js.get_stream(&stream).await.expect("stream");
    assert_eq!(old.info().await.expect("info").config.max_bytes, -1);
    let store = MediaStore::new(nats, bucket.clone(), 1, u64::MAX);
    let stored = store.put("conn_a", blob(KIB)).await.expect("put");
    store.finish(stored, None).await;
    let mut now = js.get_stream(&stream).await.expect("stream");
    assert_eq!(
        now.info().await.expect("info").config.max_bytes,
        wazap_shared::bus::MEDIA_MAX_BYTES
    );
    drop_bucket(&js, &bucket).await;
}
