//! A prefix (`amanh*`) spelled out as the words of the archive that start with it (the words
//! table of migration 0026), so that it is read bucket by bucket like whole words: handed to
//! the word index as a partial match, GIN reads and ORs every such word's whole posting list
//! before it can intersect them with a key (docs/search.md). A prefix that stands for more than
//! [`MAX_WORDS`] words is left to the walk ([`super::walk`]): so many words are common
//! together, and their newest matches lie close.

use deadpool_postgres::GenericClient;

use super::TextQuery;

/// Most words one prefix may stand for in the index probes.
pub(super) const MAX_WORDS: usize = 64;

/// The words each term of `q` stands for in `account`: a whole word itself, a prefix the
/// archive's words that start with it (none: nothing matches). `None` when a prefix stands for
/// more than [`MAX_WORDS`].
pub(super) async fn expand(
    db: &impl GenericClient,
    account: &str,
    q: &TextQuery,
) -> anyhow::Result<Option<Vec<Vec<String>>>> {
    let mut out = Vec::with_capacity(q.terms.len());
    for t in &q.terms {
        if !t.prefix {
            out.push(vec![t.lexeme.clone()]);
            continue;
        }
        // Every word starting with the prefix sorts (byte-wise, as the column does) from the
        // prefix itself up to the prefix followed by the highest character.
        let stmt = db
            .prepare_cached(
                "select distinct lexeme from search_words
                  where account_id = $1 and lexeme >= $2 and lexeme < $3
                  order by lexeme limit $4",
            )
            .await?;
        let upper = format!("{}{}", t.lexeme, char::MAX);
        let limit = MAX_WORDS as i64 + 1;
        let words: Vec<String> = db
            .query(&stmt, &[&account, &t.lexeme, &upper, &limit])
            .await?
            .iter()
            .map(|r| r.get(0))
            .filter(|w: &String| w.starts_with(t.lexeme.as_str()) && !w.contains(['\'', '\\']))
            .collect();
        if words.len() > MAX_WORDS {
            return Ok(None);
        }
        out.push(words);
    }
    Ok(Some(out))
}

/// `q` with each term spelled out as `words` (from [`expand`]): `('amanha' | 'amanhecer') &
/// 'reuniao'`. The words are lexemes of the word rule (letters, digits or one emoji; quotes
/// and backslashes were left out above), so quoting them keeps operators out.
pub(super) fn spelled_out(q: &TextQuery, words: &[Vec<String>]) -> TextQuery {
    let terms: Vec<String> = words
        .iter()
        .map(|alternatives| {
            let quoted: Vec<String> = alternatives.iter().map(|w| format!("'{w}'")).collect();
            match quoted.as_slice() {
                [one] => one.clone(),
                _ => format!("({})", quoted.join(" | ")),
            }
        })
        .collect();
    TextQuery {
        tsquery: terms.join(" & "),
        terms: q.terms.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::read::search::parse_query;

    #[test]
    fn a_prefix_becomes_its_words_ored() {
        let q = parse_query("amanh* reunião").unwrap();
        let words = vec![
            vec!["amanha".to_owned(), "amanhecer".to_owned()],
            vec!["reuniao".to_owned()],
        ];
        assert_eq!(
            spelled_out(&q, &words).tsquery,
            "('amanha' | 'amanhecer') & 'reuniao'"
        );
        assert_eq!(spelled_out(&q, &words).terms, q.terms);
    }
}
