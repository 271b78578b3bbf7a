//! Media sends: bytes come through the JetStream object store (named by their SHA-256), are
//! checked against the reference, deleted when the last request naming them ends, and
//! transmitted with their kind (voice notes with the PTT flag).

use async_nats::jetstream;
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use wazap_shared::ErrorCode;
use wazap_shared::bus;
use wazap_shared::wire::send::{
    MediaKind, MediaRef, SendMedia, SendMediaRpc, SendResult, SendState, SendVoiceNote,
    SendVoiceRpc,
};
use wazap_shared::wire::sim::ArmSendFault;
use wazap_shared::{RpcError, wire::MessageType};
use wazap_tests::fixtures::{jpeg_b64, ogg_opus};

use super::Sending;

/// Put `bytes` into the media bucket under `name` (default: their SHA-256).
pub(super) async fn put(s: &Sending, bytes: &[u8], name: Option<&str>) -> anyhow::Result<MediaRef> {
    let js = jetstream::new(s.stack.nats.clone());
    let store = js
        .create_object_store(jetstream::object_store::Config {
            bucket: s.stack.subjects.media_bucket(),
            ..Default::default()
        })
        .await?;
    let digest = hex::encode(Sha256::digest(bytes));
    let object = name.map_or(digest, str::to_owned);
    store.put(object.as_str(), &mut &bytes[..]).await?;
    Ok(MediaRef {
        object,
        size: bytes.len() as u64,
    })
}

pub(super) async fn exists(s: &Sending, object: &str) -> anyhow::Result<bool> {
    let js = jetstream::new(s.stack.nats.clone());
    let store = js.get_object_store(s.stack.subjects.media_bucket()).await?;
    Ok(store.info(object).await.is_ok_and(|i| !i.deleted))
}

/// Whether `object` goes within the worker's grace period after its last request (with a
/// margin for a loaded machine).
pub(super) async fn gone(s: &Sending, object: &str) -> anyhow::Result<bool> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while exists(s, object).await? {
        if std::time::Instant::now() > deadline {
            return Ok(false);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(true)
}

fn media(s: &Sending, key: &str, kind: MediaKind, mime: &str, m: MediaRef) -> SendMediaRpc {
    SendMediaRpc {
        chat_id: s.chat.clone(),
        request_id: key.into(),
        kind,
        media: m,
        mime_type: mime.into(),
        filename: None,
        caption: None,
        seconds: None,
    }
}

async fn send_media(s: &Sending, req: &SendMediaRpc) -> Result<SendResult, RpcError> {
    bus::call::<SendMedia>(&s.stack.nats, &s.stack.subjects, Some(&s.grant), req, None).await
}

async fn send_voice(s: &Sending, req: &SendVoiceRpc) -> Result<SendResult, RpcError> {
    bus::call::<SendVoiceNote>(&s.stack.nats, &s.stack.subjects, Some(&s.grant), req, None).await
}

#[tokio::test]
async fn photo_and_voice_note_travel_through_the_object_store() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let jpeg = base64::engine::general_purpose::STANDARD.decode(jpeg_b64(32, 24))?;
    let m = put(&s, &jpeg, None).await?;
    let mut req = media(&s, "photo-1", MediaKind::Image, "image/jpeg", m.clone());
    req.caption = Some("the view".into());
    let r = send_media(&s, &req).await?;
    assert_eq!(r.state, SendState::Accepted);
    assert!(gone(&s, &m.object).await?, "deleted once journaled");

    let voice = ogg_opus();
    let v = put(&s, &voice, None).await?;
    let r2 = send_voice(
        &s,
        &SendVoiceRpc {
            chat_id: s.chat.clone(),
            request_id: "voice-1".into(),
            media: v.clone(),
            seconds: 4,
        },
    )
    .await?;
    assert_eq!(r2.state, SendState::Accepted);

    let log = s.transmissions().await?;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].kind, "image");
    assert_eq!(log[0].mime_type.as_deref(), Some("image/jpeg"));
    assert_eq!(log[0].size, Some(jpeg.len() as u64));
    assert!(log[0].caption && !log[0].ptt);
    assert_eq!(log[1].kind, "voice");
    assert!(log[1].ptt, "voice notes carry the PTT flag");

    let read = s.read(&s.chat).await?;
    let photo = read
        .messages
        .iter()
        .find(|m| Some(&m.message_id) == r.message_id.as_ref())
        .expect("photo archived");
    assert!(photo.from_me);
    assert_eq!(photo.kind, MessageType::Image);
    let note = read
        .messages
        .iter()
        .find(|m| Some(&m.message_id) == r2.message_id.as_ref())
        .expect("voice note archived");
    assert_eq!(note.kind, MessageType::Voice);

    // A replay is answered from the journal: the bytes (deleted by now) are not needed, and
    // nothing is transmitted again.
    assert!(gone(&s, &req.media.object).await?);
    let again = send_media(&s, &req).await?;
    assert!(again.duplicate);
    assert_eq!(again.message_id, r.message_id);
    // The gateway may put them again for a repeat; the worker still transmits nothing.
    let m = put(&s, &jpeg, None).await?;
    let again = send_media(&s, &media_with_caption(req.clone(), m.clone())).await?;
    assert!(again.duplicate);
    assert!(gone(&s, &m.object).await?, "a replay's bytes go too");
    assert_eq!(s.transmissions().await?.len(), 2);
    Ok(())
}

