//! Opaque ids, phone numbers, request and account ids, wait cursors, the send checks, and the
//! owner API bodies (`wazap_shared::wire::owner`) as JSON.
#![no_main]

use std::str::FromStr as _;

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wazap_shared::grant::ConnectionKind;
use wazap_shared::wire::owner::{
    AccountActionRequest, ChatsRequest, CreateConnectionRequest, LoginRequest, ReadScopeRequest,
    RevokeRequest, RotateRequest, SendPermissionRequest, SendsRequest, SetPolicyRequest,
};
use wazap_shared::wire::send::MediaKind;
use wazap_shared::wire::wait::{Cursor, WaitForMessagesRequest};
use wazap_shared::{checks, ids};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        strings(s);
    }
    bodies(data);
});

fn strings(s: &str) {
    for prefix in [
        ids::CHAT_ID_PREFIX,
        ids::MESSAGE_ID_PREFIX,
        ids::ATTACHMENT_ID_PREFIX,
    ] {
        if ids::is_opaque(s, prefix) {
            assert!(s.is_ascii() && s.len() <= prefix.len() + 64);
        }
    }
    let _ = ids::is_chat_id(s);
    if let Some(digits) = ids::phone_digits(s) {
        assert!((7..=15).contains(&digits.len()));
        assert!(digits.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(ids::phone_digits(&digits).as_deref(), Some(digits.as_str()));
    }
    if ids::is_request_id(s) {
        assert!((1..=128).contains(&s.len()));
    }
    let _ = ids::is_account_id(s);
    if let Ok(cursor) = Cursor::parse(s) {
        assert_eq!(
            Cursor::parse(&cursor.encode()).expect("encoded cursor"),
            cursor
        );
    }
    if let Ok(kind) = ConnectionKind::from_str(s) {
        assert_eq!(kind.as_str(), s);
    }
    let _ = checks::send_chat_id(s);
    let _ = checks::request_id(s);
    let _ = checks::send_text(s);
    let _ = checks::caption_length(Some(s));
    let _ = checks::mime_type(s);
    let _ = checks::is_plain_filename(s);
    for kind in [
        MediaKind::Image,
        MediaKind::Video,
        MediaKind::Audio,
        MediaKind::Document,
    ] {
        let _ = checks::filename(kind, Some(s));
        let _ = checks::caption_for(kind, Some(s));
    }
}

/// `T` from JSON, and when it parses, serialised and parsed back to the same value.
fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<T>(data) {
        let json = serde_json::to_vec(&value).expect("serialises");
        let back: T = serde_json::from_slice(&json).expect("parses back");
        assert_eq!(back, value);
    }
}

fn bodies(data: &[u8]) {
    round_trip::<LoginRequest>(data);
    round_trip::<CreateConnectionRequest>(data);
    round_trip::<RotateRequest>(data);
    round_trip::<ReadScopeRequest>(data);
    round_trip::<RevokeRequest>(data);
    round_trip::<SendPermissionRequest>(data);
    round_trip::<ChatsRequest>(data);
    round_trip::<SetPolicyRequest>(data);
    round_trip::<AccountActionRequest>(data);
    round_trip::<SendsRequest>(data);
    if let Ok(wait) = serde_json::from_slice::<WaitForMessagesRequest>(data) {
        let _ = wait.timeout();
        if let Some(cursor) = wait.cursor.as_deref() {
            let _ = Cursor::parse(cursor);
        }
    }
}
