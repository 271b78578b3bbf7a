//! Sending through the real gateway and worker (sim): the four send tools and `/api/send/*`
//! reach the worker's journal and the sim's transmission log, media bytes arrive through the
//! object store, and the worker's codes come back with their HTTP statuses.

use base64::Engine as _;
use serde_json::json;
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::sim::{SetState, Transmissions};
use wazap_tests::fixtures::{ogg_opus, person};
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn jpeg() -> Vec<u8> {
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 80)
        .encode(&[90u8; 8 * 8 * 3], 8, 8, jpeg_encoder::ColorType::Rgb)
        .expect("jpeg");
    out
}

async fn transmissions(stack: &Stack) -> Transmissions {
    stack
        .sim_raw::<_, Transmissions>(sim_op::TRANSMISSIONS, &json!({}))
        .await
        .expect("transmissions")
}

/// A connection with send permission `mode`; returns its token.
async fn connection(stack: &Stack, mode: SendMode) -> anyhow::Result<String> {
    Ok(stack.sending_connection(mode, vec![]).await?.1)
}

#[tokio::test(flavor = "multi_thread")]
async fn send_tools_and_the_json_api_reach_the_worker() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = stack.contact(&person("972503331111"), None, "Dana").await?;
    let token = connection(&stack, SendMode::All).await?;
    let reader = connection(&stack, SendMode::None).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&token).await?;

    // Text: accepted, then the saved outcome.
    let args = json!({"chat_id": chat, "request_id": "gw-1", "text": "on my way"});
    let first = mcp.call("send_message", args.clone()).await?;
    let first = first.ok().clone();
    assert_eq!(first["state"], "accepted");
    assert_eq!(first["duplicate"], false);
    let again = mcp.call("send_message", args).await?;
    assert_eq!(again.ok()["duplicate"], true);
    assert_eq!(again.ok()["message_id"], first["message_id"]);

    // Media and a voice note: the bytes travel through the object store.
    let photo = jpeg();
    let r = mcp
        .call(
            "send_media",
            json!({"chat_id": chat, "request_id": "gw-2", "kind": "image",
                   "data_base64": b64(&photo), "mime_type": "image/jpeg", "caption": "view"}),
        )
        .await?;
    assert_eq!(r.ok()["state"], "accepted");
    let voice = ogg_opus();
    let r = mcp
        .call(
            "send_voice_note",
            json!({"chat_id": chat, "request_id": "gw-3", "data_base64": b64(&voice), "seconds": 3}),
        )
        .await?;
    assert_eq!(r.ok()["state"], "accepted");
    let log = transmissions(&stack).await.transmissions;
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[0].kind, "text");
    assert_eq!(log[1].kind, "image");
    assert_eq!(log[1].mime_type.as_deref(), Some("image/jpeg"));
    assert_eq!(log[1].size, Some(photo.len() as u64));
    assert!(log[1].caption);
    assert_eq!(log[2].kind, "voice");
    assert!(log[2].ptt);
    assert_eq!(log[2].size, Some(voice.len() as u64));

    // The JSON API: same results, DESIGN §7 statuses.
    let api = |route: &str| gw.url(&format!("/api/send/{route}"));
    let bearer = format!("Bearer {token}");
    let auth = [("authorization", bearer.as_str())];
    let (status, _, body) = post_raw(
        &api("status"),
        &auth,
        json!({"request_id": "gw-2"}).to_string().into(),
    )
    .await?;
    assert_eq!((status, body["state"].clone()), (200, json!("accepted")));
    assert_eq!(body["duplicate"], true);
    let (status, _, body) = post_raw(
        &api("message"),
        &auth,
        json!({"chat_id": chat, "request_id": "gw-1", "text": "other words"})
            .to_string()
            .into(),
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("send_request_conflict"))
    );
    let (status, _, body) = post_raw(
        &api("message"),
        &auth,
        json!({"chat_id": "+972503331111", "request_id": "gw-4", "text": "hi"})
            .to_string()
            .into(),
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("invalid_argument"))
    );
    let read_only = format!("Bearer {reader}");
    let (status, _, body) = post_raw(
        &api("message"),
        &[("authorization", read_only.as_str())],
        json!({"chat_id": chat, "request_id": "ro-1", "text": "hi"})
            .to_string()
            .into(),
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("send_not_permitted"))
    );

    // Offline: sends refused with 409, the status still answers.
    stack
        .sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::Offline,
            },
        )
        .await?;
    let (status, _, body) = post_raw(
        &api("message"),
        &auth,
        json!({"chat_id": chat, "request_id": "gw-5", "text": "later"})
            .to_string()
            .into(),
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("session_cannot_send"))
    );
    let r = mcp
        .call("get_send_status", json!({"request_id": "gw-1"}))
        .await?;
    assert_eq!(r.ok()["state"], "accepted");
    assert_eq!(transmissions(&stack).await.transmissions.len(), 3);
    mcp.close().await;
    gw.stop().await?;
    Ok(())
}

/// No byte is stored for a media send the worker would refuse (#26 item 4): the gateway asks
/// `send_check` first, so a read-only credential leaves nothing in the bucket.
#[tokio::test(flavor = "multi_thread")]
async fn a_credential_that_may_not_send_stores_no_media() -> anyhow::Result<()> {
    use futures::StreamExt as _;
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = stack.contact(&person("972503331112"), None, "Gil").await?;
    let reader = connection(&stack, SendMode::None).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&reader).await?;
    let photo = json!({"chat_id": chat, "request_id": "ro-2", "kind": "image",
        "data_base64": b64(&jpeg()), "mime_type": "image/jpeg"});
    let voice = json!({"chat_id": chat, "request_id": "ro-3",
        "data_base64": b64(&ogg_opus()), "seconds": 3});
    for (tool, args) in [("send_media", photo), ("send_voice_note", voice)] {
        let r = mcp.call(tool, args).await?;
        assert_eq!(
            r.error_code().as_deref(),
            Some("send_not_permitted"),
            "{tool}"
        );
    }
    let js = async_nats::jetstream::new(stack.nats.clone());
    let stored = match js.get_object_store(stack.subjects.media_bucket()).await {
        Ok(store) => store.list().await?.count().await,
        Err(_) => 0,
    };
    assert_eq!(stored, 0, "a refused send's bytes were stored");
    assert!(transmissions(&stack).await.transmissions.is_empty());
    Ok(())
}
