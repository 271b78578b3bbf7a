//! Validation of outgoing media before any byte leaves the gateway (DESIGN §5): strict base64,
//! the 8 MiB cap, the declared kind and `mime_type` against the bytes' real container, file
//! names, captions and durations. Errors name the field, never its value.

mod encoding;
pub(crate) mod sniff;

use wazap_shared::checks;
use wazap_shared::wire::send::{MediaKind, SendMediaRequest, SendVoiceNoteRequest};
use wazap_shared::{ErrorCode, RpcError};

pub(crate) use self::encoding::decode as decode_base64;
pub(crate) use self::encoding::{Base64, Place, locate};
use self::sniff::{Container, sniff};

/// Longest `seconds` of a voice note.
pub(crate) const MAX_VOICE_SECONDS: u32 = 3600;
/// Longest `seconds` of audio or video sent with `send_media` (a day).
const MAX_MEDIA_SECONDS: u32 = 86_400;

/// Media that passed every check.
#[derive(Debug)]
pub(crate) struct ValidMedia {
    /// The decoded bytes.
    pub(crate) bytes: Vec<u8>,
    /// The media type without parameters, lower-cased (e.g. `image/jpeg`).
    pub(crate) mime_type: String,
    /// The caption, if any (never for audio).
    pub(crate) caption: Option<String>,
}

/// Check a `send_media` request's media fields, in the order DESIGN §5/§7 give: argument shapes
/// (`invalid_argument`), then the encoding (`invalid_base64`, `media_too_large`), then the bytes
/// against kind, `mime_type`, file name and caption (`invalid_media`). `data` is the request's
/// base64, wherever it is ([`Base64`]); the request's own `data_base64` is not read (it is left
/// empty when the base64 was taken out of it or left in the body).
pub(crate) fn validate_media(
    req: &SendMediaRequest,
    data: Base64<'_>,
) -> Result<ValidMedia, RpcError> {
    let mime = checks::mime_type(&req.mime_type)?;
    let caption = req.caption.as_deref().filter(|c| !c.is_empty());
    checks::caption_length(caption)?;
    match (req.kind, req.seconds) {
        (MediaKind::Audio | MediaKind::Video, Some(s)) if !(1..=MAX_MEDIA_SECONDS).contains(&s) => {
            return Err(RpcError::invalid("seconds", "must be from 1 to 86,400"));
        }
        (MediaKind::Image | MediaKind::Document, Some(_)) => {
            return Err(RpcError::invalid("seconds", "only for audio and video"));
        }
        _ => {}
    }
    let bytes = data.decode()?;
    let container = sniff(&bytes);
    let expected = match (req.kind, mime.as_str()) {
        (MediaKind::Image, "image/jpeg") => Some(Container::Jpeg),
        (MediaKind::Image, "image/png") => Some(Container::Png),
        (MediaKind::Video, "video/mp4") => Some(Container::Mp4Video),
        (MediaKind::Audio, "audio/ogg") => Some(Container::OggOpus),
        (MediaKind::Audio, "audio/mpeg") => Some(Container::Mp3),
        (MediaKind::Audio, "audio/mp4") => Some(Container::Mp4Audio),
        (MediaKind::Document, m) if m.starts_with("application/") || m.starts_with("text/") => None,
        _ => return Err(invalid_media(kind_mime_rule(req.kind))),
    };
    match expected {
        Some(c) if c != container => {
            return Err(invalid_media("the bytes do not match mime_type"));
        }
        None if !document_signature_matches(&mime, &bytes) => {
            return Err(invalid_media("the bytes do not match mime_type"));
        }
        _ => {}
    }
    checks::filename(req.kind, req.filename.as_deref())?;
    checks::caption_for(req.kind, caption)?;
    Ok(ValidMedia {
        bytes,
        mime_type: mime,
        caption: caption.map(str::to_owned),
    })
}

/// Check a `send_voice_note` request: `seconds` 1–3600, then Ogg/Opus bytes (`data` as for
/// [`validate_media`]).
pub(crate) fn validate_voice(
    req: &SendVoiceNoteRequest,
    data: Base64<'_>,
) -> Result<Vec<u8>, RpcError> {
    if !(1..=MAX_VOICE_SECONDS).contains(&req.seconds) {
        return Err(RpcError::invalid("seconds", "must be from 1 to 3600"));
    }
    let bytes = data.decode()?;
    if sniff(&bytes) != Container::OggOpus {
        return Err(invalid_media(
            "a voice note must be Ogg/Opus (an OpusHead in the first page)",
        ));
    }
    Ok(bytes)
}

/// Documents whose type has a well-known signature must carry it (a PDF starts `%PDF-`, the
/// zip-based formats `PK\3\4`); other `application/*` and `text/*` types are taken as declared.
pub(crate) fn document_signature_matches(mime: &str, bytes: &[u8]) -> bool {
    let zip_based = mime == "application/zip"
        || mime == "application/epub+zip"
        || mime.starts_with("application/vnd.openxmlformats-officedocument.")
        || mime.starts_with("application/vnd.oasis.opendocument.");
    if mime == "application/pdf" {
        bytes.starts_with(b"%PDF-")
    } else if zip_based {
        bytes.starts_with(b"PK\x03\x04")
    } else {
        !bytes.is_empty()
    }
}

fn kind_mime_rule(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "an image must be image/jpeg or image/png",
        MediaKind::Video => "a video must be video/mp4",
        MediaKind::Audio => "audio must be audio/ogg (Opus), audio/mpeg or audio/mp4",
        MediaKind::Document => "a document must be application/* or text/*",
    }
}

fn invalid_media(why: &str) -> RpcError {
    RpcError::new(ErrorCode::InvalidMedia, why)
}

#[cfg(test)]
mod tests;
