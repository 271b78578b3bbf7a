//! Each bad media input → its code, with small real files (see `sniff::fixtures`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wazap_shared::ErrorCode;
use wazap_shared::wire::send::{MediaKind, SendMediaRequest, SendVoiceNoteRequest};

use super::sniff::fixtures::*;
use super::*;

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

fn media(kind: MediaKind, mime: &str, bytes: &[u8]) -> SendMediaRequest {
    SendMediaRequest {
        chat_id: "c_1".into(),
        request_id: "r-1".into(),
        kind,
        data_base64: b64(bytes),
        mime_type: mime.into(),
        filename: None,
        caption: None,
        seconds: None,
    }
}

fn voice(bytes: &[u8], seconds: u32) -> SendVoiceNoteRequest {
    SendVoiceNoteRequest {
        chat_id: "c_1".into(),
        request_id: "r-1".into(),
        data_base64: b64(bytes),
        seconds,
    }
}

fn check_media(req: &SendMediaRequest) -> Result<ValidMedia, RpcError> {
    validate_media(req, Base64::Str(&req.data_base64))
}

fn check_voice(req: &SendVoiceNoteRequest) -> Result<Vec<u8>, RpcError> {
    validate_voice(req, Base64::Str(&req.data_base64))
}

fn code(req: &SendMediaRequest) -> ErrorCode {
    check_media(req).expect_err("must be refused").code
}

/// A real JPEG, as a camera or an image library writes it.
fn encoded_jpeg() -> Vec<u8> {
    let mut out = Vec::new();
    let pixels = [200u8; 8 * 8 * 3];
    jpeg_encoder::Encoder::new(&mut out, 80)
        .encode(&pixels, 8, 8, jpeg_encoder::ColorType::Rgb)
        .expect("encode");
    out
}

#[test]
fn good_media_passes_with_a_normalised_mime() {
    let ok = check_media(&media(MediaKind::Image, "Image/JPEG", &encoded_jpeg())).unwrap();
    assert_eq!(ok.mime_type, "image/jpeg");
    assert_eq!(ok.bytes, encoded_jpeg());
    let cases = [
        media(MediaKind::Image, "image/png", &png()),
        media(MediaKind::Video, "video/mp4", &mp4(b"isom", &[b"avc1"])),
        media(
            MediaKind::Audio,
            "audio/ogg; codecs=opus",
            &ogg(b"OpusHead"),
        ),
        media(MediaKind::Audio, "audio/mpeg", &mp3_frame()),
        media(MediaKind::Audio, "audio/mpeg", &mp3_id3()),
        media(MediaKind::Audio, "audio/mp4", &mp4(b"M4A ", &[b"isom"])),
    ];
    for req in cases {
        assert!(check_media(&req).is_ok(), "{}", req.mime_type);
    }
    let mut doc = media(MediaKind::Document, "application/pdf", b"%PDF-1.7\n%%EOF\n");
    doc.filename = Some("Relatório.pdf".into());
    doc.caption = Some("the report".into());
    let ok = check_media(&doc).unwrap();
    assert_eq!(ok.caption.as_deref(), Some("the report"));
    let mut text = media(MediaKind::Document, "text/plain", b"hello");
    text.filename = Some("notes.txt".into());
    assert!(check_media(&text).is_ok());
    let mut video = media(MediaKind::Video, "video/mp4", &mp4(b"mp42", &[]));
    video.seconds = Some(12);
    video.caption = Some("look".into());
    assert!(check_media(&video).is_ok());
}

#[test]
fn encoding_errors() {
    let mut r = media(MediaKind::Image, "image/png", &png());
    r.data_base64 = format!("data:image/png;base64,{}", r.data_base64);
    assert_eq!(code(&r), ErrorCode::InvalidBase64);
    let mut r = media(MediaKind::Image, "image/png", &png());
    r.data_base64.insert(8, '\n');
    assert_eq!(code(&r), ErrorCode::InvalidBase64);
    let mut r = media(MediaKind::Image, "image/png", &png()[..32]);
    assert!(r.data_base64.ends_with('='));
    r.data_base64 = r.data_base64.trim_end_matches('=').to_owned();
    assert_eq!(code(&r), ErrorCode::InvalidBase64);
    let mut r = media(MediaKind::Image, "image/png", &png());
    r.data_base64 = base64::engine::general_purpose::URL_SAFE.encode([0xFB, 0xFF, 0xFE]);
    assert_eq!(code(&r), ErrorCode::InvalidBase64);
    let mut big = png();
    big.resize(MAX_MEDIA_BYTES_FOR_TESTS + 1, 0);
    assert_eq!(
        code(&media(MediaKind::Image, "image/png", &big)),
        ErrorCode::MediaTooLarge
    );
}

