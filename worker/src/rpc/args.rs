//! The read tools' argument checks, once each, on the worker's side (the gateway's schema
//! checks are a courtesy; these decide). Each names the field, never its value.

use crate::error::Error;

/// The account a read names (default: `default`), not yet looked up: `invalid_argument` when
/// malformed. Pass it to [`read::in_account`](crate::archive::read::in_account) with the
/// read's query.
pub(super) fn account_name(requested: Option<&str>) -> Result<String, Error> {
    let account = requested.unwrap_or(wazap_shared::ids::DEFAULT_ACCOUNT);
    if !wazap_shared::ids::is_account_id(account) {
        return Err(Error::invalid("account_id", "expected 1–64 of [a-z0-9_-]"));
    }
    Ok(account.to_owned())
}

/// A `limit` argument: `default` when absent, else 1…`max`.
pub(super) fn limit(value: Option<u32>, default: u32, max: u32) -> Result<u32, Error> {
    match value {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(Error::invalid("limit", &format!("expected 1–{max}"))),
    }
}

/// A required `query` argument: trimmed, non-empty (else `invalid_argument` saying `what` it
/// should be), at most 256 characters.
pub(super) fn query<'a>(value: &'a str, what: &str) -> Result<&'a str, Error> {
    let text = value.trim();
    if text.is_empty() {
        return Err(Error::invalid("query", &format!("required: {what}")));
    }
    if text.chars().count() > 256 {
        return Err(Error::invalid("query", "at most 256 characters"));
    }
    Ok(text)
}
