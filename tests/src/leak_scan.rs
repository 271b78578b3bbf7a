//! The leak scan's checker (the `leak-scan` binary, run by `scripts/test` after the tests): every
//! secret the tests recorded in the capture directory ([`wazap_shared::leak`]) is looked for in
//! every other file there — the log events and spans of every process, and the error bodies the
//! tests were answered. A hit is reported by file, line and the kind of secret, never by the
//! secret itself (the report is a log too).

use std::collections::BTreeSet;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;
use wazap_shared::leak::{MAX_SECRET_LEN, SECRETS_PREFIX, Secret};

/// One secret found in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The file, relative to the capture directory.
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// The kind of secret (`bearer token`, `message text`, …).
    pub kind: String,
}

/// What a scan looked at and found.
#[derive(Debug, Default)]
pub struct Report {
    /// Distinct secrets looked for.
    pub secrets: usize,
    /// Files scanned (the secrets files excluded).
    pub files: usize,
    /// Lines scanned.
    pub lines: usize,
    /// Every hit, in file and line order.
    pub hits: Vec<Hit>,
}

/// The forms a secret takes in a captured line: as is, escaped inside a JSON string (every
/// capture file is JSON lines) and escaped as Rust's `Debug` writes it (a `?field`).
fn forms(value: &str) -> BTreeSet<String> {
    // Both encoders quote: strip the quotes.
    fn unquote(quoted: &str) -> String {
        quoted[1..quoted.len() - 1].to_owned()
    }
    let json = |v: &str| unquote(&serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into()));
    let debug = unquote(&format!("{value:?}"));
    BTreeSet::from([value.to_owned(), json(value), json(&debug), debug])
}

/// Every secret recorded in `dir` (`secrets-*.jsonl`), one entry per distinct value.
fn secrets(dir: &Path) -> anyhow::Result<Vec<Secret>> {
    let mut all = std::collections::BTreeMap::<String, String>::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with(SECRETS_PREFIX) {
            continue;
        }
        for line in std::fs::read_to_string(&path)?.lines() {
            let s: Secret = serde_json::from_str(line)
                .map_err(|e| anyhow::anyhow!("{name}: a line is not a secret record: {e}"))?;
            // As recorded (a capture of an older harness may hold longer values).
            let value: String = s.value.chars().take(MAX_SECRET_LEN).collect();
            all.entry(value).or_insert(s.kind);
        }
    }
    Ok(all
        .into_iter()
        .map(|(value, kind)| Secret { kind, value })
        .collect())
}

/// Scan every capture file in `dir` for every secret recorded there.
pub fn scan(dir: &Path) -> anyhow::Result<Report> {
    let secrets = secrets(dir)?;
    let mut patterns = Vec::new();
    let mut owner = Vec::new();
    for (i, s) in secrets.iter().enumerate() {
        for f in forms(&s.value) {
            patterns.push(f);
            owner.push(i);
        }
    }
    let matcher = AhoCorasick::new(&patterns)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|p| {
        p.is_file()
            && !p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SECRETS_PREFIX))
    });
    files.sort();
    let mut report = Report {
        secrets: secrets.len(),
        files: files.len(),
        ..Report::default()
    };
    for path in &files {
        let rel = path.strip_prefix(dir).unwrap_or(path).to_path_buf();
        let mut reader = std::io::BufReader::new(std::fs::File::open(path)?);
        let mut line = Vec::new();
        let mut n = 0;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            n += 1;
            if patterns.is_empty() {
                continue;
            }
            let kinds: BTreeSet<&str> = matcher
                .find_overlapping_iter(&line)
                .map(|m| secrets[owner[m.pattern().as_usize()]].kind.as_str())
                .collect();
            report.hits.extend(kinds.into_iter().map(|kind| Hit {
                file: rel.clone(),
                line: n,
                kind: kind.to_owned(),
            }));
        }
        report.lines += n;
    }
    Ok(report)
}

/// The binary: `leak-scan [--require-capture] <capture directory>`. Exit status 0 when clean,
/// 1 on any hit, 2 when the scan could not run — or, with `--require-capture` (a whole run,
/// where an empty capture means the capture is broken), when there was nothing to scan.
pub fn main() -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let require = args.first().is_some_and(|a| a == "--require-capture");
    if require {
        args.remove(0);
    }
    let [dir] = &args[..] else {
        eprintln!("usage: leak-scan [--require-capture] <capture directory>");
        return ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    let report = match scan(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leak-scan: {e:#}");
            return ExitCode::from(2);
        }
    };
    for hit in &report.hits {
        println!("{}:{}: {}", hit.file.display(), hit.line, hit.kind);
    }
    println!(
        "leak-scan: {} secrets looked for in {} lines of {} files: {} hits",
        report.secrets,
        report.lines,
        report.files,
        report.hits.len()
    );
    if report.files == 0 || report.secrets == 0 {
        eprintln!("leak-scan: nothing captured (is WAZAP_LEAK_DIR reaching the tests?)");
        if require {
            return ExitCode::from(2);
        }
    }
    if report.hits.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wazap-leak-scan-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a scratch directory");
        d
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).expect("write");
    }

    const SECRETS: &str = concat!(
        r#"{"kind":"bearer token","value":"eyJhbGciOi.planted.S1GNATURE"}"#,
        "\n",
        r#"{"kind":"message text","value":"see you \"tonight\" at 8"}"#,
        "\n"
    );

    #[test]
    fn a_planted_secret_is_a_hit_by_file_line_and_kind() {
        let d = dir("hit");
        write(&d, "secrets-1.jsonl", SECRETS);
        write(
            &d,
            "events-wazap-gateway-2.jsonl",
            concat!(
                r#"{"fields":{"message":"verified"}}"#,
                "\n",
                r#"{"fields":{"token":"eyJhbGciOi.planted.S1GNATURE"}}"#,
                "\n",
                // JSON-escaped, as any string field of a captured line.
                r#"{"fields":{"text":"see you \"tonight\" at 8"}}"#,
                "\n"
            ),
        );
        let report = scan(&d).expect("scan");
        let found: Vec<(String, usize, &str)> = report
            .hits
            .iter()
            .map(|h| (h.file.display().to_string(), h.line, h.kind.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("events-wazap-gateway-2.jsonl".to_owned(), 2, "bearer token"),
                ("events-wazap-gateway-2.jsonl".to_owned(), 3, "message text"),
            ]
        );
        assert_eq!((report.secrets, report.files, report.lines), (2, 1, 3));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn clean_lines_and_the_secrets_files_themselves_are_no_hit() {
        let d = dir("clean");
        write(&d, "secrets-1.jsonl", SECRETS);
        write(&d, "secrets-2.jsonl", SECRETS);
        write(
            &d,
            "bodies-3.jsonl",
            r#"{"source":"mcp","status":401,"body":"{\"error\":{\"code\":\"unauthenticated\"}}"}"#,
        );
        let report = scan(&d).expect("scan");
        assert!(report.hits.is_empty(), "{:?}", report.hits);
        assert_eq!((report.secrets, report.files), (2, 1));
        let _ = std::fs::remove_dir_all(&d);
    }
}
