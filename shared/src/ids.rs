//! Opaque identifiers (DESIGN §3) and the checks both sides make on them.

/// The prefix of every opaque chat id (`c_` + a keyed hash).
pub const CHAT_ID_PREFIX: &str = "c_";
/// The prefix of every opaque message id.
pub const MESSAGE_ID_PREFIX: &str = "m_";
/// The prefix of every opaque attachment id.
pub const ATTACHMENT_ID_PREFIX: &str = "a_";
/// The pseudo chat id that addresses status stories in `read_messages`.
pub const STATUS_CHAT: &str = "status";
/// The account id of the first linked account.
pub const DEFAULT_ACCOUNT: &str = "default";

/// True when `s` has the shape of an opaque id with `prefix`: the prefix then 1–64 lowercase
/// hex digits or ASCII letters/digits. It says nothing about whether the id exists.
pub fn is_opaque(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// True when `s` looks like an opaque chat id (`c_…`).
pub fn is_chat_id(s: &str) -> bool {
    is_opaque(s, CHAT_ID_PREFIX)
}

/// The digits of a phone number given as `+972501234567`, `972501234567` or with spaces, dashes
/// or parentheses; `None` when it is not a plausible phone number (7–15 digits, E.164).
pub fn phone_digits(s: &str) -> Option<String> {
    let s = s.trim();
    let body = s.strip_prefix('+').unwrap_or(s);
    if body.is_empty()
        || !body
            .chars()
            .all(|c| c.is_ascii_digit() || " -().".contains(c))
    {
        return None;
    }
    let digits: String = body.chars().filter(char::is_ascii_digit).collect();
    (7..=15).contains(&digits.len()).then_some(digits)
}

/// True when `s` is a valid `request_id`: 1–128 characters of `[A-Za-z0-9._:-]`.
pub fn is_request_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// True when `s` is a valid account id: 1–64 characters of `[a-z0-9_-]`.
pub fn is_account_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_chat_ids() {
        assert!(is_chat_id("c_0123abcd"));
        assert!(!is_chat_id("c_"));
        assert!(!is_chat_id("972501234567@s.whatsapp.net"));
        assert!(!is_chat_id("c_../etc"));
        assert!(!is_chat_id("+972501234567"));
    }

    #[test]
    fn phone_numbers() {
        assert_eq!(
            phone_digits("+972501234567").as_deref(),
            Some("972501234567")
        );
        assert_eq!(
            phone_digits("+1 (555) 010-9999").as_deref(),
            Some("15550109999")
        );
        assert_eq!(phone_digits("c_abc"), None);
        assert_eq!(phone_digits("123"), None);
        assert_eq!(phone_digits("+"), None);
    }

    #[test]
    fn request_ids() {
        assert!(is_request_id("reply-1:a.b_c"));
        assert!(!is_request_id(""));
        assert!(!is_request_id("a b"));
        assert!(!is_request_id(&"x".repeat(129)));
    }
}
