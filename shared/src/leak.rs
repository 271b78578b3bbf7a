//! What the leak scan reads (`scripts/test`, CONTRIBUTING.md "Leak scan"). With
//! `WAZAP_LEAK_DIR` naming a directory, every process writes all it logs there (see
//! [`crate::telemetry`]), and the tests record in it the secrets they create or see (bearer
//! tokens, passwords, session cookies, CSRF tokens, the message texts they send, WhatsApp key
//! material) and the HTTP error bodies they are answered. `leak-scan` then looks for every
//! recorded secret in every captured line. Without the variable nothing here does anything.
//!
//! Files, one set per process: `events-<service>-<pid>.jsonl` (log events and spans as JSON
//! lines), `bodies-<pid>.jsonl` (error bodies) and `secrets-<pid>.jsonl` (one [`Secret`] a line).

use std::collections::HashSet;
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// The environment variable naming the capture directory.
pub const DIR_VAR: &str = "WAZAP_LEAK_DIR";

/// Shorter values are not recorded: they would match by chance (a 3-letter reply, a digit).
pub const MIN_SECRET_LEN: usize = 8;

/// Longer values are recorded by their first this many characters.
pub const MAX_SECRET_LEN: usize = 512;

/// Whether `value` could only match where it was copied: long enough, and not one or two
/// characters repeated (`"aaaaaaaa"` turns up in hex ids by chance).
fn distinctive(value: &str) -> bool {
    let mut distinct: Vec<char> = value.chars().take(64).collect();
    distinct.sort_unstable();
    distinct.dedup();
    value.chars().count() >= MIN_SECRET_LEN && distinct.len() >= 4
}

/// The name prefix of the files holding recorded secrets (the scanner reads them as patterns,
/// and scans every other file).
pub const SECRETS_PREFIX: &str = "secrets-";

/// One recorded secret: what it is (printed on a hit) and its value (never printed).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Secret {
    /// `bearer token`, `owner password`, `session cookie`, `csrf token`, `message text`, …
    pub kind: String,
    /// The secret itself.
    pub value: String,
}

/// The capture directory, when the leak scan is on.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os(DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Open `<dir>/<prefix><pid>.jsonl` for appending (creating the directory when needed).
pub(crate) fn open(name: &str) -> Option<File> {
    let dir = dir()?;
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("leak capture: cannot create the capture directory: {e}");
        return None;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .map_err(|e| eprintln!("leak capture: cannot open {name}: {e}"))
        .ok()
}

/// A per-process append-only JSON-lines file, opened on first use.
struct Sink {
    file: Mutex<Option<File>>,
    seen: Mutex<HashSet<String>>,
}

impl Sink {
    fn new(prefix: &str) -> Self {
        Self {
            file: Mutex::new(open(&format!("{prefix}{}.jsonl", std::process::id()))),
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Append `line` (one write, so lines of concurrent writers never interleave); when `dedupe`,
    /// only the first time this process sees it.
    fn append(&self, mut line: String, dedupe: bool) {
        if dedupe
            && !self
                .seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(line.clone())
        {
            return;
        }
        line.push('\n');
        if let Some(f) = self.file.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

static SECRETS: OnceLock<Sink> = OnceLock::new();
static BODIES: OnceLock<Sink> = OnceLock::new();

/// Record a secret a test created or saw, so the scan fails if any process logs it. Values
/// shorter than [`MIN_SECRET_LEN`] characters or of fewer than four distinct characters are
/// ignored; a no-op unless the scan is on.
pub fn record_secret(kind: &str, value: &str) {
    if dir().is_none() || !distinctive(value) {
        return;
    }
    // A long text (a test of the size limits) is looked for by its start: a log line quoting
    // it would quote that, and a megabyte pattern only slows the scan.
    let value = match value.char_indices().nth(MAX_SECRET_LEN) {
        Some((end, _)) => &value[..end],
        None => value,
    };
    let secret = Secret {
        kind: kind.to_owned(),
        value: value.to_owned(),
    };
    let Ok(line) = serde_json::to_string(&secret) else {
        return;
    };
    SECRETS
        .get_or_init(|| Sink::new(SECRETS_PREFIX))
        .append(line, true);
}

/// Record a bearer token, and its signature apart (a JWT's third part: what proves it, and
/// what a log line cut short would still carry).
pub fn record_token(kind: &str, token: &str) {
    record_secret(kind, token);
    if let Some(signature) = token.rsplit('.').next().filter(|s| s.len() >= 16)
        && signature != token
    {
        record_secret(&format!("{kind} (signature)"), signature);
    }
}

/// Record an HTTP error body a test client was answered (`status` ≥ 400, or a tool or
/// JSON-RPC error inside a 200): what a user sees is scanned like a log line. `source` says
/// which client (`owner api`, `mcp`, …).
pub fn record_body(source: &str, status: u16, body: &str) {
    if dir().is_none() || body.is_empty() {
        return;
    }
    let line = serde_json::json!({"source": source, "status": status, "body": body}).to_string();
    BODIES
        .get_or_init(|| Sink::new("bodies-"))
        .append(line, false);
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_or_repetitive_values_are_not_distinctive() {
        assert!(super::distinctive("see you at eight"));
        assert!(super::distinctive("eyJhbGci"));
        assert!(!super::distinctive("short"));
        assert!(!super::distinctive(&"ab".repeat(100)));
    }
}
