//! Entry points for the cargo-fuzz targets in `fuzz/` (re-exported hidden from the docs; not an
//! API). Each runs one parser of untrusted input on arbitrary bytes: none may panic, and the
//! invariants asserted here must hold for every input. See `docs/fuzzing.md`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wazap_shared::wire::send::{SendMediaRequest, SendVoiceNoteRequest};
use wazap_shared::{ErrorCode, RpcError};

use crate::http::api_send;
use crate::media::sniff::{self, Container};
use crate::media::{
    Base64, decode_base64, document_signature_matches, validate_media, validate_voice,
};

/// The `media` target: the bytes through every sniffer; the bytes as `data_base64` through the
/// strict decoder, and what it accepts through the sniffers again. Strict decoding accepts only
/// canonical base64, so re-encoding what it decoded gives the input back. Input that parses as
/// a `send_media` or `send_voice_note` request goes through the whole media validation, once as
/// the tool reads it and once as `POST /api/send/media|voice` does (the base64 decoded where it
/// lies in the body): both must parse alike and answer alike.
pub fn media(data: &[u8]) {
    sniff_all(data);
    let tool = serde_json::from_slice::<SendMediaRequest>(data).ok();
    let api = api_send::media_body(data.to_vec()).ok();
    assert_eq!(
        tool.is_some(),
        api.is_some(),
        "send_media bodies parse alike"
    );
    if let (Some(req), Some((api_req, place))) = (tool, api) {
        let tool = validate_media(&req, Base64::Str(&req.data_base64));
        if let Ok(valid) = &tool {
            assert!(valid.bytes.len() <= wazap_shared::wire::send::MAX_MEDIA_BYTES);
        }
        let api = validate_media(&api_req, place);
        assert_eq!(
            outcome(tool.map(|v| v.bytes)),
            outcome(api.map(|v| v.bytes))
        );
    }
    let tool = serde_json::from_slice::<SendVoiceNoteRequest>(data).ok();
    let api = api_send::voice_body(data.to_vec()).ok();
    assert_eq!(
        tool.is_some(),
        api.is_some(),
        "send_voice_note bodies parse alike"
    );
    if let (Some(req), Some((api_req, place))) = (tool, api) {
        let tool = validate_voice(&req, Base64::Str(&req.data_base64));
        if let Ok(bytes) = &tool {
            assert_eq!(sniff::sniff(bytes), Container::OggOpus);
        }
        assert_eq!(outcome(tool), outcome(validate_voice(&api_req, place)));
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

/// A validation's outcome, comparable: the bytes, or the error's code and message.
fn outcome(result: Result<Vec<u8>, RpcError>) -> Result<Vec<u8>, (ErrorCode, String)> {
    result.map_err(|e| (e.code, e.message))
}
