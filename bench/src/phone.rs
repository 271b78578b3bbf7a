//! The phone shape (`--shape phone`, issue 29 item 1): an archive shaped like a real phone,
//! made deterministically from a seed and streamed slab by slab (only the phonebook, the chats,
//! the timeline and the word counts are held, never the messages):
//! - 1,000 people the owner knows (phone JIDs, a third also with a LID), named in a phonebook of
//!   `--contacts` entries ([`crate::phone_people`]), and 600 strangers met in groups;
//! - 600 chats, one in five a group of 2–250 members whose senders are members, with a Zipf
//!   activity (the busiest holds ≈18% of all messages) and conversations that run in bursts;
//! - two years of timestamps with a daily rhythm, bursts and a growing trend;
//! - text in English, Portuguese and Hebrew with emoji, links and numbers
//!   ([`crate::phone_text`]), ≈10% media rows with attachments.
//!
//! It also remembers what the tools other than `search_messages` are asked for
//! ([`crate::phone_lookups`]): names, digits, a group word, file names.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use wazap_shared::wire::MessageType;
use wazap_worker::archive::{ContactUpdate, GroupUpdate, Inbound, InboundAttachment};

use crate::dataset::Rng;
use crate::phone_lookups::Lookups;
use crate::phone_people::{self as pp, CHATS, Chat, Person, chats, people};
use crate::phone_text::{Lang, Pick, Words, zipf};

/// The busiest chat's share of all messages.
const BUSIEST_SHARE: f64 = 0.18;
/// Percent of messages that stay in the conversation of the message before.
const STAY: usize = 80;
/// The timeline's resolution, and its length.
const BIN_MINUTES: i64 = 10;
const DAYS: i64 = 730;
/// Messages a chat needs to be the "quiet" one measured (enough for a `before` page).
const QUIET_AT_LEAST: u64 = 120;

/// The generator: everything but the messages.
pub(crate) struct Phone {
    people: Vec<Person>,
    chats: Vec<Chat>,
    /// Cumulative chat activity (Zipf).
    chat_cdf: Vec<f64>,
    /// Cumulative message intensity per timeline bin.
    timeline: Vec<f64>,
    start: DateTime<Utc>,
    total: usize,
    next: usize,
    chat: usize,
    rng: Rng,
    words: Words,
    per_chat: Vec<u64>,
    contacts: usize,
    /// Documents per word of their file names.
    file_words: HashMap<String, u64>,
    /// The file name of the first photo past the archive's middle.
    photo: Option<String>,
}

/// What the generator leaves for the phases: the words it picked and the chats to read.
#[derive(Debug, Clone)]
pub(crate) struct PhoneSummary {
    /// One word per frequency decade.
    pub(crate) picks: Vec<Pick>,
    /// A two-word query (as typed, as a tsquery).
    pub(crate) pair: Option<(String, String)>,
    /// A prefix query (as typed, as a tsquery).
    pub(crate) prefix: Option<(String, String)>,
    /// The busiest chat's JID and its messages.
    pub(crate) busy: (String, u64),
    /// A quiet chat's JID and its messages.
    pub(crate) quiet: (String, u64),
    /// One month, a year before the newest message.
    pub(crate) month: (DateTime<Utc>, DateTime<Utc>),
    pub(crate) contacts: usize,
    pub(crate) groups: usize,
    /// What the other tools are asked for.
    pub(crate) lookups: Lookups,
}

/// The Zipf exponent that gives the first of `n` ranks `share` of the weight.
fn exponent(n: usize, share: f64) -> f64 {
    let (mut lo, mut hi) = (0.1, 3.0);
    for _ in 0..60 {
        let s: f64 = (lo + hi) / 2.0;
        let h: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
        if 1.0 / h < share {
            lo = s;
        } else {
            hi = s;
        }
    }
    (lo + hi) / 2.0
}

