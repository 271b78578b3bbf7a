//! The built-in sample archive the `demo` connector serves, so a new user can try every read tool
//! at once: ten chats (three groups) in Hebrew, Portuguese, English and Spanish over the last two
//! weeks, with photos, stories, replies, mentions, reactions, an edit, a deletion, documents, voice
//! notes, locations, polls, one `#private` message and a contact seen under both phone and LID.
//!
//! Deterministic for a given `now`: WhatsApp ids are a counter (`DEMO…`), timing jitter comes
//! from a fixed-seed xorshift, and timestamps are placed relative to `now`, so re-seeding is
//! idempotent. The conversations are data (`chats_*`, written in the little language of
//! `script`); this module only turns them into the sim connector's wire types.

mod chats_en;
mod chats_he;
mod chats_pt;
mod pictures;
mod script;
#[cfg(test)]
mod tests;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, Duration, NaiveTime, Utc};
use wazap_shared::wire::MessageType;
use wazap_shared::wire::sim::{InjectStory, SimAttachment, SimMessage, UpsertContact, UpsertGroup};

use pictures::{PHOTO, Pic, THUMB};
use script::{Chat, L, LOCAL_UTC_OFFSET_HOURS, OWN_NAME, OWN_PHONE, PEOPLE, Person, STORIES, With};

/// The whole sample archive, ready to ingest through the sim connector's paths (contacts and
/// groups first, so the LID form of a contact resolves to the same chat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoData {
    /// The demo account's own phone JID.
    pub own_jid: String,
    /// The phonebook (one contact carries a LID as well as its phone JID).
    pub contacts: Vec<UpsertContact>,
    /// The groups, with their participants (the account included).
    pub groups: Vec<UpsertGroup>,
    /// Every chat message, oldest first.
    pub messages: Vec<SimMessage>,
    /// Status stories: most within the last 24 hours, one older.
    pub stories: Vec<InjectStory>,
}

/// Builds the sample archive as of `now`: messages over 14 days at plausible local times, ending
/// today (or yesterday, when today's share would end after `now`; the newest message is always
/// at least five minutes old), and stories posted in the last 31 hours.
pub fn demo_data(now: DateTime<Utc>) -> DemoData {
    let mut g = Gen {
        rng: Rng(0x9E37_79B9_7F4A_7C15),
        next_id: 0,
        own_jid: phone_jid(OWN_PHONE),
        photos: Pic::ALL.map(photo),
    };
    let chats = chats();
    let mut planned = Vec::new();
    for chat in &chats {
        g.chat(chat, &mut planned);
    }

    // Day 0 is today (local); if today's script would end after `now`, it becomes yesterday.
    let offset = Duration::hours(LOCAL_UTC_OFFSET_HOURS);
    let local_midnight = (now + offset)
        .date_naive()
        .and_time(NaiveTime::MIN)
        .and_utc();
    let mut day0 = local_midnight - offset;
    let latest = planned.iter().map(|(secs, _)| *secs).max().unwrap_or(0);
    if day0 + Duration::seconds(latest) > now - Duration::minutes(5) {
        day0 -= Duration::days(1);
    }
    let mut messages: Vec<SimMessage> = planned
        .into_iter()
        .map(|(secs, mut m)| {
            m.timestamp = day0 + Duration::seconds(secs);
            m
        })
        .collect();
    messages.sort_by_key(|m| m.timestamp);

    let stories = STORIES
        .iter()
        .map(|s| {
            let who = person(s.who);
            InjectStory {
                sender: phone_jid(who.phone),
                push_name: Some(who.push_name.to_owned()),
                id: g.id(),
                timestamp: now - Duration::seconds((s.hours_ago * 3600.0) as i64),
                kind: if s.pic.is_some() {
                    MessageType::Image
                } else {
                    MessageType::Text
                },
                text: s.text.to_owned(),
                attachment: s.pic.map(|p| g.photos[p as usize].clone()),
            }
        })
        .collect();

    DemoData {
        contacts: PEOPLE
            .iter()
            .map(|p| UpsertContact {
                jid: phone_jid(p.phone),
                lid: p.lid.map(|l| format!("{l}@lid")),
                name: p.name.to_owned(),
            })
            .collect(),
        groups: chats
            .iter()
            .filter_map(|c| match c.with {
                With::Group(id, name, members) => Some(UpsertGroup {
                    jid: format!("{id}@g.us"),
                    name: name.to_owned(),
                    participants: std::iter::once(g.own_jid.clone())
                        .chain(members.iter().map(|k| phone_jid(person(k).phone)))
                        .collect(),
                }),
                With::Person(_) => None,
            })
            .collect(),
        own_jid: g.own_jid,
        messages,
        stories,
    }
}

/// Every scripted chat.
fn chats() -> Vec<&'static Chat> {
    [chats_he::CHATS, chats_pt::CHATS, chats_en::CHATS]
        .into_iter()
        .flatten()
        .collect()
}

fn phone_jid(phone: &str) -> String {
    format!("{phone}@s.whatsapp.net")
}

/// The person with script key `key`; the scripts only use keys of [`PEOPLE`] (the tests run
/// every script).
fn person(key: &str) -> &'static Person {
    PEOPLE
        .iter()
        .find(|p| p.key == key)
        .unwrap_or_else(|| panic!("demo script names unknown person {key:?}"))
}

/// A photo attachment: a 320×240 JPEG and its 64×48 thumbnail.
fn photo(pic: Pic) -> SimAttachment {
    SimAttachment {
        mime_type: "image/jpeg".to_owned(),
        filename: None,
        seconds: None,
        data_base64: Some(B64.encode(pic.jpeg(PHOTO, 80))),
        thumbnail_base64: Some(B64.encode(pic.jpeg(THUMB, 70))),
    }
}

