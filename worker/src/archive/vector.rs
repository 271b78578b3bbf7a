//! A message's search vector, made by the writer and sent to Postgres ready, in the binary
//! `tsvector` form: the text's distinct lexemes ([`lexemes::of_text`]), sorted byte-wise as
//! Postgres keeps them, without positions.
//!
//! Why: Postgres used to receive the lexemes as text and build the vector itself for a
//! generated column (`string_to_array`, then `array_to_tsvector` sorting each row's lexemes),
//! storing both. Sent sorted, the vector is only checked and copied, and each row is narrower
//! by its lexemes' text.

use std::error::Error;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::lexemes;

/// The `search` column of a message row: a `tsvector` in its binary wire form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchVector(Vec<u8>);

impl SearchVector {
    /// The vector of `text`'s lexemes, or `None` when it has none.
    pub(crate) fn of_text(text: &str) -> Option<Self> {
        lexemes::of_text(text).map(|l| Self::of_lexemes(&l))
    }

    /// The vector of space-separated `lexemes` (as [`lexemes::of_text`] makes them).
    fn of_lexemes(lexemes: &str) -> Self {
        let mut words: Vec<&str> = lexemes.split(' ').filter(|w| !w.is_empty()).collect();
        // Postgres orders a vector's lexemes by their bytes, the shorter first when one is
        // the other's prefix: `str`'s order. Sent in that order, it need not sort them.
        words.sort_unstable();
        words.dedup();
        // Per lexeme: its bytes, a NUL, and a 16-bit count of positions (none).
        let mut wire = Vec::with_capacity(4 + lexemes.len() + 3 * words.len());
        let count = i32::try_from(words.len()).expect("lexemes are bounded in bytes");
        wire.extend_from_slice(&count.to_be_bytes());
        for w in words {
            wire.extend_from_slice(w.as_bytes());
            wire.push(0);
            wire.extend_from_slice(&0u16.to_be_bytes());
        }
        Self(wire)
    }
}

impl ToSql for SearchVector {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TS_VECTOR
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexemes_go_sorted_once_each_without_positions() {
        let v = SearchVector::of_lexemes("bb a ab b a");
        let mut want = 4i32.to_be_bytes().to_vec();
        for w in ["a", "ab", "b", "bb"] {
            want.extend_from_slice(w.as_bytes());
            want.extend_from_slice(&[0, 0, 0]);
        }
        assert_eq!(v.0, want);
        assert_eq!(SearchVector::of_text(" ,. "), None);
    }

    #[test]
    fn no_lexeme_carries_the_nul_that_ends_it_on_the_wire() {
        let v = SearchVector::of_text("a\0b\0c").unwrap();
        assert_eq!(&v.0[..4], &3i32.to_be_bytes());
        assert_eq!(&v.0[4..], b"a\0\0\0b\0\0\0c\0\0\0");
    }
}
