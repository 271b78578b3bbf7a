//! A plain file name (DESIGN §5): no path (`/`, `\`), no `..`, no control characters, not empty,
//! at most 255 bytes. The name is untrusted and never echoed.

/// Longest accepted file name, in bytes.
const MAX_FILENAME_BYTES: usize = 255;

/// Whether `name` is a plain file name.
pub(crate) fn is_plain(name: &str) -> bool {
    !name.trim().is_empty()
        && name.len() <= MAX_FILENAME_BYTES
        && name != "."
        && !name.contains("..")
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control() || is_invisible_format(c))
}

/// Bidirectional overrides and similar format characters that disguise a name
/// (e.g. `photo\u{202E}gpj.exe`).
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass() {
        for ok in [
            "report.pdf",
            "Relatório final (2).docx",
            "דוח.txt",
            "a",
            "no-extension",
        ] {
            assert!(is_plain(ok), "{ok}");
        }
        assert!(is_plain(&"x".repeat(255)));
    }

    #[test]
    fn paths_and_tricks_fail() {
        for bad in [
            "",
            "   ",
            ".",
            "..",
            "../etc/passwd",
            "dir/file.pdf",
            "C:\\temp\\a.pdf",
            "a..b",
            "line\nbreak.txt",
            "nul\0.txt",
            "tab\t.txt",
            "photo\u{202E}gpj.exe",
        ] {
            assert!(!is_plain(bad), "{bad:?}");
        }
        assert!(!is_plain(&"x".repeat(256)));
        assert!(!is_plain(&"é".repeat(128))); // 256 bytes
    }
}
