//! Reading configuration once, from the environment, into typed structs.
//!
//! Each binary has its own `Config` built from a [`Source`]; tests pass a map instead of touching
//! the process environment. A bad value becomes a [`ConfigError`] that names the variable and says
//! what was expected, never the value itself (it may be a secret).

use std::collections::HashMap;
use std::str::FromStr;

mod nats;

pub use nats::{
    NATS_CREDS_FILE, NATS_NKEY_SEED, NATS_PASSWORD, NATS_REPLICAS, NATS_TLS_CA_FILE,
    NATS_TLS_CERT_FILE, NATS_TLS_KEY_FILE, NATS_TLS_REQUIRED, NATS_TOKEN, NATS_USER, NatsAuth,
    NatsConfig, NatsTls, Secret,
};

/// `WAZAP_NATS_URL`.
pub const NATS_URL: &str = "WAZAP_NATS_URL";
/// `WAZAP_NATS_PREFIX`.
pub const NATS_PREFIX: &str = "WAZAP_NATS_PREFIX";
/// Default NATS URL.
pub const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";
/// Default subject prefix.
pub const DEFAULT_NATS_PREFIX: &str = "wazap";

/// Where configuration values come from.
pub trait Source {
    /// The raw value of `key`, if set.
    fn get(&self, key: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Env;

impl Source for Env {
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }
}

impl Source for HashMap<String, String> {
    fn get(&self, key: &str) -> Option<String> {
        HashMap::get(self, key).cloned()
    }
}

impl Source for HashMap<&str, &str> {
    fn get(&self, key: &str) -> Option<String> {
        HashMap::get(self, key).map(|v| (*v).to_owned())
    }
}

/// A configuration value that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration: {var}: {expected}")]
pub struct ConfigError {
    /// The variable's name.
    pub var: &'static str,
    /// What a good value looks like.
    pub expected: String,
}

impl ConfigError {
    /// An error for `var`, saying what was expected.
    pub fn new(var: &'static str, expected: impl Into<String>) -> Self {
        Self {
            var,
            expected: expected.into(),
        }
    }
}

/// The value of `var`, trimmed, or `default` when unset or empty.
pub fn string(src: &impl Source, var: &'static str, default: &str) -> String {
    src.get(var)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// The value of `var` parsed with `FromStr`, or `default` when unset or empty.
pub fn parsed<T: FromStr>(
    src: &impl Source,
    var: &'static str,
    default: T,
    expected: &str,
) -> Result<T, ConfigError> {
    match src
        .get(var)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| ConfigError::new(var, expected)),
    }
}

/// An `on`/`off` switch (also `true`/`false`, `1`/`0`).
pub fn switch(src: &impl Source, var: &'static str, default: bool) -> Result<bool, ConfigError> {
    match src
        .get(var)
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") => Ok(default),
        Some("on" | "true" | "1" | "yes") => Ok(true),
        Some("off" | "false" | "0" | "no") => Ok(false),
        Some(_) => Err(ConfigError::new(var, "expected on or off")),
    }
}

/// A NATS subject prefix: one or more tokens of `[A-Za-z0-9_-]` separated by dots.
pub fn nats_prefix(src: &impl Source) -> Result<String, ConfigError> {
    let p = string(src, NATS_PREFIX, DEFAULT_NATS_PREFIX);
    let ok = p.split('.').all(|t| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    });
    ok.then_some(p).ok_or_else(|| {
        ConfigError::new(
            NATS_PREFIX,
            "expected dot-separated tokens of [A-Za-z0-9_-]",
        )
    })
}

/// A NATS URL (`nats://host:port`, several comma-separated allowed).
pub fn nats_url(src: &impl Source) -> Result<String, ConfigError> {
    let u = string(src, NATS_URL, DEFAULT_NATS_URL);
    let ok = u.split(',').all(|p| {
        let p = p.trim();
        ["nats://", "tls://", "ws://", "wss://"]
            .iter()
            .any(|s| p.starts_with(s))
            || !p.contains("://")
    });
    ok.then_some(u)
        .ok_or_else(|| ConfigError::new(NATS_URL, "expected a nats:// URL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(pairs: &[(&'static str, &'static str)]) -> HashMap<&'static str, &'static str> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn defaults_apply_when_unset() {
        let s = src(&[]);
        assert_eq!(nats_prefix(&s).unwrap(), "wazap");
        assert_eq!(nats_url(&s).unwrap(), DEFAULT_NATS_URL);
        assert!(switch(&s, "X", true).unwrap());
    }

    #[test]
    fn bad_values_name_the_variable_not_the_value() {
        let s = src(&[(NATS_PREFIX, "a..b"), ("N", "twelve"), ("S", "maybe")]);
        let e = nats_prefix(&s).unwrap_err();
        assert_eq!(e.var, NATS_PREFIX);
        assert!(!e.to_string().contains("a..b"));
        assert!(parsed::<u32>(&s, "N", 1, "a number").is_err());
        assert!(switch(&s, "S", true).is_err());
    }
}
