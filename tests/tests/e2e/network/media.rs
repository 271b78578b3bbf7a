//! Media through the real media crypto and the media host: a contact's photo (with its
//! thumbnail) reads as a preview and `get_attachment` downloads and decrypts the original over
//! HTTP; a photo sent with `send_media` carries the thumbnail the worker makes; a file the host
//! dropped is uploaded again by the phone; documents and voice notes (push-to-talk) keep their
//! names, bytes and flags both ways.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::json;
use wanet::{Network, Phone};
use wazap_shared::wire::grants::SendMode;
use wazap_tests::Mcp;
use wazap_tests::fixtures::jpeg_b64;

use super::{Linked, OWNER};

const IVY: &str = "15550000010";

/// A network, the owner's phone, Ivy's phone, a worker linked to the owner's phone, and an MCP
/// client that may read everything (and send to every chat, if `send`).
async fn with_ivy(send: bool) -> anyhow::Result<(Network, Phone, Phone, Linked, Mcp)> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let ivy = net.phone(IVY, "Ivy").await?;
    let linked = Linked::start(&net, &phone).await?;
    let mcp = if send {
        let (_, token) =
            crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
        linked.gw.mcp(&token).await?
    } else {
        linked.reader().await?
    };
    Ok((net, phone, ivy, linked, mcp))
}

