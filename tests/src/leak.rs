//! The harness's side of the leak scan ([`wazap_shared::leak`]): what the tests create or see
//! that must never show in a log line, a span or an error body is recorded here, at the few
//! places every test goes through (token minting, the MCP and HTTP clients, the sim's inject,
//! the message builders, the owner login). All no-ops unless `WAZAP_LEAK_DIR` is set.

use serde_json::Value;

pub use wazap_shared::leak::{record_body, record_secret, record_token};

/// The kinds of secret, as the scan reports them.
pub mod kind {
    /// An AI connection's bearer token.
    pub const BEARER: &str = "bearer token";
    /// The owner's password.
    pub const OWNER_PASSWORD: &str = "owner password";
    /// A NATS user's password.
    pub const NATS_PASSWORD: &str = "nats password";
    /// The value of an owner session cookie.
    pub const SESSION_COOKIE: &str = "session cookie";
    /// An owner session's CSRF token.
    pub const CSRF: &str = "csrf token";
    /// The text (or caption) of a message a test sent or injected.
    pub const MESSAGE_TEXT: &str = "message text";
    /// A phone number of the WhatsApp test network's phones (recorded through
    /// `wanet::set_secret_hook`, which is told them with this kind and [`MESSAGE_TEXT`]).
    pub const PHONE_NUMBER: &str = "phone number";
    /// WhatsApp key material (the pairing QR's secret, a pairing code).
    pub const WHATSAPP_KEY: &str = "whatsapp key material";
}

/// Record what a tool call's arguments carry that must not leak: a send's text and caption.
pub fn tool_arguments(args: &Value) {
    for field in ["text", "caption"] {
        if let Some(t) = args.get(field).and_then(Value::as_str) {
            record_secret(kind::MESSAGE_TEXT, t);
        }
    }
}

/// Record the value of each `name=value` cookie of a `Cookie` header.
pub fn cookies(header: &str) {
    for pair in header.split(';') {
        if let Some((_, value)) = pair.split_once('=') {
            record_secret(kind::SESSION_COOKIE, value.trim());
        }
    }
}

/// Record the value of the cookie a `Set-Cookie` header sets (its attributes are not secret).
pub fn set_cookie(header: &str) {
    cookies(header.split(';').next().unwrap_or_default());
}

/// Record the bearer token of an `Authorization` header.
pub fn authorization(header: &str) {
    if let Some(token) = header.strip_prefix("Bearer ") {
        record_token(kind::BEARER, token.trim());
    }
}

/// Record an HTTP answer's body when it is an error: status ≥ 400, or a JSON-RPC error or a
/// tool error inside a 200.
pub fn answer(source: &str, status: u16, body: &str) {
    let error_inside = || {
        serde_json::from_str::<Value>(body)
            .is_ok_and(|v| v.get("error").is_some() || v["result"]["isError"] == Value::Bool(true))
    };
    if status >= 400 || error_inside() {
        record_body(source, status, body);
    }
}
