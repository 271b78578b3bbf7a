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

/// What joins an opaque id's hash to its account's id, for every account but the default one
/// (`c_<hash>-work`): a hash is letters and digits only, so the first `-` is this separator.
/// The default account's ids have no suffix, so ids handed out before there were several
/// accounts still name the same things.
pub const ACCOUNT_SEPARATOR: char = '-';

/// True when `s` has the shape of a plain opaque id with `prefix`: the prefix then 1–64
/// lowercase hex digits or ASCII letters/digits, and no account (e.g. `conn_…`). It says
/// nothing about whether the id exists.
pub fn is_opaque(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(is_hash)
}

/// An archive id (`c_`, `m_`, `a_`) split into its parts ([`parse_item_id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemId<'a> {
    /// The hash after the prefix.
    pub hash: &'a str,
    /// The account it belongs to ([`DEFAULT_ACCOUNT`] when the id carries none).
    pub account: &'a str,
}

/// `s` as an archive id with `prefix`: the prefix, a hash of 1–64 letters or digits, then
/// `-<account id>` for every account but the default one (whose ids carry none, and never the
/// spelled-out `-default`: one id per thing). `None` when it has another shape.
pub fn parse_item_id<'a>(s: &'a str, prefix: &str) -> Option<ItemId<'a>> {
    let rest = s.strip_prefix(prefix)?;
    let (hash, account) = match rest.split_once(ACCOUNT_SEPARATOR) {
        None => (rest, DEFAULT_ACCOUNT),
        Some((_, DEFAULT_ACCOUNT)) => return None,
        Some((hash, account)) if is_account_id(account) => (hash, account),
        Some(_) => return None,
    };
    is_hash(hash).then_some(ItemId { hash, account })
}

/// `hash` (a fresh hash with its prefix) as the id of a thing of `account`: unchanged for the
/// default account, else with `-<account>` appended ([`parse_item_id`] reads it back).
pub fn with_account(mut hash: String, account: &str) -> String {
    if account != DEFAULT_ACCOUNT {
        hash.push(ACCOUNT_SEPARATOR);
        hash.push_str(account);
    }
    hash
}

/// The account an archive id (`c_…`, `m_…`, `a_…`) belongs to; `None` when it is not one.
pub fn account_of(id: &str) -> Option<&str> {
    [CHAT_ID_PREFIX, MESSAGE_ID_PREFIX, ATTACHMENT_ID_PREFIX]
        .into_iter()
        .find_map(|prefix| parse_item_id(id, prefix))
        .map(|id| id.account)
}

/// The account a read is about, for routing it ([`crate::subjects::Subjects::rpc`]):
/// `account_id` when it is an account id, else the account of the first of `ids` that names
/// one, else the default account. The worker checks the arguments again and decides.
pub fn read_account<'a>(account_id: Option<&'a str>, ids: &[Option<&'a str>]) -> &'a str {
    account_id
        .filter(|a| is_account_id(a))
        .or_else(|| ids.iter().flatten().find_map(|id| account_of(id)))
        .unwrap_or(DEFAULT_ACCOUNT)
}

/// True when `s` looks like an opaque chat id (`c_…`, of any account).
pub fn is_chat_id(s: &str) -> bool {
    parse_item_id(s, CHAT_ID_PREFIX).is_some()
}

/// True when `s` looks like an opaque message id (`m_…`, of any account).
pub fn is_message_id(s: &str) -> bool {
    parse_item_id(s, MESSAGE_ID_PREFIX).is_some()
}

/// True when `s` looks like an opaque attachment id (`a_…`, of any account).
pub fn is_attachment_id(s: &str) -> bool {
    parse_item_id(s, ATTACHMENT_ID_PREFIX).is_some()
}

fn is_hash(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric())
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

/// The rule for an account id, in the words every refusal uses.
pub const ACCOUNT_ID_RULE: &str = "expected 1-32 of [a-z0-9-], starting with a letter or digit";

/// True when `s` is a valid account id: 1–32 characters of `[a-z0-9-]`, the first a letter or
/// a digit (so that it reads well after an id's `-`).
pub fn is_account_id(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
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
    fn ids_carry_their_account() {
        assert_eq!(
            parse_item_id("c_0a1b", CHAT_ID_PREFIX),
            Some(ItemId {
                hash: "0a1b",
                account: DEFAULT_ACCOUNT
            })
        );
        let work = with_account("m_0a1b".to_owned(), "work-2");
        assert_eq!(work, "m_0a1b-work-2");
        assert_eq!(account_of(&work), Some("work-2"));
        assert!(is_message_id(&work) && !is_chat_id(&work));
        assert_eq!(with_account("c_0a1b".to_owned(), DEFAULT_ACCOUNT), "c_0a1b");
        assert_eq!(account_of("a_ff"), Some(DEFAULT_ACCOUNT));
        // One spelling per id: the default account is never spelled out.
        assert!(!is_chat_id("c_0a1b-default"));
        for bad in [
            "c_0a1b-",
            "c_-work",
            "c_0a1b--work",
            "c_0a1b-Work",
            "c_0a1b-w_k",
        ] {
            assert!(!is_chat_id(bad), "{bad}");
            assert_eq!(account_of(bad), None, "{bad}");
        }
        assert!(!is_opaque("conn_ab-work", "conn_"));
    }

    #[test]
    fn reads_route_by_the_account_they_name() {
        assert_eq!(read_account(None, &[]), DEFAULT_ACCOUNT);
        assert_eq!(read_account(Some("work"), &[Some("c_1-home")]), "work");
        assert_eq!(
            read_account(None, &[None, Some("+97250"), Some("m_1-home")]),
            "home"
        );
        assert_eq!(
            read_account(Some("Bad.Id"), &[Some("c_1")]),
            DEFAULT_ACCOUNT
        );
    }

    #[test]
    fn account_ids() {
        for good in ["default", "work", "a", "2nd-phone", &"x".repeat(32)] {
            assert!(is_account_id(good), "{good}");
        }
        for bad in ["", "-work", "Work", "w_k", "w.k", &"x".repeat(33)] {
            assert!(!is_account_id(bad), "{bad}");
        }
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