#[tokio::test]
async fn photos_both_ways_through_the_media_host() -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (_net, phone, ivy, _linked, mcp) = with_ivy(true).await?;

    let photo = b64.decode(jpeg_b64(64, 48))?;
    let thumb = b64.decode(jpeg_b64(8, 6))?;
    ivy.send_image(OWNER, photo.clone(), "the view", thumb)
        .await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let (read, images) = loop {
        let r = mcp
            .call(
                "read_messages",
                json!({"chat_id": format!("+{IVY}"), "include_previews": true}),
            )
            .await?;
        if !r.is_error && r.ok()["messages"].as_array().is_some_and(|m| !m.is_empty()) {
            break (r.ok().clone(), r.images.clone());
        }
        anyhow::ensure!(Instant::now() < deadline, "the photo never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let msg = &read["messages"][0];
    assert_eq!(msg["type"], "image", "{msg}");
    assert_eq!(msg["attachment"]["caption"], "the view");
    assert_eq!(images.len(), 1, "the thumbnail as a preview");
    let attachment = msg["attachment"]["attachment_id"]
        .as_str()
        .expect("attachment_id")
        .to_owned();
    let got = mcp
        .call("get_attachment", json!({"attachment_id": attachment}))
        .await?;
    assert!(!got.is_error, "{}", got.text);
    let (_, data) = got.images.first().expect("the image itself");
    assert_eq!(
        b64.decode(data)?,
        photo,
        "downloaded and decrypted to the original"
    );

    let chat = read["chat_id"].as_str().unwrap_or_default().to_owned();
    let out = b64.decode(jpeg_b64(40, 30))?;
    let sent = mcp
        .call(
            "send_media",
            json!({"chat_id": chat, "request_id": "photo-1", "kind": "image",
                   "mime_type": "image/jpeg", "data_base64": b64.encode(&out), "caption": "for you"}),
        )
        .await?;
    assert_eq!(sent.ok()["state"], "accepted", "{}", sent.text);
    let recv = ivy
        .wait_for(Duration::from_secs(10), |m| m.media.is_some())
        .await?;
    assert_eq!(recv.text.as_deref(), Some("for you"));
    assert_eq!(
        ivy.download(&recv.id).await?,
        out,
        "the phone decrypts the same bytes"
    );
    let thumb = recv
        .thumbnail
        .as_deref()
        .expect("a thumbnail for the phone's preview");
    assert!(
        thumb.starts_with(&[0xFF, 0xD8]) && thumb.ends_with(&[0xFF, 0xD9]),
        "a whole JPEG"
    );
    assert_eq!(recv.size, Some((40, 30)), "the photo's own size");
    phone.stop().await;
    ivy.stop().await;
    Ok(())
}

#[tokio::test]
async fn media_the_host_dropped_is_uploaded_again_by_the_phone() -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (net, phone, ivy, _linked, mcp) = with_ivy(false).await?;

    let photo = b64.decode(jpeg_b64(32, 24))?;
    let id = ivy
        .send_image(OWNER, photo.clone(), "old photo", vec![])
        .await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !phone.holds_file(&id) {
        anyhow::ensure!(Instant::now() < deadline, "the phone never kept the file");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let read = super::read_until(&mcp, json!({"chat_id": format!("+{IVY}")}), |r| {
        super::count(r) == 1
    })
    .await?;
    let attachment = read["messages"][0]["attachment"]["attachment_id"]
        .as_str()
        .expect("attachment_id")
        .to_owned();

    net.expire_media();
    let got = mcp
        .call("get_attachment", json!({"attachment_id": attachment}))
        .await?;
    assert!(!got.is_error, "{}", got.text);
    let (_, data) = got.images.first().expect("the image itself");
    assert_eq!(
        b64.decode(data)?,
        photo,
        "the phone uploaded it again and the worker fetched it from its new place"
    );
    phone.stop().await;
    ivy.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_document_from_a_phone_reads_with_its_name_and_bytes() -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (_net, phone, ivy, _linked, mcp) = with_ivy(false).await?;

    let pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n".to_vec();
    ivy.send_document(OWNER, pdf.clone(), "application/pdf", "plan.pdf")
        .await?;
    let read = super::read_until(&mcp, json!({"chat_id": format!("+{IVY}")}), |r| {
        super::count(r) == 1
    })
    .await?;
    let msg = &read["messages"][0];
    assert_eq!(msg["type"], "document", "{msg}");
    assert_eq!(msg["attachment"]["filename"], "plan.pdf", "{msg}");
    let out = mcp
        .call(
            "get_attachment",
            json!({"attachment_id": msg["attachment"]["attachment_id"]}),
        )
        .await?;
    assert!(!out.is_error, "{}", out.text);
    let resource = out.raw["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|b| b["type"] == "resource")
        .expect("an embedded resource")["resource"]
        .clone();
    assert_eq!(resource["mimeType"], "application/pdf");
    assert_eq!(
        b64.decode(resource["blob"].as_str().unwrap_or_default())?,
        pdf
    );
    phone.stop().await;
    ivy.stop().await;
    Ok(())
}

#[tokio::test]
async fn voice_notes_both_ways_keep_their_bytes_and_the_push_to_talk_flag() -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (_net, phone, ivy, _linked, mcp) = with_ivy(true).await?;

    let voice = wazap_tests::fixtures::ogg_opus();
    ivy.send_voice(OWNER, voice.clone(), 4).await?;
    let read = super::read_until(&mcp, json!({"chat_id": format!("+{IVY}")}), |r| {
        super::count(r) == 1
    })
    .await?;
    let msg = &read["messages"][0];
    assert_eq!(msg["type"], "voice", "{msg}");
    assert_eq!(msg["attachment"]["seconds"], 4, "{msg}");

    let chat = read["chat_id"].as_str().unwrap_or_default().to_owned();
    let sent = mcp
        .call(
            "send_voice_note",
            json!({"chat_id": chat, "request_id": "voice-1",
                   "data_base64": b64.encode(&voice), "seconds": 4}),
        )
        .await?;
    assert_eq!(sent.ok()["state"], "accepted", "{}", sent.text);
    let recv = ivy
        .wait_for(Duration::from_secs(10), |m| m.media.is_some())
        .await?;
    assert_eq!(
        recv.media,
        Some(("audio", true)),
        "a voice note, not an audio file"
    );
    assert_eq!(ivy.download(&recv.id).await?, voice);
    phone.stop().await;
    ivy.stop().await;
    Ok(())
}
