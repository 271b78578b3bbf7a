//! The `#private` rule of the archive policy (DESIGN §4): a message whose text or caption
//! carries the tag is stored flagged, and no read path ever returns its words.

/// The tag, lower case.
const TAG: &str = "#private";

/// True when `text` carries `#private` as a whole tag (any case): `#Private!` counts,
/// `#privateer` and `#private_x` do not.
pub(crate) fn has_private_tag(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices(TAG).any(|(i, _)| {
        lower[i + TAG.len()..]
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
}
