//! WhatsApp JIDs: their canonical form (the one identity hashes and aliases use) and what kind
//! of chat each names. Connectors hand the archive JIDs as WhatsApp spells them; everything past
//! this module sees only canonical ones.

/// The pseudo chat status stories are posted to.
pub(crate) const STATUS_JID: &str = "status@broadcast";

/// What a canonical JID addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JidKind {
    /// A person: a phone-number JID (`…@s.whatsapp.net`) or a LID (`…@lid`).
    Direct,
    /// A group (`…@g.us`).
    Group,
    /// The status broadcast (`status@broadcast`).
    Status,
}

/// A JID in canonical form with its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Jid {
    /// `user@server`, lower case, without device or agent suffixes.
    pub(crate) canonical: String,
    /// What it addresses.
    pub(crate) kind: JidKind,
}

impl Jid {
    /// Parse `raw`; `None` when it is not a JID the archive understands.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim().to_ascii_lowercase();
        if raw == STATUS_JID {
            return Some(Self {
                canonical: raw,
                kind: JidKind::Status,
            });
        }
        let (user, server) = raw.rsplit_once('@')?;
        // Device (`:3`) and agent (`.0`) suffixes name a device, not a person.
        let user = user.split(':').next().unwrap_or_default();
        let (server, kind) = match server {
            "s.whatsapp.net" | "c.us" => ("s.whatsapp.net", JidKind::Direct),
            "lid" => ("lid", JidKind::Direct),
            "g.us" => ("g.us", JidKind::Group),
            _ => return None,
        };
        let user = match kind {
            JidKind::Direct => user.split('.').next().unwrap_or_default(),
            _ => user,
        };
        let user_ok = match kind {
            JidKind::Direct => user.bytes().all(|b| b.is_ascii_digit()),
            _ => user.bytes().all(|b| b.is_ascii_digit() || b == b'-'),
        };
        (!user.is_empty() && user.len() <= 64 && user_ok).then(|| Self {
            canonical: format!("{user}@{server}"),
            kind,
        })
    }

    /// The phone number's digits when this is a phone-number JID.
    pub(crate) fn phone(&self) -> Option<&str> {
        self.canonical.strip_suffix("@s.whatsapp.net")
    }

    /// True for a LID.
    pub(crate) fn is_lid(&self) -> bool {
        self.canonical.ends_with("@lid")
    }
}

/// The phone-number JID of `digits`.
pub(crate) fn phone_jid(digits: &str) -> String {
    format!("{digits}@s.whatsapp.net")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalises_device_suffixes_and_case() {
        let j = Jid::parse(" 972501234567:12@S.WhatsApp.net").unwrap();
        assert_eq!(j.canonical, "972501234567@s.whatsapp.net");
        assert_eq!(j.kind, JidKind::Direct);
        assert_eq!(j.phone(), Some("972501234567"));
        assert_eq!(
            Jid::parse("972501234567@c.us").unwrap().canonical,
            j.canonical
        );
        let l = Jid::parse("123456789:3@lid").unwrap();
        assert_eq!(l.canonical, "123456789@lid");
        assert!(l.is_lid());
        assert_eq!(l.phone(), None);
        let g = Jid::parse("120363000000000001@g.us").unwrap();
        assert_eq!(g.kind, JidKind::Group);
        assert_eq!(
            Jid::parse("status@broadcast").unwrap().kind,
            JidKind::Status
        );
    }

    #[test]
    fn refuses_what_is_not_a_jid() {
        for bad in [
            "",
            "972501234567",
            "@s.whatsapp.net",
            "abc@s.whatsapp.net",
            "1@example.com",
        ] {
            assert_eq!(Jid::parse(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        /// Any string parses or is refused without a panic; a canonical form parses to itself,
        /// and every spelling of a JID (case, device and agent suffixes, `c.us`) to the same one.
        #[test]
        fn canonical_forms_are_fixed_points(
            s in proptest::prop_oneof![
                proptest::arbitrary::any::<String>(),
                "[ ]?[0-9A-Za-z-]{0,20}([.:][0-9]{1,2}){0,2}@(s[.]whatsapp[.]net|c[.]us|lid|g[.]us|S[.]WHATSAPP[.]NET|x)[ ]?",
            ],
        ) {
            if let Some(j) = Jid::parse(&s) {
                let again = Jid::parse(&j.canonical);
                proptest::prop_assert_eq!(again.as_ref(), Some(&j));
                let upper = Jid::parse(&s.to_uppercase());
                proptest::prop_assert_eq!(upper.as_ref(), Some(&j));
                proptest::prop_assert!(j.canonical.len() <= 64 + "@s.whatsapp.net".len());
            }
        }
    }
}
