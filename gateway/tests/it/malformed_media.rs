//! No media byte is stored for a send that cannot go ahead: a file that is not a whole, valid
//! container is refused by the gateway with `invalid_media` (no panic, no call to the worker),
//! and a send the worker's `send_check` refuses is answered with its code before the store.

use futures::StreamExt as _;
use serde_json::json;
use wazap_gateway::media_fixtures::{jpeg, mp3_id3, mp4, ogg, ogg_opus, ogg_page, png};
use wazap_shared::subjects::Subjects;

use crate::send_support::*;
use crate::support::*;

/// Each malformed case as (name, tool, kind, mime type, bytes).
fn cases() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<u8>,
)> {
    let (jpeg, png, mp4, opus) = (jpeg(), png(), mp4(b"isom", &[]), ogg_opus());
    let with = |base: &[u8], tail: &[u8]| [base, tail].concat();
    let zip = b"PK\x03\x04rest of an archive";
    let mut mp4_overrun = mp4.clone();
    let last = mp4_overrun.len() - 5;
    mp4_overrun[last] = 9;
    let mut bad_crc = opus.clone();
    bad_crc[22] ^= 1;
    let mut no_channels = ogg(b"OpusHead")[27 + 1..].to_vec();
    no_channels[9] = 0;
    vec![
        (
            "JPEG without EOI",
            "send_media",
            "image",
            "image/jpeg",
            jpeg[..jpeg.len() - 2].to_vec(),
        ),
        (
            "JPEG+ZIP",
            "send_media",
            "image",
            "image/jpeg",
            with(&jpeg, zip),
        ),
        (
            "PNG with a truncated IHDR",
            "send_media",
            "image",
            "image/png",
            png[..20].to_vec(),
        ),
        (
            "PNG+ZIP",
            "send_media",
            "image",
            "image/png",
            with(&png, zip),
        ),
        (
            "MP4 box overrun",
            "send_media",
            "video",
            "video/mp4",
            mp4_overrun,
        ),
        (
            "MP4+ZIP",
            "send_media",
            "video",
            "video/mp4",
            with(&mp4, zip),
        ),
        ("Ogg with a wrong CRC", "send_voice_note", "", "", bad_crc),
        ("Ogg+ZIP", "send_voice_note", "", "", with(&opus, zip)),
        (
            "OpusHead with 0 channels",
            "send_voice_note",
            "",
            "",
            ogg_page(0x02, 0, &no_channels),
        ),
        (
            "Vorbis as Opus",
            "send_voice_note",
            "",
            "",
            ogg(b"\x01vorbis\0"),
        ),
        (
            "ID3 without a frame",
            "send_media",
            "audio",
            "audio/mpeg",
            mp3_id3()[..10].to_vec(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_containers_are_refused_before_the_worker_and_the_store() {
    let (w, gw, mcp, prefix) = setup(&[]).await;
    for (i, (name, tool, kind, mime, bytes)) in cases().into_iter().enumerate() {
        let request_id = format!("bad-{i}");
        let args = if tool == "send_voice_note" {
            json!({"chat_id": "c_1", "request_id": request_id, "data_base64": b64(&bytes),
                "seconds": 3})
        } else {
            json!({"chat_id": "c_1", "request_id": request_id, "kind": kind,
                "data_base64": b64(&bytes), "mime_type": mime})
        };
        let result = mcp.call(tool, args).await;
        assert_eq!(result["isError"], true, "{name}: {result}");
        assert_eq!(
            text_json(&result)["error"]["code"],
            "invalid_media",
            "{name}"
        );
    }
    // Nothing reached the worker (every RPC is recorded there), nothing was stored.
    assert!(w.state.grants.lock().unwrap().is_empty());
    assert!(w.state.sends.lock().unwrap().is_empty());
    assert_eq!(
        stored(&prefix).await,
        0,
        "bytes of a refused send were stored"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_the_worker_refuses_at_its_check_stores_nothing() {
    let (w, gw, mcp, prefix) = setup(&[]).await;
    let photo = json!({"chat_id": "c_refused", "request_id": "r-1", "kind": "image",
        "data_base64": b64(&jpeg()), "mime_type": "image/jpeg"});
    let voice = json!({"chat_id": "c_refused", "request_id": "r-2",
        "data_base64": b64(&ogg_opus()), "seconds": 3});
    for (tool, args) in [("send_media", photo.clone()), ("send_voice_note", voice)] {
        let result = mcp.call(tool, args).await;
        assert_eq!(
            text_json(&result)["error"]["code"],
            "send_not_permitted",
            "{tool}"
        );
    }
    assert!(
        w.state.sends.lock().unwrap().is_empty(),
        "no send was asked"
    );
    assert_eq!(
        stored(&prefix).await,
        0,
        "bytes of a refused send were stored"
    );
    // The same photo to a chat the check allows is stored and sent.
    let mut allowed = photo;
    allowed["chat_id"] = json!("c_1");
    let result = mcp.call("send_media", allowed).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(stored(&prefix).await, 1);
    gw.stop().await;
}

/// How many objects the deployment's send-media bucket holds (none when it was never made).
async fn stored(prefix: &str) -> usize {
    let nats = async_nats::connect(nats_url()).await.expect("NATS");
    let js = async_nats::jetstream::new(nats);
    match js
        .get_object_store(Subjects::new(prefix).media_bucket())
        .await
    {
        Ok(store) => store.list().await.expect("list").count().await,
        Err(_) => 0,
    }
}
