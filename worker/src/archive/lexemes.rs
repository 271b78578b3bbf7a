//! The words of the search index, cut and folded here in Rust for both sides: the writer stores a
//! message's distinct lexemes (`messages.lexemes`, space-separated) and migration 0007's
//! `search` vector is just `array_to_tsvector` of them; the query parser cuts an agent's words
//! with the same rule, so a query word and an indexed one always agree. Postgres's own parser
//! plus `unaccent` cost ~12 µs of CPU per message at ingest, this ~1 µs (DESIGN §11's 50k/s).
//!
//! The rule, one for every language at once: lower-case, decompose and drop combining marks
//! (accents, Hebrew points: `reunião` → `reuniao`), fold a few letters that do not decompose
//! (`ß` → `ss`, `ø` → `o`, …); a word is a run of letters and digits; each emoji code point is a
//! lexeme of its own (skin tones too, the variation selector U+FE0F not).

use unicode_normalization::UnicodeNormalization as _;
use unicode_normalization::char::is_combining_mark;

/// Longest lexeme kept, in bytes (Postgres refuses longer ones; nobody searches for them).
const MAX_LEXEME_BYTES: usize = 255;
/// Most bytes of lexemes one message indexes (a tsvector must stay under 1 MB).
const MAX_TOTAL_BYTES: usize = 256 * 1024;

/// True for the code points indexed as emoji.
pub(crate) fn is_emoji(c: char) -> bool {
    matches!(c as u32, 0x2300..=0x23FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0x1F000..=0x1FAFF)
}

/// One piece of text as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// A folded word.
    Word(String),
    /// One emoji code point.
    Emoji(char),
}

impl Token {
    /// The lexeme's text.
    pub(crate) fn as_lexeme(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Token::Word(w) => w.as_str().into(),
            Token::Emoji(c) => c.to_string().into(),
        }
    }
}

/// Letters that have no decomposition but an obvious base, as Postgres's `unaccent` folds them.
fn fold_special(c: char, out: &mut String) -> bool {
    let s = match c {
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        'ø' => "o",
        'ł' => "l",
        'đ' => "d",
        'ı' => "i",
        'þ' => "th",
        _ => return false,
    };
    out.push_str(s);
    true
}

/// The tokens of `text`, in order (repeats included).
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<Token>| {
        if !word.is_empty() {
            let w = std::mem::take(word);
            if w.len() <= MAX_LEXEME_BYTES {
                out.push(Token::Word(w));
            }
        }
    };
    let mut folded = String::new();
    for c in text.chars() {
        // ASCII (most text, and every separator) needs no decomposition.
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                word.push(c.to_ascii_lowercase());
            } else {
                flush(&mut word, &mut out);
            }
            continue;
        }
        folded.clear();
        folded.extend(c.to_lowercase().nfd());
        for c in folded.chars() {
            if is_combining_mark(c) {
                continue;
            }
            if c.is_alphanumeric() {
                if !fold_special(c, &mut word) {
                    word.push(c);
                }
                continue;
            }
            flush(&mut word, &mut out);
            if is_emoji(c) {
                out.push(Token::Emoji(c));
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The distinct lexemes of `text`, space-separated in first-seen order (the column's format:
/// `string_to_array(lexemes, ' ')`), or `None` when it has none.
pub(crate) fn of_text(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut seen = std::collections::HashSet::new();
    for t in tokens(text) {
        let lexeme = t.as_lexeme();
        if out.len() + lexeme.len() + 1 > MAX_TOTAL_BYTES {
            break;
        }
        if seen.insert(lexeme.clone().into_owned()) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&lexeme);
        }
    }
    Some(out).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fold_case_and_accents_in_every_script() {
        assert_eq!(
            of_text("Reunião AMANHÃ às 10h, e-mail: Ana@x.com").as_deref(),
            Some("reuniao amanha as 10h e mail ana x com")
        );
        // Hebrew points and cantillation marks go; the letters stay.
        assert_eq!(of_text("שָׁלוֹם עולם").as_deref(), Some("שלום עולם"));
        assert_eq!(of_text("Straße Søren").as_deref(), Some("strasse soren"));
        assert_eq!(of_text("   ,.;  "), None);
    }

    #[test]
    fn emoji_are_lexemes_of_their_own_and_split_words() {
        assert_eq!(
            of_text("a 🙂 b 👍🏽 ❤️ 🙂party").as_deref(),
            Some("a 🙂 b 👍 🏽 ❤ party")
        );
        assert!(!is_emoji('\u{FE0F}'));
    }

    #[test]
    fn repeats_once_and_giant_words_dropped() {
        let long = "x".repeat(MAX_LEXEME_BYTES + 1);
        assert_eq!(
            of_text(&format!("hi HI hi {long} yo")).as_deref(),
            Some("hi yo")
        );
        let many: String = (0..100_000).map(|i| format!("w{i} ")).collect();
        assert!(of_text(&many).unwrap().len() <= MAX_TOTAL_BYTES);
    }
}
