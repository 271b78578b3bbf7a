//! The `#private` rule of the archive policy (DESIGN §4): a message whose text or caption
//! carries the tag is stored flagged, and no read path ever returns its words.

/// The tag's word, after its `#`, lower case.
const WORD: &str = "private";

/// True when `text` carries `#private` as a whole tag (any case): `#Private!` counts,
/// `#privateer` and `#private_x` do not.
///
/// Compared byte by byte, ASCII case folded, without lower-casing a copy of every message:
/// no other character lower-cases to one of the tag's ASCII letters alone, so this is the
/// same test as on `text.to_lowercase()` (the test below holds it to that).
pub(crate) fn has_private_tag(text: &str) -> bool {
    text.match_indices('#').any(|(i, _)| {
        let rest = &text[i + 1..];
        rest.len() >= WORD.len()
            && rest.as_bytes()[..WORD.len()].eq_ignore_ascii_case(WORD.as_bytes())
            && rest[WORD.len()..]
                .chars()
                .next()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_whole_tag_in_any_case() {
        assert!(has_private_tag("#private"));
        assert!(has_private_tag("call me #PRIVATE"));
        assert!(has_private_tag("a #Private, b"));
        assert!(has_private_tag("x#private"));
        assert!(has_private_tag("#privateer and #private."));
        assert!(!has_private_tag("#privateer"));
        assert!(!has_private_tag("#private_note"));
        assert!(!has_private_tag("private"));
        assert!(!has_private_tag(""));
        assert!(!has_private_tag("#privaté"));
    }

    #[test]
    fn agrees_with_the_rule_on_a_lower_cased_copy() {
        let on_lowered = |text: &str| {
            let lower = text.to_lowercase();
            lower.match_indices("#private").any(|(i, _)| {
                lower[i + 8..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            })
        };
        let mut texts = vec![
            "#PRİVATE".to_owned(),
            "#prİvate".to_owned(),
            "#privatE\u{212A}".to_owned(),
            "##private".to_owned(),
            "#priv".to_owned(),
            "#".to_owned(),
            "é#PrivateÉ".to_owned(),
            "#privateİ".to_owned(),
            "#private\u{0301}".to_owned(),
        ];
        // Every two-byte character before and after the tag, and in place of each letter.
        for u in 0x80..0x800 {
            let c = char::from_u32(u).unwrap();
            texts.push(format!("{c}#private{c}"));
            texts.push(format!("{c}#PrIvAtE {c}"));
            for at in 1..8 {
                let mut t = "#PRIVATE".to_owned();
                t.replace_range(at..at + 1, &c.to_string());
                texts.push(t);
            }
        }
        for t in &texts {
            assert_eq!(has_private_tag(t), on_lowered(t), "{t:?}");
        }
    }
}
