//! Simultaneous media sends that share one object (the gateway names bytes by their SHA-256):
//! identical repeats of one `request_id` all get the one saved outcome and transmit once, and
//! the same photo sent to two chats at once reaches both — no request loses bytes another
//! request's end deleted.

use serde_json::json;
use wazap_shared::bus;
use wazap_shared::wire::send::{MediaKind, SendMedia, SendMediaRpc, SendResult, SendState};
use wazap_tests::fixtures::jpeg_b64;
use wazap_tests::post_raw;

use super::Sending;
use super::media::{exists, gone, put};

#[tokio::test(flavor = "multi_thread")]
async fn eight_identical_media_calls_through_the_gateway_share_one_outcome() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let gw = s
        .stack
        .gateway(&[("WAZAP_MCP_MAX_CONCURRENCY", "32")])
        .await?;
    let url = gw.url("/api/send/media");
    let body = json!({"chat_id": s.chat, "request_id": "same-1", "kind": "image",
        "data_base64": jpeg_b64(16, 16), "mime_type": "image/jpeg"})
    .to_string();
    let bearer = format!("Bearer {}", s.token);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (url, body, bearer) = (url.clone(), body.clone(), bearer.clone());
            tokio::spawn(async move {
                post_raw(
                    &url,
                    &[("authorization", bearer.as_str())],
                    body.into_bytes(),
                )
                .await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut fresh = 0;
    for c in calls {
        let (status, _, body) = c.await??;
        if body["duplicate"] == json!(false) {
            fresh += 1;
        }
        outcomes.push((
            status,
            body["state"].clone(),
            body["message_id"].clone(),
            body["error"].clone(),
        ));
    }
    assert!(outcomes.iter().all(|o| o == &outcomes[0]), "{outcomes:?}");
    assert_eq!(outcomes[0].0, 200, "{outcomes:?}");
    assert_eq!(outcomes[0].1, json!("accepted"));
    assert_eq!(
        fresh, 1,
        "exactly one call made the send; the others replayed it"
    );
    assert_eq!(s.transmissions().await?.len(), 1);
    gw.stop().await?;
    Ok(())
}

fn photo(chat: &str, key: &str, media: wazap_shared::wire::send::MediaRef) -> SendMediaRpc {
    SendMediaRpc {
        chat_id: chat.into(),
        request_id: key.into(),
        kind: MediaKind::Image,
        media,
        mime_type: "image/jpeg".into(),
        filename: None,
        caption: None,
        seconds: None,
    }
}

async fn send(s: &Sending, req: SendMediaRpc) -> Result<SendResult, wazap_shared::RpcError> {
    bus::call::<SendMedia>(&s.stack.nats, &s.stack.subjects, Some(&s.grant), &req, None).await
}

#[tokio::test(flavor = "multi_thread")]
async fn one_object_serves_simultaneous_repeats_and_other_chats_then_goes() -> anyhow::Result<()> {
    use base64::Engine as _;
    let s = Sending::start().await?;
    let jpeg = base64::engine::general_purpose::STANDARD.decode(jpeg_b64(24, 24))?;
    let m = put(&s, &jpeg, None).await?;
    // Eight repeats of one key and, at the same moment, the same photo to the other chat.
    let mut calls: Vec<_> = (0..8)
        .map(|_| send(&s, photo(&s.chat, "k-1", m.clone())))
        .collect();
    calls.push(send(&s, photo(&s.other, "k-2", m.clone())));
    let results = futures::future::join_all(calls).await;
    let results: Vec<SendResult> = results.into_iter().collect::<Result<_, _>>()?;
    let (repeats, other) = results.split_at(8);
    assert!(
        repeats
            .iter()
            .all(|r| r.state == SendState::Accepted && r.message_id == repeats[0].message_id)
    );
    assert_eq!(repeats.iter().filter(|r| !r.duplicate).count(), 1);
    assert_eq!(
        (other[0].state, other[0].duplicate),
        (SendState::Accepted, false)
    );
    assert_ne!(other[0].message_id, repeats[0].message_id);
    assert_eq!(s.transmissions().await?.len(), 2);
    // A request naming the same bytes right after the last one ended still finds them (one
    // on its way when the others finished would have lost them before the grace period).
    assert!(exists(&s, &m.object).await?);
    let late = send(&s, photo(&s.other, "k-3", m.clone())).await?;
    assert_eq!((late.state, late.duplicate), (SendState::Accepted, false));
    assert_eq!(s.transmissions().await?.len(), 3);
    // Every request ended: the bytes go after the grace period.
    assert!(gone(&s, &m.object).await?);
    // A later repeat needs no bytes at all: the journal answers it. Its gateway put them again
    // all the same, and with no request reading them they go too.
    let put_again = put(&s, &jpeg, None).await?;
    let again = send(&s, photo(&s.chat, "k-1", put_again)).await?;
    assert!(again.duplicate && again.message_id == repeats[0].message_id);
    assert_eq!(s.transmissions().await?.len(), 3);
    assert!(gone(&s, &m.object).await?);
    Ok(())
}

#[tokio::test]
async fn bytes_put_again_after_a_send_outlive_its_delayed_delete() -> anyhow::Result<()> {
    use base64::Engine as _;
    let s = Sending::start().await?;
    let jpeg = base64::engine::general_purpose::STANDARD.decode(jpeg_b64(20, 20))?;
    let m = put(&s, &jpeg, None).await?;
    let first = send(&s, photo(&s.chat, "p-1", m.clone())).await?;
    assert_eq!(first.state, SendState::Accepted);
    // A second request's gateway puts the same bytes again (a new object under the same name)
    // and its call is slow to arrive: past the first send's grace period.
    let again = put(&s, &jpeg, None).await?;
    assert_eq!(again.object, m.object);
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert!(
        exists(&s, &m.object).await?,
        "the first send's delete left the new object"
    );
    let second = send(&s, photo(&s.other, "p-2", again)).await?;
    assert_eq!(
        (second.state, second.duplicate),
        (SendState::Accepted, false)
    );
    assert!(gone(&s, &m.object).await?);
    Ok(())
}
