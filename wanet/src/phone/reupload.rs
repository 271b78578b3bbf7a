//! A phone keeps the files it received and uploads one again when a companion asks (a media
//! retry: the companion's download failed because the media host no longer has it). The request
//! is a `server-error` receipt encrypted with a key derived from the file's media key; the answer,
//! encrypted the same way, names the new direct path (or an error: 2 = not found, 3 = the request
//! did not decrypt), and the server hands it to the companion as a `mediaretry` notification.

use std::sync::Arc;

use rand::Rng as _;
use whatsapp_rust::wacore::download::{Downloadable, MediaType};
use whatsapp_rust::wacore_binary::Node;
use whatsapp_rust::waproto::buffa::Message as _;
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Client, NodeBuilder, NodeFilter, UploadOptions};

use super::seen::Seen;

/// What the HKDF of a media key is expanded with for retry payloads.
const INFO: &[u8] = b"WhatsApp Media Retry Notification";

/// Download every file the phone receives (as a phone's gallery keeps them), by message id.
pub(super) fn keep_files(
    client: Arc<Client>,
    seen: Arc<Seen>,
    mut ids: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    tokio::spawn(async move {
        while let Some(id) = ids.recv().await {
            let Some(msg) = seen.body(&id) else {
                continue;
            };
            if let Some((d, _)) = file_of(&msg)
                && let Ok(bytes) = client.download(d).await
            {
                seen.keep_file(&id, bytes);
            }
        }
    });
}

/// Answer media retry requests for as long as the client runs.
pub(super) fn answer_retries(client: Arc<Client>, seen: Arc<Seen>) {
    tokio::spawn(async move {
        loop {
            let next =
                client.wait_for_node(NodeFilter::tag("receipt").attr("type", "server-error"));
            let Ok(node) = next.await else {
                return;
            };
            if let Some(answer) = answer(&client, &seen, &node.get().to_owned()).await {
                let _ = client.send_node(answer).await;
            }
        }
    });
}

/// The message's file and its media type.
pub(super) fn file_of(msg: &wa::Message) -> Option<(&dyn Downloadable, MediaType)> {
    if let Some(i) = msg.image_message.as_option() {
        Some((i, MediaType::Image))
    } else if let Some(a) = msg.audio_message.as_option() {
        Some((a, MediaType::Audio))
    } else if let Some(v) = msg.video_message.as_option() {
        Some((v, MediaType::Video))
    } else {
        msg.document_message
            .as_option()
            .map(|d| (d as &dyn Downloadable, MediaType::Document))
    }
}

/// The `mediaretry` answer to one request (none for one that is not a media retry).
async fn answer(client: &Client, seen: &Seen, req: &Node) -> Option<Node> {
    let id = req.attrs.get("id")?.as_str().into_owned();
    let to = req.attrs.get("from")?.as_str().into_owned();
    let rmr = req.get_optional_child("rmr")?.clone();
    let reply = |kids: Vec<Node>| {
        NodeBuilder::new("notification")
            .attr("type", "mediaretry")
            .attr("to", to.clone())
            .attr("id", id.clone())
            .children(kids.into_iter().chain([rmr.clone()]))
            .build()
    };
    let error = |code: &str| reply(vec![NodeBuilder::new("error").attr("code", code).build()]);
    let msg = seen.body(&id);
    let Some((file, kind)) = msg.as_deref().and_then(file_of) else {
        return Some(error("2"));
    };
    let Ok(media_key) = <[u8; 32]>::try_from(file.media_key().unwrap_or_default()) else {
        return Some(error("3"));
    };
    let encrypt = req.get_optional_child("encrypt");
    let part = |tag: &str| {
        encrypt
            .and_then(|e| e.get_optional_child(tag))
            .and_then(crate::node::bytes)
    };
    let asked = part("enc_p").zip(part("enc_iv")).and_then(|(p, iv)| {
        whatsapp_rust::wacore::media_retry::decrypt_media_retry_notification(&media_key, &id, iv, p)
            .ok()
    });
    let names_it = asked
        .and_then(|p| wa::ServerErrorReceipt::decode_from_slice(&p).ok())
        .is_some_and(|r| r.stanza_id.as_deref() == Some(id.as_str()));
    if !names_it {
        return Some(error("3"));
    }
    let Some(bytes) = seen.file(&id) else {
        return Some(error("2"));
    };
    let up = client
        .upload(bytes, kind, UploadOptions::new().with_media_key(media_key))
        .await
        .ok()?;
    let plain = wa::MediaRetryNotification {
        stanza_id: Some(id.clone()),
        direct_path: Some(up.direct_path),
        result: Some(wa::media_retry_notification::ResultType::SUCCESS),
        ..Default::default()
    }
    .encode_to_vec();
    let mut key = [0u8; 32];
    whatsapp_rust::wacore::crypto::hkdf_sha256_into(&media_key, None, INFO, &mut key).ok()?;
    let mut iv = [0u8; 12];
    rand::make_rng::<rand::rngs::StdRng>().fill_bytes(&mut iv);
    let mut sealed = Vec::new();
    whatsapp_rust::wacore::libsignal::crypto::aes_256_gcm_encrypt(
        &key,
        &iv,
        id.as_bytes(),
        &plain,
        &mut sealed,
    )
    .ok()?;
    Some(reply(vec![
        NodeBuilder::new("encrypt")
            .children([
                NodeBuilder::new("enc_p").bytes(sealed).build(),
                NodeBuilder::new("enc_iv").bytes(iv.to_vec()).build(),
            ])
            .build(),
    ]))
}
