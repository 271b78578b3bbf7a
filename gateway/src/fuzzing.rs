//! Entry points for the cargo-fuzz targets in `fuzz/` (re-exported hidden from the docs; not an
//! API). Each runs one parser of untrusted input on arbitrary bytes: none may panic, and the
//! invariants asserted here must hold for every input. See `docs/fuzzing.md`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wazap_shared::wire::send::{SendMediaRequest, SendVoiceNoteRequest};

use crate::media::sniff::{self, Container};
use crate::media::{decode_base64, document_signature_matches, validate_media, validate_voice};

/// The `media` target: the bytes through every sniffer; the bytes as `data_base64` through the
/// strict decoder, and what it accepts through the sniffers again. Strict decoding accepts only
/// canonical base64, so re-encoding what it decoded gives the input back. Input that parses as
/// a `send_media` or `send_voice_note` request goes through the whole media validation.
pub fn media(data: &[u8]) {
    sniff_all(data);
    if let Ok(req) = serde_json::from_slice::<SendMediaRequest>(data)
        && let Ok(valid) = validate_media(&req)
    {
        assert!(valid.bytes.len() <= wazap_shared::wire::send::MAX_MEDIA_BYTES);
    }
    if let Ok(req) = serde_json::from_slice::<SendVoiceNoteRequest>(data)
        && let Ok(bytes) = validate_voice(&req)
    {
        assert_eq!(sniff::sniff(&bytes), Container::OggOpus);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(bytes) = decode_base64(text) {
        assert_eq!(STANDARD.encode(&bytes), text, "strict base64 is canonical");
        sniff_all(&bytes);
    }
}

/// Every sniffer on `bytes`, with the invariants of what the container sniffer answers.
fn sniff_all(bytes: &[u8]) {
    let container = sniff::sniff(bytes);
    match container {
        Container::Jpeg => {
            assert!(bytes.starts_with(&[0xFF, 0xD8, 0xFF]) && bytes.ends_with(&[0xFF, 0xD9]));
        }
        Container::Png => assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n")),
        Container::OggOpus => assert!(sniff::ogg::first_packet(bytes).is_some()),
        Container::Mp4Video | Container::Mp4Audio => {
            assert_eq!(bytes.get(4..8), Some(&b"ftyp"[..]))
        }
        Container::Mp3 | Container::Unknown => {}
    }
    let _ = sniff::ogg::first_packet(bytes);
    for mime in ["application/pdf", "application/zip", "text/plain"] {
        let _ = document_signature_matches(mime, bytes);
    }
}

/// The `direct_request` target: the input is header lines (`name: value`), an empty line, then
/// the body. The headers go through the direct route's header rules, and the body through its
/// request parser under that route and under both routes regardless.
pub fn direct_request(data: &[u8]) {
    crate::mcp::direct::fuzz_request(data);
}
