//! The hand-written codecs: the wait cursor (`w1.<archive>.<position>`), the opaque-id, phone,
//! request-id and account-id checks, and the send checks. What is made is read back; anything
//! else is refused — compared with a reference spelled out here — never with a panic, and a
//! refusal names its field, never the value it refused.

use proptest::prelude::*;
use wazap_shared::checks;
use wazap_shared::error::ErrorCode;
use wazap_shared::ids::{
    ATTACHMENT_ID_PREFIX, CHAT_ID_PREFIX, MESSAGE_ID_PREFIX, account_of, is_account_id, is_chat_id,
    is_opaque, is_request_id, parse_item_id, phone_digits, with_account,
};
use wazap_shared::wire::send::MediaKind;
use wazap_shared::wire::wait::Cursor;

/// The cursor grammar, spelled out: `w1.`, 32 lowercase hex digits, `.`, a decimal position
/// that fits an `i64`, then `.` and an account id other than `default`, or nothing.
fn is_cursor(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("w1.") else {
        return false;
    };
    let Some((archive, rest)) = rest.split_once('.') else {
        return false;
    };
    let (pos, account) = match rest.split_once('.') {
        Some((pos, account)) => (pos, Some(account)),
        None => (rest, None),
    };
    account.is_none_or(|a| a != "default" && is_account_id(a))
        && archive.len() == 32
        && archive
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && !pos.is_empty()
        && pos.bytes().all(|b| b.is_ascii_digit())
        && pos.parse::<i64>().is_ok()
}

fn archive_id() -> impl Strategy<Value = String> {
    "[0-9a-f]{32}"
}

/// Strings near the cursor grammar: each part right or slightly wrong.
fn cursorish() -> impl Strategy<Value = String> {
    "(w1|w2|W1|w|)[.]?[0-9a-fA-F]{30,33}[.]?[-+]?[0-9]{0,21}[x ]?([.](default|work|-w|W|[a-z0-9-]{0,3}))?"
}

fn account() -> impl Strategy<Value = String> {
    prop_oneof![Just("default".to_owned()), "[a-z0-9][a-z0-9-]{0,31}"]
}

