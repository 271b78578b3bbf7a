//! Strict decoding of `data_base64` (DESIGN §5): the standard alphabet with padding, no `data:`
//! prefix, no whitespace, at most [`MAX_MEDIA_BYTES`] decoded. The size is checked from the
//! encoded length before anything is decoded, so an oversize upload costs no allocation.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wazap_shared::wire::send::MAX_MEDIA_BYTES;
use wazap_shared::{ErrorCode, RpcError};

/// Decode `data` or answer `invalid_base64` / `media_too_large` (never quoting the input).
pub(crate) fn decode(data: &str) -> Result<Vec<u8>, RpcError> {
    let invalid =
        |why: &str| RpcError::new(ErrorCode::InvalidBase64, format!("data_base64: {why}"));
    if data.len() >= 5 && data.as_bytes()[..5].eq_ignore_ascii_case(b"data:") {
        return Err(invalid("send the bare base64, without a data: prefix"));
    }
    if data.bytes().any(|b| b.is_ascii_whitespace()) {
        return Err(invalid("must not contain whitespace or line breaks"));
    }
    if data.is_empty() || !data.len().is_multiple_of(4) {
        return Err(invalid("expected standard base64 with = padding"));
    }
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    let decoded_len = data.len() / 4 * 3 - padding.min(2);
    if decoded_len > MAX_MEDIA_BYTES {
        return Err(RpcError::new(
            ErrorCode::MediaTooLarge,
            "data_base64: the media is larger than 8 MiB decoded",
        ));
    }
    STANDARD
        .decode(data)
        .map_err(|_| invalid("expected standard base64 (A-Z a-z 0-9 + /) with = padding"))
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
}
