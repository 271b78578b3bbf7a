//! The words of the search index, cut and folded here in Rust for both sides: the writer makes a
//! message's `search` vector of its distinct lexemes (`archive::vector`); the query parser cuts
//! an agent's words with the same rule, so a query word and an indexed one always agree.
//! Postgres's own parser plus `unaccent` cost an order of magnitude more CPU per message at
//! ingest than this (DESIGN §11's 50k/s; figures in bench/README.md).
//!
//! The rule, one for every language at once: lower-case, decompose and drop combining marks
//! (accents, Hebrew points: `reunião` → `reuniao`), fold a few letters that do not decompose
//! (`ß` → `ss`, `ø` → `o`, …); a word is a run of letters and digits; each emoji code point is a
//! lexeme of its own (skin tones too, the variation selector U+FE0F not).

use std::ops::Range;

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
fn fold_special(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        'ø' => "o",
        'ł' => "l",
        'đ' => "d",
        'ı' => "i",
        'þ' => "th",
        _ => return None,
    })
}

/// One lexeme as the scanner hands it over, borrowed from its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lexeme<'a> {
    /// A folded word.
    Word(&'a str),
    /// One emoji code point.
    Emoji(char),
}

/// What one character does to the word being cut, as the general rule ([`fold_general`])
/// decides; cached for every two-byte character (Latin accents, Greek, Cyrillic, Hebrew,
/// Arabic…), where lower-casing and decomposing dominated the ingest's share of this module.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fold {
    /// Append these letters (empty for a combining mark, which the rule drops).
    Letters(Box<str>),
    /// End the word here.
    Separator,
    /// Anything else: take the general path.
    General,
}

/// One step of the general rule for one character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// Append this letter or digit to the word.
    Push(char),
    /// End the word here.
    Break,
    /// Hand over this emoji as a lexeme of its own (after a break).
    Emoji(char),
}

/// The general rule for one non-ASCII character: lower-case, decompose, drop combining marks,
/// fold the few letters without a decomposition.
fn fold_general(c: char, mut step: impl FnMut(Step)) {
    for c in c.to_lowercase().nfd() {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_alphanumeric() {
            match fold_special(c) {
                Some(base) => base.chars().for_each(|c| step(Step::Push(c))),
                None => step(Step::Push(c)),
            }
            continue;
        }
        step(Step::Break);
        if is_emoji(c) {
            step(Step::Emoji(c));
        }
    }
}

/// The first code point past the cached table (every two-byte UTF-8 character lies below it).
const TABLE_END: u32 = 0x800;

/// [`Fold`] of each character from U+0080 to [`TABLE_END`], worked out once by the general rule.
fn two_byte_table() -> &'static [Fold] {
    static TABLE: std::sync::OnceLock<Vec<Fold>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        (0x80..TABLE_END)
            .map(|u| {
                let mut steps = Vec::new();
                if let Some(c) = char::from_u32(u) {
                    fold_general(c, |s| steps.push(s));
                }
                if steps.iter().all(|s| matches!(s, Step::Push(_))) {
                    let letters: String = steps
                        .iter()
                        .filter_map(|s| match s {
                            Step::Push(c) => Some(*c),
                            _ => None,
                        })
                        .collect();
                    Fold::Letters(letters.into())
                } else if steps.iter().all(|s| *s == Step::Break) {
                    Fold::Separator
                } else {
                    Fold::General
                }
            })
            .collect()
    })
}

/// Cut `text` by the rule and hand each lexeme to `f`, in order (repeats included), with the
/// bytes of `text` it was cut from.
fn scan(text: &str, f: impl FnMut(Lexeme<'_>, Range<usize>)) {
    scan_with(two_byte_table(), text, f);
}

/// [`scan`] with the characters `table` covers (from U+0080 on) folded from it and every other
/// non-ASCII one by the general rule: the tests pass an empty table to check the cached one.
/// A word's bytes run from its first letter to its last letter or combining mark.
fn scan_with(table: &[Fold], text: &str, mut f: impl FnMut(Lexeme<'_>, Range<usize>)) {
    fn flush(word: &mut String, at: &Range<usize>, f: &mut impl FnMut(Lexeme<'_>, Range<usize>)) {
        if !word.is_empty() {
            if word.len() <= MAX_LEXEME_BYTES {
                f(Lexeme::Word(word), at.clone());
            }
            word.clear();
        }
    }
    let mut word = String::new();
    let mut at = 0..0;
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        // ASCII (most text, and every separator) needs no decomposition.
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                if word.is_empty() {
                    at.start = i;
                }
                word.push(c.to_ascii_lowercase());
                at.end = end;
            } else {
                flush(&mut word, &at, &mut f);
            }
            continue;
        }
        let fold = table.get((c as u32 - 0x80) as usize);
        match fold {
            Some(Fold::Letters(letters)) => {
                // A combining mark (no letters) belongs to the word it follows, if any.
                if word.is_empty() {
                    if letters.is_empty() {
                        continue;
                    }
                    at.start = i;
                }
                word.push_str(letters);
                at.end = end;
            }
            Some(Fold::Separator) => flush(&mut word, &at, &mut f),
            Some(Fold::General) | None => {
                let mut ended = false;
                fold_general(c, |step| match step {
                    Step::Push(c) => {
                        if word.is_empty() {
                            at.start = i;
                        }
                        word.push(c);
                        at.end = end;
                        ended = false;
                    }
                    Step::Break => {
                        flush(&mut word, &at, &mut f);
                        ended = true;
                    }
                    Step::Emoji(e) => {
                        f(Lexeme::Emoji(e), i..end);
                        ended = true;
                    }
                });
                // A character that ends nothing (a combining mark, dropped) belongs to the word
                // it follows, if any.
                if !ended && !word.is_empty() {
                    at.end = end;
                }
            }
        }
    }
    flush(&mut word, &at, &mut f);
}

