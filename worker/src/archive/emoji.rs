//! Which characters the search index keeps as emoji lexemes (DESIGN §5). The Postgres parser
//! drops emoji, so the writer extracts them here (cheaper than a regex per row in SQL) into the
//! `messages.emoji` column that migration 0004's `search` vector reads, and the query parser
//! uses the same rule, so a query emoji and an indexed one always agree.

/// True for the code points indexed as emoji (skin tones and the parts of joined sequences
/// count on their own; the variation selector U+FE0F does not).
pub(crate) fn is_emoji(c: char) -> bool {
    matches!(c as u32, 0x2300..=0x23FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0x1F000..=0x1FAFF)
}

/// The distinct emoji of `text`, space-separated in first-seen order (the column's format:
/// `string_to_array(emoji, ' ')`), or `None` when it has none.
pub(crate) fn lexemes(text: &str) -> Option<String> {
    let mut out = String::new();
    for c in text.chars().filter(|&c| is_emoji(c)) {
        if !out.split(' ').any(|e| e.chars().eq(std::iter::once(c))) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push(c);
        }
    }
    Some(out).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_emoji_code_points_only() {
        assert_eq!(lexemes("a 🙂 b 👍🏽 ❤️ 🙂").as_deref(), Some("🙂 👍 🏽 ❤"));
        assert_eq!(lexemes("no emoji here, שלום"), None);
        assert_eq!(lexemes(""), None);
        assert!(!is_emoji('\u{FE0F}'));
    }
}
