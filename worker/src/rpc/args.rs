//! The read tools' argument checks, once each, on the worker's side (the gateway's schema
//! checks are a courtesy; these decide). Each names the field, never its value.

use wazap_shared::ids::{ACCOUNT_ID_RULE, DEFAULT_ACCOUNT, account_of, is_account_id};

use std::borrow::Cow;

use wazap_shared::ErrorCode;

use crate::error::Error;
use crate::viewer::Viewer;

/// The account a read covers, not yet looked up: `account_id` when given, else the first of
/// the accounts its other arguments name (each opaque id names its own,
/// [`wazap_shared::ids::account_of`]; a cursor too), else the default one. `invalid_argument`
/// when `account_id` is malformed, or when an argument names another account than
/// `account_id` or than an argument before it (naming that argument). Pass it to
/// [`read::in_account`](crate::archive::read::in_account) with the read's query.
pub(super) fn account(
    account_id: Option<&str>,
    named: &[(&'static str, Option<&str>)],
) -> Result<String, Error> {
    if let Some(a) = account_id
        && !is_account_id(a)
    {
        return Err(Error::invalid("account_id", ACCOUNT_ID_RULE));
    }
    let mut decided = account_id.map(|a| ("account_id", a));
    for &(field, theirs) in named {
        let Some(theirs) = theirs else {
            continue;
        };
        match decided {
            None => decided = Some((field, theirs)),
            Some((_, ours)) if ours == theirs => {}
            Some((by, _)) => {
                return Err(Error::invalid(
                    field,
                    &format!("belongs to another account than {by}"),
                ));
            }
        }
    }
    Ok(decided.map_or(DEFAULT_ACCOUNT, |(_, a)| a).to_owned())
}

/// `viewer` inside `account` ([`Viewer::in_account`]): `account_not_found` when its scope does
/// not read that account, the same answer as for an account that does not exist.
pub(super) fn viewer_in<'v>(viewer: &'v Viewer, account: &str) -> Result<Cow<'v, Viewer>, Error> {
    viewer
        .in_account(account)
        .ok_or_else(|| Error::new(ErrorCode::AccountNotFound, "no such account"))
}

/// The account opaque id `id` names, if it is one (`None` for a phone number or no id).
pub(super) fn of(id: Option<&str>) -> Option<&str> {
    id.and_then(account_of)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_comes_from_the_argument_or_the_ids_and_they_must_agree() {
        let field = |r: Result<String, Error>| r.unwrap_err().to_string();
        assert_eq!(account(None, &[]).unwrap(), "default");
        assert_eq!(account(Some("work"), &[]).unwrap(), "work");
        assert_eq!(
            account(None, &[("chat_id", of(Some("c_ab-work")))]).unwrap(),
            "work"
        );
        // A phone number or an absent id says nothing.
        assert_eq!(
            account(
                Some("work"),
                &[("chat_id", of(Some("+972501234567"))), ("before", of(None))]
            )
            .unwrap(),
            "work"
        );
        assert_eq!(
            account(Some("default"), &[("chat_id", of(Some("c_ab")))]).unwrap(),
            "default"
        );
        let e = field(account(Some("work"), &[("chat_id", of(Some("c_ab")))]));
        assert!(
            e.contains("chat_id") && e.contains("another account than account_id"),
            "{e}"
        );
        let e = field(account(
            None,
            &[
                ("chat_id", of(Some("c_ab-home"))),
                ("before", of(Some("m_cd-work"))),
            ],
        ));
        assert!(e.contains("before") && e.contains("than chat_id"), "{e}");
        let e = field(account(Some("Work"), &[]));
        assert!(e.contains("account_id"), "{e}");
    }
}