proptest! {
    #![proptest_config(super::config())]
    #[test]
    fn cursors_round_trip(archive_id in archive_id(), position in 0..=i64::MAX, account in account()) {
        let c = Cursor { archive_id, position, account };
        prop_assert_eq!(Cursor::parse(&c.encode()), Ok(c));
    }

    #[test]
    fn cursors_refuse_what_is_no_cursor(s in prop_oneof![any::<String>(), cursorish()]) {
        match Cursor::parse(&s) {
            Ok(c) => {
                prop_assert!(is_cursor(&s), "{s:?} accepted");
                // Read back the same (the position may have been spelled with leading zeros).
                prop_assert_eq!(Cursor::parse(&c.encode()), Ok(c));
            }
            Err(e) => {
                prop_assert!(!is_cursor(&s), "{s:?} refused");
                prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                prop_assert!(e.message.starts_with("cursor: "), "{}", e.message);
                prop_assert!(s.len() < 4 || !e.message.contains(&s), "{} quotes it", e.message);
            }
        }
    }

    #[test]
    fn archive_ids_are_their_prefix_a_hash_and_their_account(
        prefix in prop::sample::select(vec![CHAT_ID_PREFIX, MESSAGE_ID_PREFIX, ATTACHMENT_ID_PREFIX]),
        rest in prop_oneof!["[0-9a-zA-Z]{0,66}", any::<String>(), "[0-9a-f./_+-]{1,8}"],
        suffix in prop_oneof![Just(String::new()), "-[a-z0-9_-]{0,34}", "-default"],
    ) {
        let id = format!("{prefix}{rest}{suffix}");
        let is_hash = |h: &str| (1..=64).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_alphanumeric());
        let hash = is_hash(&rest);
        // The account starts at the first `-`, wherever it came from (`rest` may hold one).
        let body = format!("{rest}{suffix}");
        let (h, account) = match body.split_once('-') {
            None => (body.as_str(), None),
            Some((h, a)) => (h, Some(a)),
        };
        let want = is_hash(h) && account.is_none_or(|a| a != "default" && is_account_id(a));
        prop_assert_eq!(parse_item_id(&id, prefix).is_some(), want, "{:?}", id);
        prop_assert_eq!(is_chat_id(&id), want && prefix == CHAT_ID_PREFIX);
        if want {
            prop_assert_eq!(account_of(&id), Some(account.unwrap_or("default")));
            // What `with_account` makes, `parse_item_id` reads back.
            let made = with_account(format!("{prefix}{h}"), account.unwrap_or("default"));
            prop_assert_eq!(made, id.clone());
        }
        // A plain opaque id never carries an account.
        prop_assert_eq!(is_opaque(&id, prefix), hash && suffix.is_empty());
        // Never without the prefix.
        prop_assert!(parse_item_id(&rest, prefix).is_none() || rest.starts_with(prefix));
    }

    #[test]
    fn phone_numbers_round_trip_through_their_spellings(
        digits in "[0-9]{7,15}",
        plus in any::<bool>(),
        seps in proptest::collection::vec((0usize..16, prop::sample::select(vec![" ", "-", "(", ")", "."])), 0..4),
    ) {
        let mut spelled: Vec<String> = digits.chars().map(String::from).collect();
        for (at, sep) in seps {
            let at = at.min(spelled.len());
            spelled.insert(at, sep.to_owned());
        }
        let spelled = format!("{}{}", if plus { "+" } else { "" }, spelled.concat());
        prop_assert_eq!(phone_digits(&spelled), Some(digits.clone()), "{:?}", spelled);
        prop_assert_eq!(phone_digits(&digits), Some(digits));
    }

    #[test]
    fn phone_numbers_are_7_to_15_digits_or_nothing(s in prop_oneof![any::<String>(), "[+]?[0-9 ()a.-]{0,20}"]) {
        if let Some(d) = phone_digits(&s) {
            prop_assert!((7..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()));
            prop_assert_eq!(phone_digits(&d), Some(d.clone()));
            let digits_in: String = s.chars().filter(char::is_ascii_digit).collect();
            prop_assert_eq!(d, digits_in);
        }
    }

    #[test]
    fn request_and_account_ids_match_their_grammar(s in prop_oneof![
        any::<String>(), "[A-Za-z0-9._:-]{0,130}", "[a-z0-9_-]{0,34}", "[a-zA-Z0-9 /@]{1,5}",
    ]) {
        let n = s.len();
        prop_assert_eq!(
            is_request_id(&s),
            (1..=128).contains(&n) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
        );
        prop_assert_eq!(
            is_account_id(&s),
            (1..=32).contains(&n) && !s.starts_with('-') && s.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
        );
        prop_assert_eq!(checks::request_id(&s).is_ok(), is_request_id(&s));
    }

    /// Every send check takes any input without panicking, and a refusal names the field and
    /// never quotes the value.
    #[test]
    fn send_checks_refuse_without_quoting(
        secret in "[A-Za-z0-9]{10}",
        before in any::<String>(),
        after in any::<String>(),
        kind in prop::sample::select(vec![MediaKind::Image, MediaKind::Video, MediaKind::Audio, MediaKind::Document]),
    ) {
        let v = format!("{before}{secret}{after}");
        let results = [
            checks::send_chat_id(&v).err(),
            checks::request_id(&v).err(),
            checks::send_text(&v).err(),
            checks::caption_length(Some(&v)).err(),
            checks::caption_for(kind, Some(&v)).err(),
            checks::mime_type(&v).err(),
            checks::filename(kind, Some(&v)).err(),
        ];
        for e in results.into_iter().flatten() {
            prop_assert!(!e.message.contains(&secret), "{} quotes the value", e.message);
        }
        let _ = checks::is_plain_filename(&v);
    }
}
