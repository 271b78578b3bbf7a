//! `application/x-www-form-urlencoded` as OAuth reads it: the token and revocation forms and the
//! authorization request's query (RFC 6749 §3.1, §3.2). A parameter may appear at most once — a
//! repeated one is refused, never picked from, since the client and wazap could each read a
//! different one — and one without a value counts as left out. Decoding is strict: a broken
//! `%` escape or bytes that are not UTF-8 refuse the whole form instead of being replaced.

/// The parameters of one form, each name once.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Params(Vec<(String, String)>);

/// Why a form was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormError {
    /// A parameter was given more than once.
    Repeated,
    /// A `%` escape is broken or the decoded bytes are not UTF-8.
    Malformed,
}

impl FormError {
    /// The refusal's fixed wording (never echoes what was sent).
    pub(crate) fn description(self) -> &'static str {
        match self {
            Self::Repeated => "a parameter was given more than once",
            Self::Malformed => "the parameters are not well-formed form encoding",
        }
    }
}

impl Params {
    /// Take parameter `name`'s value, if it was given with one.
    pub(crate) fn take(&mut self, name: &str) -> Option<String> {
        let at = self.0.iter().position(|(k, _)| k == name)?;
        Some(self.0.swap_remove(at).1).filter(|v| !v.is_empty())
    }
}

/// Parse `input` (a query string without `?`, or a form body).
pub(crate) fn parse(input: &str) -> Result<Params, FormError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pair in input.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if pairs.iter().any(|(k, _)| *k == key) {
            return Err(FormError::Repeated);
        }
        pairs.push((key, decode(value)?));
    }
    Ok(Params(pairs))
}

/// One name or value: `+` is a space, `%XX` a byte; the result must be UTF-8.
fn decode(s: &str) -> Result<String, FormError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |at: usize| {
                    bytes
                        .get(at)
                        .and_then(|b| (*b as char).to_digit(16))
                        .ok_or(FormError::Malformed)
                };
                let byte = hex(i + 1)? * 16 + hex(i + 2)?;
                out.push(u8::try_from(byte).map_err(|_| FormError::Malformed)?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| FormError::Malformed)
}

/// `s` percent-encoded as a query value: everything but RFC 3986's unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_decoded_and_empty_ones_count_as_absent() {
        let mut p = parse("grant_type=authorization_code&code=a%2Bb+c&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb&state=&scope&&x=%C3%A9").unwrap();
        assert_eq!(p.take("grant_type").as_deref(), Some("authorization_code"));
        assert_eq!(p.take("code").as_deref(), Some("a+b c"));
        assert_eq!(
            p.take("redirect_uri").as_deref(),
            Some("http://127.0.0.1:1/cb")
        );
        assert_eq!(p.take("state"), None);
        assert_eq!(p.take("scope"), None);
        assert_eq!(p.take("x").as_deref(), Some("é"));
        assert_eq!(p.take("missing"), None);
        assert_eq!(parse("").unwrap(), Params::default());
    }

    #[test]
    fn a_repeated_parameter_is_refused_even_when_spelled_differently() {
        for q in [
            "code=a&code=b",
            "code=a&code=a",
            "code=a&c%6Fde=b",
            "state=&state=x",
            "resource=x&client_id=y&resource=x",
        ] {
            assert_eq!(parse(q), Err(FormError::Repeated), "{q}");
        }
    }

    #[test]
    fn broken_escapes_and_non_utf8_are_refused() {
        for q in [
            "code=%", "code=%4", "code=%zz", "code=%FF", "c%ode=1", "x=%C3",
        ] {
            assert_eq!(parse(q), Err(FormError::Malformed), "{q}");
        }
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(
            encode("/oauth/consent?request=r_1-A"),
            "%2Foauth%2Fconsent%3Frequest%3Dr_1-A"
        );
        assert_eq!(encode("a b~é"), "a%20b~%C3%A9");
        let mut p = parse(&format!("next={}", encode("/x?y=1&z=+"))).unwrap();
        assert_eq!(p.take("next").as_deref(), Some("/x?y=1&z=+"));
    }
}