impl Phone {
    /// A phone whose `total` messages end at `now`, with `contacts` in its phonebook.
    pub(crate) fn new(total: usize, contacts: usize, now: DateTime<Utc>) -> Self {
        let mut rng = Rng::new(0x9407e);
        let people = people(&mut rng, contacts);
        let chats = chats(&mut rng, &people);
        let s = exponent(CHATS, BUSIEST_SHARE);
        let chat_cdf = cumulative((1..=CHATS).map(|r| (r as f64).powf(-s)));
        // Intensity per 10 minutes: the hour of day (Israel/Brazil evenings), bursts that last
        // a while, quiet spells, and traffic growing over the two years.
        const HOURS: [f64; 24] = [
            0.3, 0.15, 0.08, 0.05, 0.05, 0.1, 0.4, 1.0, 1.6, 1.8, 1.9, 2.0, 2.2, 2.0, 1.8, 1.7,
            1.8, 2.0, 2.4, 2.8, 3.0, 2.6, 1.8, 0.9,
        ];
        let bins = (DAYS * 24 * 60 / BIN_MINUTES) as usize;
        let mut burst = 1.0;
        let timeline = cumulative((0..bins).map(|b| {
            if rng.below(10) >= 7 {
                burst = match rng.below(100) {
                    0..6 => 12.0,
                    6..40 => 0.15,
                    _ => 1.0,
                };
            }
            let hour = (b * BIN_MINUTES as usize / 60) % 24;
            HOURS[hour] * burst * (0.6 + 0.8 * b as f64 / bins as f64)
        }));
        Self {
            people,
            chats,
            chat_cdf,
            timeline,
            start: now - Duration::days(DAYS),
            total,
            next: 0,
            chat: 0,
            rng,
            words: Words::new(),
            per_chat: vec![0; CHATS],
            contacts,
            file_words: HashMap::new(),
            photo: None,
        }
    }

    /// The phonebook, as contact updates.
    pub(crate) fn contacts(&self) -> Vec<ContactUpdate> {
        pp::contact_updates(&self.people)
    }

    /// The (phone JID, LID) pairs of the people known but not in the phonebook.
    pub(crate) fn links(&self) -> Vec<(String, String)> {
        pp::unsaved_links(&self.people)
    }

    /// The groups with their members.
    pub(crate) fn groups(&self) -> Vec<GroupUpdate> {
        pp::group_updates(&self.chats, &self.people)
    }

    /// The busiest chat's JID.
    pub(crate) fn busy_jid(&self) -> String {
        self.chats[0].jid.clone()
    }

    /// When message `i` was sent: the timeline's inverse at `i`'s share of the archive.
    fn time_of(&self, i: usize) -> DateTime<Utc> {
        let u = (i as f64 + 0.5) / self.total as f64;
        let bin = self
            .timeline
            .partition_point(|c| *c < u)
            .min(self.timeline.len() - 1);
        let before = if bin == 0 {
            0.0
        } else {
            self.timeline[bin - 1]
        };
        let width = (self.timeline[bin] - before).max(f64::MIN_POSITIVE);
        let frac = ((u - before) / width).clamp(0.0, 1.0);
        let ms = ((bin as f64 + frac) * (BIN_MINUTES * 60_000) as f64) as i64;
        self.start + Duration::milliseconds(ms)
    }

    /// The next `n` messages (fewer at the end), oldest first.
    pub(crate) fn slab(&mut self, n: usize) -> Vec<Inbound> {
        let to = (self.next + n).min(self.total);
        let mut out = Vec::with_capacity(to - self.next);
        for i in self.next..to {
            out.push(self.message(i));
        }
        self.next = to;
        out
    }

