//! The send tools' argument rules, one checker each with one wording: the gateway calls them
//! to refuse early, the worker calls them again because it decides (DESIGN §4). Errors name the
//! field, never its value.

use crate::RpcError;
use crate::ids::{is_chat_id, is_request_id};
use crate::wire::send::MAX_TEXT_CHARS;

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
}