/// xorshift64*: a few lines of fixed-seed randomness for timing jitter.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Generation state: the id counter, the jitter and the pictures, encoded once per call.
struct Gen {
    rng: Rng,
    next_id: u64,
    own_jid: String,
    photos: [SimAttachment; Pic::ALL.len()],
}

impl Gen {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("DEMO{:016X}", self.next_id)
    }

    /// Seconds between one message and the next: typing time, now and then a pause.
    fn gap(&mut self, line: &L) -> i64 {
        let secs = match line {
            L::Re(..) => 10 + self.rng.below(110),
            L::T(_, s) | L::R(_, _, s) | L::At(_, s) => {
                20 + self.rng.below(150) + s.chars().count() as u64 / 3
            }
            _ => 30 + self.rng.below(200),
        };
        let pause = if self.rng.below(6) == 0 {
            180 + self.rng.below(720)
        } else {
            0
        };
        (secs + pause) as i64
    }

    /// Appends `chat`'s messages as (seconds after local midnight of day 0, message).
    fn chat(&mut self, chat: &Chat, out: &mut Vec<(i64, SimMessage)>) {
        let (jid, lid, group) = match chat.with {
            With::Person(k) => {
                let p = person(k);
                (phone_jid(p.phone), p.lid.map(|l| format!("{l}@lid")), false)
            }
            With::Group(id, ..) => (format!("{id}@g.us"), None, true),
        };
        // (WhatsApp id, sender key) of the chat's messages so far, for `back` references.
        let mut history: Vec<(String, &'static str)> = Vec::new();
        for ep in chat.episodes {
            let chat_jid = match (&lid, ep.lid) {
                (Some(lid), true) => lid.clone(),
                _ => jid.clone(),
            };
            let mut t = -i64::from(ep.d) * 86_400 + i64::from(ep.h) * 3600 + i64::from(ep.m) * 60;
            for (i, line) in ep.lines.iter().enumerate() {
                if i > 0 {
                    t += self.gap(line);
                }
                let m = self.message(line, chat_jid.clone(), group, &history);
                history.push((m.id.clone(), line.who()));
                out.push((t, m));
            }
        }
    }

    /// One scripted line as a sim message (its timestamp is set later).
    fn message(
        &mut self,
        line: &L,
        chat: String,
        group: bool,
        history: &[(String, &'static str)],
    ) -> SimMessage {
        let who = line.who();
        let from_me = who == "me";
        let (sender, push_name) = match (from_me, group) {
            (true, true) => (Some(self.own_jid.clone()), Some(OWN_NAME.to_owned())),
            (true, false) => (None, None),
            (false, true) => {
                let p = person(who);
                (Some(phone_jid(p.phone)), Some(p.push_name.to_owned()))
            }
            (false, false) => (None, Some(person(who).push_name.to_owned())),
        };
        let target = |back: u8| {
            let i = history.len().checked_sub(usize::from(back));
            let (id, _) = i
                .and_then(|i| history.get(i))
                .expect("demo script refers back past the chat's start");
            Some(id.clone())
        };
        let mut m = SimMessage {
            chat,
            id: self.id(),
            sender,
            push_name,
            from_me,
            timestamp: DateTime::UNIX_EPOCH,
            kind: MessageType::Text,
            text: String::new(),
            reply_to: None,
            mentions: Vec::new(),
            attachment: None,
            edit: false,
        };
        match *line {
            L::T(_, s) => m.text = s.to_owned(),
            L::R(_, back, s) => {
                m.text = s.to_owned();
                m.reply_to = target(back);
            }
            L::At(_, s) => {
                m.text = s.replace("@me", &format!("@{OWN_PHONE}"));
                m.mentions = vec![self.own_jid.clone()];
            }
            L::Img(_, pic, caption) => {
                m.kind = MessageType::Image;
                m.text = caption.to_owned();
                m.attachment = Some(self.photos[pic as usize].clone());
            }
            L::Re(_, back, emoji) => {
                m.kind = MessageType::Reaction;
                m.text = emoji.to_owned();
                m.reply_to = target(back);
            }
            L::Voice(_, seconds) => {
                m.kind = MessageType::Voice;
                m.attachment = Some(SimAttachment {
                    mime_type: "audio/ogg; codecs=opus".to_owned(),
                    filename: None,
                    seconds: Some(seconds),
                    data_base64: None,
                    thumbnail_base64: None,
                });
            }
            L::Doc(_, filename, caption) => {
                m.kind = MessageType::Document;
                m.text = caption.to_owned();
                let title = filename.trim_end_matches(".pdf").replace('_', " ");
                m.attachment = Some(SimAttachment {
                    mime_type: "application/pdf".to_owned(),
                    filename: Some(filename.to_owned()),
                    seconds: None,
                    data_base64: Some(B64.encode(pictures::pdf(&[&title, "wazap demo document"]))),
                    thumbnail_base64: None,
                });
            }
            L::Loc(_, place) => {
                m.kind = MessageType::Location;
                m.text = place.to_owned();
            }
            L::Poll(_, question) => {
                m.kind = MessageType::Poll;
                m.text = question.to_owned();
            }
            L::Edit(_, back, s) => {
                m.text = s.to_owned();
                m.reply_to = target(back);
                m.edit = true;
            }
            L::Del(_, back) => {
                m.kind = MessageType::Deleted;
                m.reply_to = target(back);
            }
        }
        m
    }
}