fn media_with_caption(mut req: SendMediaRpc, m: MediaRef) -> SendMediaRpc {
    req.media = m;
    req
}

#[tokio::test]
async fn bad_media_references_and_rules_have_their_codes() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let bytes = b"%PDF-1.7 tiny".to_vec();
    // Bytes that do not match their name.
    let wrong = put(&s, &bytes, Some(&hex::encode(Sha256::digest(b"other")))).await?;
    let mut req = media(
        &s,
        "doc-1",
        MediaKind::Document,
        "application/pdf",
        wrong.clone(),
    );
    req.filename = Some("a.pdf".into());
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    assert!(gone(&s, &wrong.object).await?, "refused bytes are deleted");
    // A wrong size.
    let mut m = put(&s, &bytes, None).await?;
    m.size += 1;
    req.media = m;
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    // Never put.
    req.media = MediaRef {
        object: hex::encode(Sha256::digest(b"never put")),
        size: 9,
    };
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    // Not a digest name at all.
    req.media = MediaRef {
        object: "../../etc/passwd".into(),
        size: 9,
    };
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    // Over 8 MiB.
    req.media = MediaRef {
        object: hex::encode(Sha256::digest(b"x")),
        size: 8 * 1024 * 1024 + 1,
    };
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::MediaTooLarge
    );
    // A path as the file name, a document without one, a caption on audio.
    let ok = put(&s, &bytes, None).await?;
    req.media = ok.clone();
    req.filename = Some("../a.pdf".into());
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    req.filename = None;
    assert_eq!(
        send_media(&s, &req).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    let mut audio = media(&s, "audio-1", MediaKind::Audio, "audio/ogg", ok.clone());
    audio.caption = Some("listen".into());
    assert_eq!(
        send_media(&s, &audio).await.unwrap_err().code,
        ErrorCode::InvalidMedia
    );
    // Voice notes: 1–3600 s.
    for seconds in [0, 3601] {
        let e = send_voice(
            &s,
            &SendVoiceRpc {
                chat_id: s.chat.clone(),
                request_id: "v".into(),
                media: ok.clone(),
                seconds,
            },
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }
    assert!(s.transmissions().await?.is_empty());

    // An upload that fails: `failed`, nothing transmitted, and the key keeps that outcome.
    s.arm(ArmSendFault {
        fail_upload: true,
        ..Default::default()
    })
    .await?;
    req.filename = Some("a.pdf".into());
    let r = send_media(&s, &req).await?;
    assert_eq!(r.state, SendState::Failed);
    assert!(s.transmissions().await?.is_empty());
    req.media = put(&s, &bytes, None).await?;
    let again = send_media(&s, &req).await?;
    assert_eq!((again.state, again.duplicate), (SendState::Failed, true));
    assert!(s.transmissions().await?.is_empty());
    Ok(())
}
