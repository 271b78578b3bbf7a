//! Strict decoding of `data_base64` (DESIGN §5): the standard alphabet with padding, no `data:`
//! prefix, no whitespace, at most [`MAX_MEDIA_BYTES`] decoded. The size is checked from the
//! encoded length before anything is decoded, so an oversize upload costs no allocation.
//!
//! Two ways in, one set of rules and wordings: [`decode`] from a string of its own, and
//! [`decode_in_place`] over the base64 inside a buffer the caller gives up (the JSON body of
//! `POST /api/send/media|voice`, or of a `/mcp` call of `send_media`/`send_voice_note` on the
//! direct route), whose bytes become the decoded media — no second copy of an 11 MiB upload.
//! [`locate`] finds where a `data_base64` parsed from such a body lies.

use std::borrow::Cow;
use std::ops::Range;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wazap_shared::wire::send::MAX_MEDIA_BYTES;
use wazap_shared::{ErrorCode, RpcError};

/// The wording for anything outside the alphabet or the padding rules.
const NOT_STANDARD: &str = "expected standard base64 (A-Z a-z 0-9 + /) with = padding";

/// How much base64 [`decode_in_place`] decodes at a time (a multiple of 4).
const IN_PLACE_CHUNK: usize = 64 * 1024;

/// Where a send's `data_base64` is.
#[derive(Debug)]
pub(crate) enum Base64<'a> {
    /// A borrowed string (a request's own `data_base64`).
    Str(&'a str),
    /// A string taken out of its request (a tool call's argument, or a JSON body's string that
    /// had escapes), freed once decoded.
    String(String),
    /// `range` of `buf`, a buffer the send gives up: decoded in place, `buf` becomes the media.
    InBuffer {
        /// The buffer (the request body).
        buf: Vec<u8>,
        /// Where the base64 is in it.
        range: Range<usize>,
    },
}

impl Base64<'_> {
    /// The media bytes, or `invalid_base64` / `media_too_large`.
    pub(crate) fn decode(self) -> Result<Vec<u8>, RpcError> {
        match self {
            Base64::Str(data) => decode(data),
            Base64::String(data) => decode(&data),
            Base64::InBuffer { buf, range } => decode_in_place(buf, range),
        }
    }
}

/// Where a `data_base64` parsed from a JSON body is.
#[derive(Debug)]
pub(crate) enum Place {
    /// These bytes of the body (the JSON string had no escapes).
    Body(Range<usize>),
    /// Unescaped into a string of its own (the JSON string had escapes, such as `\/`).
    Own(String),
}

impl Place {
    /// The base64 to decode, given the body it was parsed from back.
    pub(crate) fn into_base64(self, body: Vec<u8>) -> Base64<'static> {
        match self {
            Place::Body(range) => Base64::InBuffer { buf: body, range },
            Place::Own(text) => Base64::String(text),
        }
    }
}

/// Where `data`, parsed from `body`, is: a range of `body` when it was borrowed from it.
pub(crate) fn locate(body: &[u8], data: Cow<'_, str>) -> Place {
    match data {
        Cow::Borrowed(text) => {
            let start = text.as_ptr().addr().wrapping_sub(body.as_ptr().addr());
            let range = start..start.wrapping_add(text.len());
            // Always so for a string borrowed from the body; anything else is copied.
            if body
                .get(range.clone())
                .is_some_and(|b| b.as_ptr() == text.as_ptr())
            {
                Place::Body(range)
            } else {
                Place::Own(text.to_owned())
            }
        }
        Cow::Owned(text) => Place::Own(text),
    }
}

fn invalid(why: &str) -> RpcError {
    RpcError::new(ErrorCode::InvalidBase64, format!("data_base64: {why}"))
}

/// The checks made before decoding: no `data:` prefix, no whitespace, a padded length, at most
/// 8 MiB once decoded.
fn precheck(data: &[u8]) -> Result<(), RpcError> {
    if data.len() >= 5 && data[..5].eq_ignore_ascii_case(b"data:") {
        return Err(invalid("send the bare base64, without a data: prefix"));
    }
    if data.iter().any(|b| b.is_ascii_whitespace()) {
        return Err(invalid("must not contain whitespace or line breaks"));
    }
    if data.is_empty() || !data.len().is_multiple_of(4) {
        return Err(invalid("expected standard base64 with = padding"));
    }
    let padding = data.iter().rev().take_while(|&&b| b == b'=').count();
    let decoded_len = data.len() / 4 * 3 - padding.min(2);
    if decoded_len > MAX_MEDIA_BYTES {
        return Err(RpcError::new(
            ErrorCode::MediaTooLarge,
            "data_base64: the media is larger than 8 MiB decoded",
        ));
    }
    Ok(())
}

/// Decode `data` or answer `invalid_base64` / `media_too_large` (never quoting the input).
pub(crate) fn decode(data: &str) -> Result<Vec<u8>, RpcError> {
    precheck(data.as_bytes())?;
    STANDARD.decode(data).map_err(|_| invalid(NOT_STANDARD))
}

