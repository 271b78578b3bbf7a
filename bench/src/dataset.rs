//! Where the benchmark's messages come from: a deterministic synthetic archive (one busy chat,
//! a long tail, 10% groups, text in English, Portuguese and Hebrew, a common and a rare search
//! word, a photo with its bytes every 200th message) or a JSONL file.

use std::io::BufRead;
use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use wazap_shared::wire::MessageType;
use wazap_worker::archive::{Inbound, InboundAttachment};

/// The chat JID of synthetic chat `i`; every tenth is a group.
pub(crate) fn chat_jid(i: usize) -> String {
    if i % 10 == 9 {
        format!("120363{i:012}@g.us")
    } else {
        format!("97250{i:07}@s.whatsapp.net")
    }
}

/// The synthetic busy chat (the one `read_messages` is measured on).
pub(crate) const BUSY_CHAT: usize = 0;

const WORDS: &[&str] = &[
    "meeting",
    "tomorrow",
    "dinner",
    "photos",
    "project",
    "deadline",
    "coffee",
    "weekend",
    "train",
    "amanhã",
    "reunião",
    "jantar",
    "obrigado",
    "saudade",
    "praia",
    "futebol",
    "trabalho",
    "cedo",
    "שלום",
    "מחר",
    "ארוחה",
    "עבודה",
    "תודה",
    "משפחה",
    "בוקר",
    "ערב",
    "חג",
    "ok",
    "🙂",
    "👍",
];

/// A search word in ≈0.8% of the synthetic messages (≈8,000 hits at 1M: DESIGN §11's "common
/// word"). Accented, so searching it unaccented exercises the accent folding.
pub(crate) const COMMON_WORD: &str = "orçamento";
/// Every how many messages carry [`COMMON_WORD`].
const COMMON_EVERY: usize = 125;
/// A search word in one message of 50,000 (20 hits at 1M: the "rare word").
pub(crate) const RARE_WORD: &str = "יומולדת";
/// Every how many messages carry [`RARE_WORD`].
const RARE_EVERY: usize = 50_000;
/// Every how many messages are a photo (with its bytes, as the demo and sim connectors give them).
const PHOTO_EVERY: usize = 200;

/// The photos' bytes: one small real JPEG.
pub(crate) static JPEG: LazyLock<Vec<u8>> = LazyLock::new(|| {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(wazap_tests::fixtures::jpeg_b64(96, 64))
        .expect("the fixture is base64")
});

/// A tiny deterministic PRNG (xorshift64*), so every run ingests the same archive.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// A uniform draw in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Synthetic messages `from..to` of `total` over `chats` chats, oldest first, spread over two
/// years before `now`: 5% land in the busy chat, the rest in a skewed long tail.
pub(crate) fn synthetic(
    from: usize,
    to: usize,
    total: usize,
    chats: usize,
    now: DateTime<Utc>,
    rng: &mut Rng,
) -> Vec<Inbound> {
    let span_ms = Duration::days(730).num_milliseconds();
    (from..to)
        .map(|i| {
            let chat = if rng.below(20) == 0 {
                BUSY_CHAT
            } else {
                // Squaring a uniform draw skews traffic towards low chat numbers.
                let u = rng.below(1 << 16) as f64 / f64::from(1 << 16);
                ((u * u) * chats as f64) as usize % chats
            };
            let jid = chat_jid(chat);
            let group = jid.ends_with("@g.us");
            let words = 3 + rng.below(22);
            let mut text = (0..words)
                .map(|_| WORDS[rng.below(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ");
            // By position, not by draw, so the rest of the archive stays as it was.
            for (every, at, word) in [(COMMON_EVERY, 7, COMMON_WORD), (RARE_EVERY, 11, RARE_WORD)] {
                if i % every == at {
                    text.push(' ');
                    text.push_str(word);
                }
            }
            let attachment = (i % PHOTO_EVERY == 3).then(|| InboundAttachment {
                mime_type: "image/jpeg".into(),
                filename: Some(format!("IMG-{i:07}.jpg")),
                size: None,
                seconds: None,
                thumbnail: None,
                data: Some(JPEG.clone()),
                media: None,
            });
            let ts = now - Duration::milliseconds(span_ms - span_ms * i as i64 / total as i64);
            Inbound {
                chat_jid: jid,
                wa_id: format!("B{i:010X}"),
                sender_jid: group.then(|| format!("1555{:07}@s.whatsapp.net", rng.below(200))),
                push_name: group.then(|| "Member".to_owned()),
                from_me: rng.below(4) == 0,
                timestamp: ts,
                kind: if attachment.is_some() {
                    MessageType::Image
                } else {
                    MessageType::Text
                },
                text,
                target_wa_id: None,
                edit: false,
                mentions: vec![],
                attachment,
            }
        })
        .collect()
}

/// One line of a JSONL archive.
#[derive(Debug, Deserialize)]
struct Line {
    chat_id: String,
    message_id: String,
    #[serde(default)]
    sender: Option<String>,
    timestamp: DateTime<Utc>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    from_me: bool,
}

/// A JID for an identifier from a foreign data set: kept when it already is one, else a person
/// (or a group, for chats the file marks `…@g.us`).
fn as_jid(id: &str) -> String {
    if id.contains('@') {
        id.to_owned()
    } else {
        format!("{}@s.whatsapp.net", id.trim_start_matches('+'))
    }
}

/// Messages of a JSONL archive, one line at a time (the file is never held whole), with
/// how many messages each chat got so far.
pub(crate) struct JsonlReader {
    path: String,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    n: usize,
    counts: std::collections::HashMap<String, usize>,
}

impl JsonlReader {
    /// Open `path`; also returns how many messages it holds (a first pass counting lines).
    pub(crate) fn open(path: &str) -> anyhow::Result<(Self, usize)> {
        let count = std::io::BufReader::new(std::fs::File::open(path)?)
            .lines()
            .filter(|l| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
            .count();
        let reader = Self {
            path: path.to_owned(),
            lines: std::io::BufReader::new(std::fs::File::open(path)?).lines(),
            n: 0,
            counts: std::collections::HashMap::new(),
        };
        Ok((reader, count))
    }

    /// The next message, `None` at the end.
    pub(crate) fn next_message(&mut self) -> anyhow::Result<Option<Inbound>> {
        for line in self.lines.by_ref() {
            self.n += 1;
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let l: Line = serde_json::from_str(&line)
                .map_err(|e| anyhow::anyhow!("{}:{}: {e}", self.path, self.n))?;
            let chat_jid = as_jid(&l.chat_id);
            *self.counts.entry(chat_jid.clone()).or_default() += 1;
            let group = chat_jid.ends_with("@g.us");
            return Ok(Some(Inbound {
                sender_jid: if group {
                    l.sender.as_deref().map(as_jid)
                } else {
                    None
                },
                push_name: l.sender.filter(|_| group),
                chat_jid,
                wa_id: l.message_id,
                from_me: l.from_me,
                timestamp: l.timestamp,
                kind: l
                    .kind
                    .as_deref()
                    .and_then(MessageType::parse)
                    .unwrap_or(MessageType::Text),
                text: l.text,
                target_wa_id: None,
                edit: false,
                mentions: vec![],
                attachment: None,
            }));
        }
        Ok(None)
    }

    /// The chat JID with the most messages read.
    pub(crate) fn busiest(&self) -> String {
        self.counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, _)| c.clone())
            .unwrap_or_default()
    }
}