    fn message(&mut self, i: usize) -> Inbound {
        let rng = &mut self.rng;
        if i == 0 || rng.below(100) >= STAY {
            let u = rng.unit();
            self.chat = self.chat_cdf.partition_point(|c| *c < u).min(CHATS - 1);
        }
        self.per_chat[self.chat] += 1;
        let chat = &self.chats[self.chat];
        let lang = if rng.below(100) < 88 {
            chat.lang
        } else {
            Lang::draw(rng)
        };
        let (chat_jid, from_me, sender) = if chat.group {
            let from_me = rng.below(10) == 0;
            let who = &self.people[chat.people[zipf(rng, chat.people.len(), 1.0)]];
            (chat.jid.clone(), from_me, (!from_me).then_some(who))
        } else {
            let p = &self.people[chat.people[0]];
            // A contact with a LID writes under it a third of the time: one chat either way.
            let jid = match &p.lid {
                Some(lid) if rng.below(3) == 0 => lid.clone(),
                _ => p.jid.clone(),
            };
            (jid, rng.below(100) < 45, None)
        };
        let (kind, attachment, caption) = match rng.below(1_000) {
            0..50 => {
                // Bytes (as the sim and demo connectors give them) for one older photo in ten
                // and every photo of the newest 1% (a phone keeps its recent media).
                let recent = i >= self.total - self.total / 100;
                let data = (recent || rng.below(10) == 0).then(|| crate::dataset::JPEG.clone());
                let d = self.start + Duration::days((i * DAYS as usize / self.total) as i64);
                let file = format!("IMG-{}-WA{:04}.jpg", d.format("%Y%m%d"), i % 10_000);
                if self.photo.is_none() && i >= self.total / 2 {
                    self.photo = Some(file.clone());
                }
                // The declared size only where the bytes are not given (they tell their own).
                let size = 40_000 + rng.below(3_000_000) as u64;
                let size = data.is_none().then_some(size);
                (
                    MessageType::Image,
                    Some(("image/jpeg", Some(file), size, None, data)),
                    rng.below(10) < 3,
                )
            }
            50..65 => {
                let secs = 3 + rng.below(180) as u32;
                let size = 200_000 + rng.below(40_000_000) as u64;
                (
                    MessageType::Video,
                    Some(("video/mp4", None, Some(size), Some(secs), None)),
                    rng.below(10) < 2,
                )
            }
            65..85 => {
                let secs = 1 + rng.below(120) as u32;
                (
                    MessageType::Voice,
                    Some((
                        "audio/ogg; codecs=opus",
                        None,
                        Some(u64::from(secs) * 2_000),
                        Some(secs),
                        None,
                    )),
                    false,
                )
            }
            85..95 => {
                let file = Words::filename(rng, lang, i);
                if let Some((word, _)) = file.split_once('_') {
                    *self.file_words.entry(word.to_owned()).or_default() += 1;
                }
                let mime = match file.rsplit('.').next() {
                    Some("pdf") => "application/pdf",
                    Some("zip") => "application/zip",
                    _ => "application/octet-stream",
                };
                let size = 20_000 + rng.below(5_000_000) as u64;
                (
                    MessageType::Document,
                    Some((mime, Some(file), Some(size), None, None)),
                    false,
                )
            }
            95..100 => (
                MessageType::Sticker,
                Some(("image/webp", None, Some(20_000), None, None)),
                false,
            ),
            _ => (MessageType::Text, None, true),
        };
        let text = if caption {
            let short = attachment.is_some();
            self.words.text(rng, lang, short, i, self.total)
        } else {
            String::new()
        };
        Inbound {
            chat_jid,
            wa_id: format!("3EB0{i:016X}"),
            sender_jid: sender.map(|p| p.sender().to_owned()),
            push_name: sender.map(|p| p.push.clone()),
            from_me,
            timestamp: self.time_of(i),
            kind,
            text,
            target_wa_id: None,
            edit: false,
            mentions: vec![],
            attachment: attachment.map(|(mime, filename, size, seconds, data)| InboundAttachment {
                mime_type: mime.into(),
                filename,
                size,
                seconds,
                thumbnail: None,
                data,
                media: None,
            }),
        }
    }

    /// What the phases need, once every message was made.
    pub(crate) fn finish(self) -> PhoneSummary {
        let picks = self.words.picks();
        // The two-word query from the word nearest 1,000 messages (or the most frequent picked
        // below it), the prefix from the most frequent picked word of five letters or more
        // (up to 1,000 messages): its first four letters.
        let base = picks
            .iter()
            .filter(|p| p.decade <= 1_000 && p.decade > 1)
            .max_by_key(|p| p.decade);
        let pair = base.and_then(Words::pair);
        let prefix = picks
            .iter()
            .filter(|p| p.decade <= 1_000 && p.decade > 1 && p.folded.chars().count() >= 5)
            .max_by_key(|p| p.decade)
            .map(|p| {
                let written: String = p.written.chars().take(4).collect();
                let folded: String = p.folded.chars().take(4).collect();
                (format!("{written}*"), format!("'{folded}':*"))
            });
        let busy = (self.chats[0].jid.clone(), self.per_chat[0]);
        let quiet = (0..CHATS)
            .rev()
            .find(|c| self.per_chat[*c] >= QUIET_AT_LEAST)
            .unwrap_or(CHATS - 1);
        let since = self.start + Duration::days(DAYS / 2);
        let lookups = Lookups::pick(
            &self.people,
            &self.chats,
            &self.per_chat,
            &self.file_words,
            self.photo,
        );
        PhoneSummary {
            picks,
            pair,
            prefix,
            busy,
            quiet: (self.chats[quiet].jid.clone(), self.per_chat[quiet]),
            month: (since, since + Duration::days(30)),
            contacts: self.contacts,
            groups: self.chats.iter().filter(|c| c.group).count(),
            lookups,
        }
    }
}

/// Running sums of `weights`, scaled to end at 1.
fn cumulative(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut sum = 0.0;
    let mut out: Vec<f64> = weights
        .map(|w| {
            sum += w;
            sum
        })
        .collect();
    for c in &mut out {
        *c /= sum;
    }
    out
}

#[cfg(test)]
mod tests;
