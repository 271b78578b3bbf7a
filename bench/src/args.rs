//! Command-line arguments of `wazap-bench`.

/// Usage text.
pub(crate) const USAGE: &str =
    "usage: wazap-bench [--shape synthetic|phone] [--messages N] [--chats N] [--contacts N]
                   [--jsonl FILE] [--requests N] [--out FILE] [--keep] [--only LIST]
  --shape S      synthetic (default): one busy chat and a long tail, two search words;
                 phone: shaped like a real phone (1,000 named contacts, 600 chats with
                 Zipf activity, groups of 2-250, three languages, Zipf words, 10% media),
                 searched for words it picks from the archive, one per frequency decade,
                 and for names, phone digits, a group word and file names it picks
  --messages N   messages to ingest (default 1000000)
  --chats N      synthetic chats, 10% groups (default 5000; the phone shape has 600)
  --contacts N   the phone shape's phonebook, 100 to 5000 (default 1000): the same
                 messages and chats whatever N; below 1000 some chats are with unsaved
                 numbers, above it the extra contacts are never chatted with
  --jsonl FILE   load the archive from FILE instead: one JSON object a line with
                 chat_id, message_id, sender, timestamp (RFC 3339), text, kind, from_me
  --requests N   measured calls per tool, after 10% warm-up (default 2000)
  --out FILE     where the JSON figures go (default bench-results.json)
  --keep         keep the filled database afterwards (its name is printed), for EXPLAIN
  --only LIST    run only these phases after the ingest, comma-separated from
                 reads, search, wait, send, plans (each read and search case with every
                 worker session forced to custom, then generic plans; fails when generic
                 is > 3x and > 1 ms slower) (default: all), faults (only when named:
                 takeover, Postgres restart, gateway rolling restart), accounts (only when
                 named: ingest into several accounts, routing by account, a worker of three
                 killed), media (only when named: 20 x 8 MiB media sends at once, the
                 gateway's RSS); `ingest` alone: only the ingest
Services: WAZAP_TEST_DATABASE_URL and WAZAP_TEST_NATS_URL, as for the tests.";

/// Parsed arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// `--shape phone`: the phone-shaped archive instead of the synthetic one.
    pub(crate) phone: bool,
    pub(crate) messages: usize,
    pub(crate) chats: usize,
    /// `--contacts`: the phone shape's phonebook size.
    pub(crate) contacts: usize,
    pub(crate) jsonl: Option<String>,
    pub(crate) requests: usize,
    pub(crate) out: String,
    pub(crate) keep: bool,
    /// The phases to run after the ingest (all when empty).
    pub(crate) only: Vec<String>,
}

/// The phases `--only` may name.
const PHASES: [&str; 9] = [
    "ingest", "reads", "search", "wait", "send", "plans", "faults", "accounts", "media",
];
/// The phases that run only when named, each on an archive of its own.
const NAMED_ONLY: [&str; 3] = ["faults", "accounts", "media"];

impl Args {
    /// Parse `argv` (without the program name).
    pub(crate) fn parse(mut argv: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut a = Args {
            phone: false,
            messages: 1_000_000,
            chats: 5_000,
            contacts: crate::phone_people::DEFAULT_CONTACTS,
            jsonl: None,
            requests: 2_000,
            out: "bench-results.json".into(),
            keep: false,
            only: Vec::new(),
        };
        let mut contacts_given = false;
        while let Some(flag) = argv.next() {
            let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
            let number = |v: String| {
                v.parse::<usize>()
                    .map_err(|_| format!("{flag}: expected a whole number"))
            };
            match flag.as_str() {
                "--messages" => a.messages = number(value()?)?,
                "--shape" => {
                    a.phone = match value()?.as_str() {
                        "phone" => true,
                        "synthetic" => false,
                        other => return Err(format!("--shape: unknown shape {other}")),
                    }
                }
                "--chats" => a.chats = number(value()?)?,
                "--contacts" => {
                    a.contacts = number(value()?)?;
                    contacts_given = true;
                }
                "--requests" => a.requests = number(value()?)?,
                "--jsonl" => a.jsonl = Some(value()?),
                "--out" => a.out = value()?,
                "--keep" => a.keep = true,
                "--only" => {
                    for phase in value()?.split(',').map(str::trim) {
                        if !PHASES.contains(&phase) {
                            return Err(format!("--only: unknown phase {phase}"));
                        }
                        a.only.push(phase.to_owned());
                    }
                }
                "-h" | "--help" => return Err("help".into()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if a.phone && a.jsonl.is_some() {
            return Err("--shape phone and --jsonl exclude each other".into());
        }
        if contacts_given && !a.phone {
            return Err("--contacts is for --shape phone".into());
        }
        let range = crate::phone_people::CONTACTS_RANGE;
        if !range.contains(&a.contacts) {
            return Err(format!(
                "--contacts: expected {} to {} contacts, got {}",
                range.start(),
                range.end(),
                a.contacts
            ));
        }
        if a.phone && a.messages < crate::phone_people::CHATS {
            return Err(format!(
                "--shape phone needs at least {} messages",
                crate::phone_people::CHATS
            ));
        }
        if !a.phone && (a.chats == 0 || a.messages < a.chats) {
            return Err("--messages must be at least --chats, and --chats at least 1".into());
        }
        Ok(a)
    }

    /// Whether `phase` runs (`faults`, `accounts` and `media` only when named).
    pub(crate) fn runs(&self, phase: &str) -> bool {
        (self.only.is_empty() && !NAMED_ONLY.contains(&phase))
            || self.only.iter().any(|p| p == phase)
    }

    /// Whether only phases that make their own archives were asked for (no shared one needed).
    pub(crate) fn only_named(&self) -> bool {
        !self.only.is_empty() && self.only.iter().all(|p| NAMED_ONLY.contains(&p.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        Args::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn contacts_are_the_phone_shapes_only_and_bounded() {
        assert_eq!(parse("--shape phone").unwrap().contacts, 1_000);
        assert_eq!(parse("").unwrap().contacts, 1_000);
        assert_eq!(
            parse("--shape phone --contacts 2000").unwrap().contacts,
            2_000
        );
        assert_eq!(
            parse("--contacts 2000 --shape phone").unwrap().contacts,
            2_000
        );
        assert!(parse("--shape phone --contacts 100").is_ok());
        assert!(parse("--shape phone --contacts 5000").is_ok());
        let err = parse("--shape phone --contacts 99").unwrap_err();
        assert_eq!(err, "--contacts: expected 100 to 5000 contacts, got 99");
        assert!(parse("--shape phone --contacts 5001").is_err());
        assert!(parse("--shape phone --contacts many").is_err());
        assert_eq!(
            parse("--contacts 2000").unwrap_err(),
            "--contacts is for --shape phone"
        );
    }
}