/// [`decode`] of the base64 at `range` in `buf`, written over `buf` from its start: the result is
/// `buf` itself, truncated to the media (its allocation is kept). A chunk at a time through a
/// small scratch buffer; the output never overtakes the input (3 bytes out for 4 in, from a
/// start no later than the input's). Only the last chunk may hold `=`, so padding in the middle
/// is refused as [`decode`] refuses it: same rules, same answers.
pub(crate) fn decode_in_place(mut buf: Vec<u8>, range: Range<usize>) -> Result<Vec<u8>, RpcError> {
    precheck(&buf[range.clone()])?;
    let mut scratch = vec![0u8; IN_PLACE_CHUNK / 4 * 3];
    let (mut read, mut written) = (range.start, 0);
    while read < range.end {
        let end = range.end.min(read + IN_PLACE_CHUNK);
        let chunk = &buf[read..end];
        if end < range.end && chunk.contains(&b'=') {
            return Err(invalid(NOT_STANDARD));
        }
        let n = STANDARD
            .decode_slice(chunk, &mut scratch)
            .map_err(|_| invalid(NOT_STANDARD))?;
        buf[written..written + n].copy_from_slice(&scratch[..n]);
        written += n;
        read = end;
    }
    buf.truncate(written);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> ErrorCode {
        decode(s).unwrap_err().code
    }

    #[test]
    fn accepts_standard_padded_base64() {
        assert_eq!(decode("aGk=").unwrap(), b"hi");
        assert_eq!(decode("aGk/").unwrap(), [0x68, 0x69, 0x3f]);
        assert_eq!(decode("+/8=").unwrap(), [0xfb, 0xff]);
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "",
            "aGk",                        // no padding
            "aGk=\n",                     // newline
            "aG k=",                      // space
            "data:image/png;base64,aGk=", // data URL
            "DATA:aGk=",
            "aGk_", // URL-safe alphabet
            "aG-=",
            "a===",     // too much padding
            "aGk=aGk=", // padding in the middle
            "aGl=",     // non-canonical trailing bits
            "é===",
        ] {
            assert_eq!(code(bad), ErrorCode::InvalidBase64, "{bad:?}");
        }
    }

    #[test]
    fn size_is_checked_before_decoding() {
        // 8 MiB = 3 * 2,796,202 + 2 bytes: full groups, then one group of two bytes.
        let groups = "A".repeat(MAX_MEDIA_BYTES / 3 * 4);
        let fits = format!("{groups}AAA=");
        assert_eq!(decode(&fits).unwrap().len(), MAX_MEDIA_BYTES);
        let over = format!("{groups}AAAA");
        assert_eq!(code(&over), ErrorCode::MediaTooLarge);
        assert!(!decode(&over).unwrap_err().message.contains("AAAA"));
    }

    /// [`decode_in_place`] of `data` inside a buffer with JSON around it.
    fn in_place(data: &str) -> Result<Vec<u8>, RpcError> {
        let mut buf = br#"{"chat_id":"c_1","data_base64":""#.to_vec();
        let start = buf.len();
        buf.extend_from_slice(data.as_bytes());
        let range = start..buf.len();
        buf.extend_from_slice(br#"","seconds":3}"#);
        decode_in_place(buf, range)
    }

    #[test]
    fn in_place_decoding_answers_exactly_as_decode() {
        let (a, b) = (IN_PLACE_CHUNK, 2 * IN_PLACE_CHUNK);
        let long = |n: usize| "QUJD".repeat(n / 4);
        let mut cases: Vec<String> = [
            "",
            "aGk",
            "aGk=\n",
            "aG k=",
            "data:image/png;base64,aGk=",
            "DATA:aGk=",
            "aGk_",
            "aG-=",
            "a===",
            "aGk=aGk=",
            "aGl=",
            "é===",
            "aGk=",
            "aGk/",
            "+/8=",
            "QUJD",
        ]
        .map(str::to_owned)
        .to_vec();
        // Across chunk boundaries: whole chunks, a short last chunk with padding, padding at
        // the end of a chunk that is not the last, and a bad byte deep in a later chunk.
        cases.push(long(a));
        cases.push(long(b));
        cases.push(format!("{}aGk=", long(a)));
        cases.push(format!("{}aG==", long(b)));
        cases.push(format!("{}aGk={}", long(a - 4), long(8)));
        cases.push(format!("{}aGk={}", long(a), long(8)));
        cases.push(format!("{}a_Gk{}", long(b - 8), long(16)));
        cases.push(format!("{}\n", long(a)));
        for data in &cases {
            match (decode(data), in_place(data)) {
                (Ok(x), Ok(y)) => assert_eq!(x, y, "{} chars", data.len()),
                (Err(x), Err(y)) => {
                    assert_eq!(
                        (x.code, &x.message),
                        (y.code, &y.message),
                        "{} chars",
                        data.len()
                    );
                }
                (x, y) => panic!("{} chars: {:?} vs {:?}", data.len(), x.is_ok(), y.is_ok()),
            }
        }
        let groups = "A".repeat(MAX_MEDIA_BYTES / 3 * 4);
        assert_eq!(
            in_place(&format!("{groups}AAA=")).unwrap().len(),
            MAX_MEDIA_BYTES
        );
        assert_eq!(
            in_place(&format!("{groups}AAAA")).unwrap_err().code,
            ErrorCode::MediaTooLarge
        );
    }
}