/// The tokens of `text`, in order (repeats included).
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    tokens_with(two_byte_table(), text)
}

/// [`tokens`] through [`scan_with`] and `table`.
fn tokens_with(table: &[Fold], text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    scan_with(table, text, |l, _| {
        out.push(match l {
            Lexeme::Word(w) => Token::Word(w.to_owned()),
            Lexeme::Emoji(c) => Token::Emoji(c),
        })
    });
    out
}

/// Each lexeme of `text`, in order (repeats included), with the bytes of `text` it was cut
/// from: what a search snippet marks (`archive::read::snippet`).
pub(crate) fn each_span(text: &str, mut f: impl FnMut(&str, Range<usize>)) {
    scan(text, |l, at| match l {
        Lexeme::Word(w) => f(w, at),
        Lexeme::Emoji(c) => f(c.encode_utf8(&mut [0u8; 4]), at),
    });
}

/// Lexemes one message may repeat-check by a plain scan of what it already kept; past this a
/// hash set takes over (a message is a few dozen words; a pasted book is not).
const SCAN_DISTINCT: usize = 32;

/// The distinct lexemes of `text`, space-separated in first-seen order (what a message's
/// search vector is made of: `archive::vector`), or `None` when it has none.
pub(crate) fn of_text(text: &str) -> Option<String> {
    let mut out = String::new();
    // Where each kept lexeme lies in `out`, while few; then the set of them.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut seen: Option<std::collections::HashSet<String>> = None;
    let mut full = false;
    scan(text, |l, _| {
        if full {
            return;
        }
        let mut utf8 = [0u8; 4];
        let lexeme: &str = match l {
            Lexeme::Word(w) => w,
            Lexeme::Emoji(c) => c.encode_utf8(&mut utf8),
        };
        if out.len() + lexeme.len() + 1 > MAX_TOTAL_BYTES {
            full = true;
            return;
        }
        let repeat = match &mut seen {
            Some(set) => !set.insert(lexeme.to_owned()),
            None => spans.iter().any(|&(a, b)| &out[a..b] == lexeme),
        };
        if repeat {
            return;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if seen.is_none() {
            spans.push((out.len(), out.len() + lexeme.len()));
        }
        out.push_str(lexeme);
        if seen.is_none() && spans.len() > SCAN_DISTINCT {
            seen = Some(spans.drain(..).map(|(a, b)| out[a..b].to_owned()).collect());
        }
    });
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
    fn the_cached_table_cuts_every_two_byte_character_as_the_general_rule() {
        let table = two_byte_table();
        assert!(table.contains(&Fold::Separator));
        assert!(table.contains(&Fold::Letters("".into())));
        for u in 0x80..TABLE_END {
            let c = char::from_u32(u).unwrap();
            for text in [
                format!("{c}"),
                format!("ab{c}cd"),
                format!("x {c}{c} 9{c}"),
                format!("שָׁ{c}é"),
            ] {
                assert_eq!(
                    tokens(&text),
                    tokens_with(&[], &text),
                    "U+{u:04X} in {text:?}"
                );
            }
        }
        // Hebrew letters and Latin accents take the table, not the general path.
        for c in ['א', 'ת', 'ã', 'é', 'ç', 'Ä', 'ß'] {
            assert!(
                matches!(table[(c as u32 - 0x80) as usize], Fold::Letters(_)),
                "{c}"
            );
        }
    }

    #[test]
    fn spans_are_the_bytes_each_lexeme_was_cut_from() {
        let text = "(Reunião), 🙂a\u{301}b! \u{301}שָׁלוֹם नमस्ते 👍🏽x";
        let mut got = Vec::new();
        each_span(text, |l, at| got.push((l.to_owned(), &text[at])));
        let want = [
            ("reuniao", "Reunião"),
            ("🙂", "🙂"),
            // A combining mark stays with its letter; one with no word before it is dropped.
            ("ab", "a\u{301}b"),
            ("שלום", "שָׁלוֹם"),
            // Devanagari's vowel signs and virama (combining marks past the cached table) too.
            ("नमसत", "नमस्ते"),
            ("👍", "👍"),
            ("🏽", "🏽"),
            ("x", "x"),
        ];
        let want: Vec<(String, &str)> = want.iter().map(|&(l, t)| (l.to_owned(), t)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn repeats_are_found_past_the_plain_scan() {
        // Twice the words the plain scan checks, each said three times, in shuffled order.
        let words: Vec<String> = (0..2 * SCAN_DISTINCT).map(|i| format!("w{i}")).collect();
        let mut text = String::new();
        for round in 0..3 {
            for i in 0..words.len() {
                text.push_str(&words[(i * 7 + round) % words.len()]);
                text.push(' ');
            }
        }
        let lexemes = of_text(&text).unwrap();
        let kept: Vec<&str> = lexemes.split(' ').collect();
        let distinct: std::collections::HashSet<&str> = kept.iter().copied().collect();
        assert_eq!(kept.len(), words.len());
        assert_eq!(distinct.len(), words.len());
        // First-seen order.
        assert_eq!(kept[0], "w0");
        assert_eq!(kept[1], "w7");
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
