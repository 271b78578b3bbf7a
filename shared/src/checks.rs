//! The send tools' argument rules, one checker each with one wording: the gateway calls them
//! to refuse early, the worker calls them again because it decides (DESIGN §4). Errors name the
//! field, never its value.

use crate::ids::{is_chat_id, is_request_id};
use crate::wire::send::{MAX_TEXT_CHARS, MediaKind};
use crate::{ErrorCode, RpcError};

/// Longest accepted file name, in bytes.
const MAX_FILENAME_BYTES: usize = 255;
/// Longest accepted `mime_type`, in bytes.
const MAX_MIME_BYTES: usize = 255;

/// A send's `chat_id`: an opaque chat id from `list_chats`; a phone number, JID, URL or path is
/// refused (only read tools resolve phone numbers).
pub fn send_chat_id(chat_id: &str) -> Result<(), RpcError> {
    if is_chat_id(chat_id) {
        Ok(())
    } else {
        Err(RpcError::invalid(
            "chat_id",
            "expected an opaque chat id (c_…) from list_chats; phone numbers and JIDs are not accepted for sending",
        ))
    }
}

/// A `request_id`: 1–128 of `[A-Za-z0-9._:-]`.
pub fn request_id(request_id: &str) -> Result<(), RpcError> {
    if is_request_id(request_id) {
        Ok(())
    } else {
        Err(RpcError::invalid(
            "request_id",
            "expected 1–128 characters of A-Z a-z 0-9 . _ : -",
        ))
    }
}

/// `send_message`'s `text`: 1–65,536 characters, not only white space.
pub fn send_text(text: &str) -> Result<(), RpcError> {
    let chars = text.chars().count();
    if (1..=MAX_TEXT_CHARS).contains(&chars) && !text.trim().is_empty() {
        Ok(())
    } else {
        Err(RpcError::invalid(
            "text",
            "expected 1–65,536 characters, not only white space",
        ))
    }
}

/// `send_media`'s `caption`, when given: at most 65,536 characters.
pub fn caption_length(caption: Option<&str>) -> Result<(), RpcError> {
    if caption.is_some_and(|c| c.chars().count() > MAX_TEXT_CHARS) {
        return Err(RpcError::invalid("caption", "at most 65,536 characters"));
    }
    Ok(())
}

/// `send_media`'s `caption` against its `kind`: audio takes none (an empty one counts as none).
pub fn caption_for(kind: MediaKind, caption: Option<&str>) -> Result<(), RpcError> {
    if kind == MediaKind::Audio && caption.is_some_and(|c| !c.is_empty()) {
        return Err(RpcError::new(
            ErrorCode::InvalidMedia,
            "caption: audio takes no caption",
        ));
    }
    Ok(())
}

/// `send_media`'s `mime_type`: its essence (`type/subtype`, lower-cased, parameters dropped).
pub fn mime_type(raw: &str) -> Result<String, RpcError> {
    let essence = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match essence.split_once('/') {
        Some((t, s)) if raw.len() <= MAX_MIME_BYTES && token(t) && token(s) => Ok(essence),
        _ => Err(RpcError::invalid(
            "mime_type",
            "expected a media type such as image/jpeg",
        )),
    }
}

/// `send_media`'s `filename`: a plain file name when given (no path, no `..`, no control or
/// invisible format characters, 1–255 bytes); a document needs one.
pub fn filename(kind: MediaKind, filename: Option<&str>) -> Result<(), RpcError> {
    match filename {
        Some(name) if !is_plain_filename(name) => Err(RpcError::new(
            ErrorCode::InvalidMedia,
            "filename: expected a plain file name (no path, no control characters, at most 255 bytes)",
        )),
        None if kind == MediaKind::Document => Err(RpcError::new(
            ErrorCode::InvalidMedia,
            "filename: a document needs a plain file name",
        )),
        _ => Ok(()),
    }
}

/// Whether `name` is a plain file name. The name is untrusted and never echoed.
pub fn is_plain_filename(name: &str) -> bool {
    !name.trim().is_empty()
        && name.len() <= MAX_FILENAME_BYTES
        && name != "."
        && !name.contains("..")
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control() || is_invisible_format(c))
}

/// Bidirectional overrides and similar format characters that disguise a name
/// (e.g. `photo\u{202E}gpj.exe`).
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn each_rule_names_its_field_never_the_value() {
        for bad in [
            "+972501234567",
            "972501234567@s.whatsapp.net",
            "https://wa.me/972501234567",
            "../c_1",
            "",
        ] {
            let e = send_chat_id(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert!(e.message.starts_with("chat_id:"), "{}", e.message);
            assert!(bad.is_empty() || !e.message.contains(bad));
        }
        assert!(send_chat_id("c_abc123").is_ok());
        for bad in ["", "a b", &"x".repeat(129), "ü"] {
            assert!(
                request_id(bad)
                    .unwrap_err()
                    .message
                    .starts_with("request_id:")
            );
        }
        assert!(request_id("reply-1:a.b_c").is_ok());
        for bad in ["", " \n\t ", &"x".repeat(MAX_TEXT_CHARS + 1)] {
            assert!(send_text(bad).unwrap_err().message.starts_with("text:"));
        }
        assert!(send_text(&"é".repeat(MAX_TEXT_CHARS)).is_ok());
        assert!(send_text(" hi ").is_ok());
    }

    #[test]
    fn media_fields_have_one_rule_each() {
        assert!(caption_length(Some(&"x".repeat(MAX_TEXT_CHARS + 1))).is_err());
        assert!(caption_length(Some(&"x".repeat(MAX_TEXT_CHARS))).is_ok());
        let e = caption_for(MediaKind::Audio, Some("hi")).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidMedia);
        assert!(caption_for(MediaKind::Audio, Some("")).is_ok());
        assert!(caption_for(MediaKind::Image, Some("hi")).is_ok());
        for bad in [
            "a..b",
            "dir/x.pdf",
            "C:\\temp\\a.pdf",
            "../etc/passwd",
            "photo\u{202E}gpj.exe",
            "tab\t.txt",
            "nul\0.txt",
            "",
            " ",
            ".",
            &"x".repeat(256),
        ] {
            let e = filename(MediaKind::Document, Some(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidMedia, "{bad:?}");
            assert!(bad.trim().is_empty() || !e.message.contains(bad));
        }
        assert!(filename(MediaKind::Document, None).is_err());
        assert!(filename(MediaKind::Image, None).is_ok());
        for ok in [
            "Relatório final (2).docx",
            "דוח.txt",
            "a",
            "no-extension",
            &"x".repeat(255),
        ] {
            assert!(filename(MediaKind::Document, Some(ok)).is_ok(), "{ok}");
        }
        assert_eq!(
            mime_type(" Image/JPEG; q=1").unwrap(),
            "image/jpeg",
            "parameters dropped, lower-cased"
        );
        for bad in [
            "",
            "image",
            "image/",
            "/jpeg",
            "image/jp eg",
            "text/<b>",
            &format!("a/{}", "b".repeat(254)),
        ] {
            let e = mime_type(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
            assert!(e.message.starts_with("mime_type:"), "{}", e.message);
        }
    }
}
