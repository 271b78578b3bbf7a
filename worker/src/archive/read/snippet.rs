//! A search hit's snippet: a few words of its text around the first match, the matches wrapped
//! in `**`. Cut here by the index's own rule ([`lexemes::each_span`]), so the words marked are
//! exactly the ones the query matched (an emoji, a Hebrew word, `reuniao` in `Reunião`), and
//! Postgres runs no text parser for them (`ts_headline` was a large share of a search's time).

use std::borrow::Cow;
use std::ops::Range;

use super::search::Term;
use crate::archive::lexemes;

/// Most words (and emoji) a snippet shows.
const MAX_WORDS: usize = 16;
/// Words kept before the first match, when there are that many.
const WORDS_BEFORE: usize = 5;
/// Longest snippet, in characters, besides its `**` marks and `…` ends (long tokens such as
/// URLs would otherwise make sixteen words a page).
const MAX_CHARS: usize = 160;

/// The snippet of `text` for a hit of `terms`.
pub(crate) fn snippet(text: &str, terms: &[Term]) -> String {
    let mut words: Vec<(Range<usize>, bool)> = Vec::new();
    lexemes::each_span(text, |lexeme, at| {
        words.push((at, terms.iter().any(|t| t.matches(lexeme))));
    });
    if words.is_empty() {
        // Only hits reach here, and a hit has words; a text without any is shown cut.
        return cut(&squeeze(text), MAX_CHARS).into_owned();
    }
    let first = words.iter().position(|w| w.1).unwrap_or(0);
    let end = (first.saturating_sub(WORDS_BEFORE) + MAX_WORDS).min(words.len());
    let mut start = end.saturating_sub(MAX_WORDS).min(first);
    // The first match must fit: drop words before it while they crowd it out.
    while start < first && plain_len(text, &words[start..=first]) > MAX_CHARS {
        start += 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut chars = 0;
    // Where the text not yet shown begins: the text's start when no word is left out before.
    let mut from = if start == 0 { 0 } else { words[start].0.start };
    let mut shown = start;
    for (at, hit) in &words[start..end] {
        let gap = squeeze(&text[from..at.start]);
        let gap = if shown == start {
            gap.trim_start()
        } else {
            &gap
        };
        let word = &text[at.clone()];
        let need = gap.chars().count() + word.chars().count();
        if chars + need > MAX_CHARS && shown > first {
            break;
        }
        out.push_str(gap);
        // Only the first match can be longer than the room left: it is cut.
        let word = cut(word, MAX_CHARS.saturating_sub(chars + gap.chars().count()));
        if *hit {
            out.push_str("**");
            out.push_str(&word);
            out.push_str("**");
        } else {
            out.push_str(&word);
        }
        chars += need;
        from = at.end;
        shown += 1;
    }
    if shown == words.len() {
        // The text's end (closing punctuation and all), when it fits.
        let tail = squeeze(&text[from..]);
        let tail = tail.trim_end();
        if chars + tail.chars().count() <= MAX_CHARS {
            out.push_str(tail);
        } else if !tail.is_empty() {
            out.push('…');
        }
    } else {
        out.push('…');
    }
    out
}

/// The characters `words` (and what lies between them) span in `text`, whitespace squeezed.
fn plain_len(text: &str, words: &[(Range<usize>, bool)]) -> usize {
    match (words.first(), words.last()) {
        (Some(a), Some(b)) => squeeze(&text[a.0.start..b.0.end]).chars().count(),
        _ => 0,
    }
}

/// `s` with every run of whitespace (line breaks too) as one space.
fn squeeze(s: &str) -> Cow<'_, str> {
    let plain = !s.contains("  ") && !s.chars().any(|c| c.is_whitespace() && c != ' ');
    if plain {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    if space {
        out.push(' ');
    }
    out.into()
}

/// The first `max` characters of `s`, ending in `…` when cut.
fn cut(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]).into(),
        None => s.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::read::search::parse_query;

    fn snip(text: &str, query: &str) -> String {
        snippet(text, &parse_query(query).unwrap().terms)
    }

    #[test]
    fn matches_are_marked_as_the_index_cut_them() {
        assert_eq!(
            snip("Amanhã tem reunião às 10h 🎉", "reuniao 🎉"),
            "Amanhã tem **reunião** às 10h **🎉**"
        );
        assert_eq!(snip("שָׁלוֹם עולם!", "שלום"), "**שָׁלוֹם** עולם!");
        // A prefix marks every word it starts; repeats are marked too.
        assert_eq!(
            snip("(Orçamento) do orçamentário, orca", "orcam*"),
            "(**Orçamento**) do **orçamentário**, orca"
        );
        // Only whole lexemes match: `mail` is a word of `e-mail`, `mai` is not.
        assert_eq!(snip("send the e-mail", "mail"), "send the e-**mail**");
        assert_eq!(snip("send the e-mail", "mai"), "send the e-mail");
    }

    #[test]
    fn long_texts_show_the_words_around_the_first_match() {
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let text = format!("{}.", words.join(" "));
        assert_eq!(
            snip(&text, "w20"),
            "…w15 w16 w17 w18 w19 **w20** w21 w22 w23 w24 w25 w26 w27 w28 w29 w30…"
        );
        // Near the start, the words before are all there is; near the end, more come before.
        assert_eq!(
            snip(&text, "w1"),
            "w0 **w1** w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15…"
        );
        assert_eq!(
            snip(&text, "w38"),
            "…w24 w25 w26 w27 w28 w29 w30 w31 w32 w33 w34 w35 w36 w37 **w38** w39."
        );
    }

    #[test]
    fn snippets_are_one_line_and_bounded() {
        assert_eq!(
            snip("  first line\n\n  the  match\there  ", "match"),
            "first line the **match** here"
        );
        // Long words: those before the match go first, then those after it, to keep the bound.
        let long = "x".repeat(100);
        let s = snip(&format!("{long} {long} hit {long} {long}"), "hit");
        assert_eq!(s, format!("…{long} **hit**…"));
        // What follows the last word is left out, and said so, when it does not fit.
        let s = snip(
            &format!("{} hit {}", "a".repeat(150), "?".repeat(20)),
            "hit",
        );
        assert_eq!(s, format!("{} **hit**…", "a".repeat(150)));
        // A match longer than the bound is cut inside its marks.
        let s = snip(&format!("a {} b", "y".repeat(200)), "yyy*");
        assert_eq!(s, format!("…**{}…**…", "y".repeat(MAX_CHARS)));
    }
}
