//! Nothing sent — text, caption or bytes — ever appears in a log line, a span or an error body:
//! everything the in-process worker logs at debug level is captured and scanned for a unique
//! marker, across every send outcome and error.

use std::io::Write;
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};
use wazap_shared::bus;
use wazap_shared::wire::send::{MediaKind, MediaRef, SendMedia, SendMediaRpc};
use wazap_shared::wire::sim::ArmSendFault;

use super::Sending;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn sent_words_and_bytes_never_reach_logs_or_errors() -> anyhow::Result<()> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(true)
                .with_writer(move || writer.clone())
                .with_filter(tracing_subscriber::EnvFilter::new("debug")),
        )
        .with(wazap_shared::telemetry::capture::layer("wazap-tests"))
        .try_init()
        .map_err(|e| anyhow::anyhow!("this test needs its own subscriber (unset TEST_LOG): {e}"))?;

    let s = Sending::start().await?;
    let marker = format!("leakmarker{}", uuid::Uuid::new_v4().simple());
    let mut errors = Vec::new();

    s.text(&s.chat, "ok", &format!("accepted {marker}")).await?;
    errors.push(
        s.text(&s.chat, "ok", &format!("conflict {marker}"))
            .await
            .unwrap_err(),
    );
    s.arm(ArmSendFault {
        no_ack: true,
        no_ack_wait_ms: Some(100),
        ..Default::default()
    })
    .await?;
    s.text(&s.chat, "lost", &format!("lost {marker}")).await?;
    s.arm(ArmSendFault {
        error_after_transmit: true,
        ..Default::default()
    })
    .await?;
    s.text(&s.chat, "err", &format!("error {marker}")).await?;
    s.arm(ArmSendFault {
        fail_upload: true,
        ..Default::default()
    })
    .await?;
    s.text(&s.chat, "fail", &format!("failed {marker}")).await?;
    errors.push(
        s.text(&format!("{marker}@s.whatsapp.net"), "x", &marker)
            .await
            .unwrap_err(),
    );
    errors.push(
        s.text(&s.chat, &format!("{marker} key"), &marker)
            .await
            .unwrap_err(),
    );
    errors.push(
        s.text(&s.chat, "long", &marker.repeat(7000))
            .await
            .unwrap_err(),
    );

    // Media: the marker in the caption, the file name and the bytes.
    let bytes = format!("%PDF-1.7 {marker}").into_bytes();
    let js = async_nats::jetstream::new(s.stack.nats.clone());
    let store = js
        .create_object_store(async_nats::jetstream::object_store::Config {
            bucket: s.stack.subjects.media_bucket(),
            ..Default::default()
        })
        .await?;
    let object = hex::encode(Sha256::digest(&bytes));
    store.put(object.as_str(), &mut &bytes[..]).await?;
    let mut req = SendMediaRpc {
        chat_id: s.chat.clone(),
        request_id: "doc".into(),
        kind: MediaKind::Document,
        media: MediaRef {
            object: object.clone(),
            size: bytes.len() as u64,
        },
        mime_type: "application/pdf".into(),
        filename: Some(format!("{marker}.pdf")),
        caption: Some(format!("caption {marker}")),
        seconds: None,
    };
    let call = |req: SendMediaRpc| {
        let (nats, subjects, grant) = (
            s.stack.nats.clone(),
            s.stack.subjects.clone(),
            s.grant.clone(),
        );
        async move { bus::call::<SendMedia>(&nats, &subjects, Some(&grant), &req, None).await }
    };
    call(req.clone()).await?;
    req.filename = Some(format!("../{marker}.pdf"));
    errors.push(call(req.clone()).await.unwrap_err());
    req.kind = MediaKind::Audio;
    req.mime_type = "audio/ogg".into();
    errors.push(call(req.clone()).await.unwrap_err());

    assert_eq!(errors.len(), 6);
    for e in &errors {
        let body = serde_json::to_string(e)?;
        assert!(
            !body.contains(&marker),
            "an error body carries sent text: {body}"
        );
    }
    assert_eq!(s.transmissions().await?.len(), 4);
    drop(s);
    let logs = String::from_utf8(captured.0.lock().expect("log buffer").clone())?;
    assert!(
        logs.contains("\"op\":\"send_message\""),
        "the worker's logs were captured"
    );
    assert!(logs.contains("send outcome unknown"));
    assert!(
        !logs.contains(&marker),
        "a log line or span carries sent text"
    );
    Ok(())
}