const MAX_MEDIA_BYTES_FOR_TESTS: usize = wazap_shared::wire::send::MAX_MEDIA_BYTES;

#[test]
fn bytes_must_match_kind_and_mime() {
    let cases = [
        media(MediaKind::Image, "image/png", &encoded_jpeg()),
        media(MediaKind::Image, "image/jpeg", &png()),
        media(MediaKind::Image, "image/gif", b"GIF89a\x01\0\x01\0"),
        media(MediaKind::Image, "image/jpeg", b"plain text, not a photo"),
        media(MediaKind::Image, "video/mp4", &mp4(b"isom", &[])),
        media(MediaKind::Video, "video/mp4", &encoded_jpeg()),
        media(MediaKind::Video, "video/mp4", &mp4(b"M4A ", &[])),
        media(MediaKind::Video, "video/quicktime", &mp4(b"qt  ", &[])),
        media(MediaKind::Audio, "audio/ogg", &ogg(b"\x01vorbis\0")),
        media(MediaKind::Audio, "audio/mpeg", &ogg(b"OpusHead")),
        media(MediaKind::Audio, "audio/mp4", &mp4(b"isom", &[])),
        media(MediaKind::Audio, "audio/wav", b"RIFF\0\0\0\0WAVEfmt "),
        media(MediaKind::Document, "image/png", &png()),
        media(MediaKind::Document, "application/pdf", &png()),
    ];
    for mut req in cases {
        if req.kind == MediaKind::Document {
            req.filename = Some("file.bin".into());
        }
        assert_eq!(code(&req), ErrorCode::InvalidMedia, "{}", req.mime_type);
    }
}

#[test]
fn file_names_and_captions() {
    let mut r = media(MediaKind::Document, "application/pdf", b"%PDF-1.4");
    assert_eq!(code(&r), ErrorCode::InvalidMedia, "a document needs a name");
    for bad in ["../secret.pdf", "a/b.pdf", "a\\b.pdf", "bad\u{7}.pdf", ""] {
        r.filename = Some(bad.into());
        assert_eq!(code(&r), ErrorCode::InvalidMedia, "{bad:?}");
    }
    let mut r = media(MediaKind::Image, "image/png", &png());
    r.filename = Some("../x.png".into());
    assert_eq!(code(&r), ErrorCode::InvalidMedia);

    let mut r = media(MediaKind::Audio, "audio/mpeg", &mp3_frame());
    r.caption = Some("listen".into());
    assert_eq!(code(&r), ErrorCode::InvalidMedia);
    let e = check_media(&r).unwrap_err();
    assert!(!e.message.contains("listen"));

    let mut r = media(MediaKind::Image, "image/png", &png());
    r.caption = Some("x".repeat(65_537));
    assert_eq!(code(&r), ErrorCode::InvalidArgument);
}

#[test]
fn argument_shapes() {
    for bad in ["", "jpeg", "image/", "/png", "image/jp eg", "ima ge/png"] {
        let r = media(MediaKind::Image, bad, &png());
        assert_eq!(code(&r), ErrorCode::InvalidArgument, "{bad:?}");
    }
    let mut r = media(MediaKind::Image, "image/png", &png());
    r.seconds = Some(3);
    assert_eq!(code(&r), ErrorCode::InvalidArgument);
    let mut r = media(MediaKind::Video, "video/mp4", &mp4(b"isom", &[]));
    r.seconds = Some(0);
    assert_eq!(code(&r), ErrorCode::InvalidArgument);
}

#[test]
fn voice_notes() {
    assert_eq!(
        check_voice(&voice(&ogg(b"OpusHead"), 7)).unwrap(),
        ogg(b"OpusHead")
    );
    assert!(check_voice(&voice(&ogg(b"OpusHead"), 3600)).is_ok());
    for s in [0, 3601] {
        let e = check_voice(&voice(&ogg(b"OpusHead"), s)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{s}");
    }
    for bytes in [
        ogg(b"\x01vorbis\0"),
        mp3_frame(),
        mp4(b"M4A ", &[]),
        encoded_jpeg(),
    ] {
        let e = check_voice(&voice(&bytes, 5)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidMedia);
    }
    let mut r = voice(&ogg(b"OpusHead"), 5);
    r.data_base64.push(' ');
    assert_eq!(check_voice(&r).unwrap_err().code, ErrorCode::InvalidBase64);
}
