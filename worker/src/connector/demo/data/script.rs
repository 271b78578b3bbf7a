//! The demo's cast and the small script language its conversations are written in: who the
//! people and groups are, and one [`L`] per message, grouped into episodes ([`Ep`]) placed on a
//! day (days before today) and a local time of day. The conversations themselves live in the
//! `chats_*` modules, one per language.

use super::pictures::Pic;

/// The account's own phone number (digits of its JID) and push name.
pub(crate) const OWN_PHONE: &str = "972501234500";
/// The account owner's push name.
pub(crate) const OWN_NAME: &str = "Yael";
/// The account owner lives in São Paulo: episode times are local (UTC−3, no DST).
pub(crate) const LOCAL_UTC_OFFSET_HOURS: i64 = -3;

/// A person in the phonebook.
pub(crate) struct Person {
    /// The key scripts use for this person.
    pub(crate) key: &'static str,
    /// Phone digits (country code first).
    pub(crate) phone: &'static str,
    /// The LID digits, for the one contact WhatsApp also addresses by LID.
    pub(crate) lid: Option<&'static str>,
    /// The name saved in the owner's phonebook.
    pub(crate) name: &'static str,
    /// The name the person set for themselves.
    pub(crate) push_name: &'static str,
}

const fn p(
    key: &'static str,
    phone: &'static str,
    name: &'static str,
    push: &'static str,
) -> Person {
    Person {
        key,
        phone,
        lid: None,
        name,
        push_name: push,
    }
}

/// Everyone the demo account talks to.
pub(crate) const PEOPLE: &[Person] = &[
    p("ima", "972528431766", "אמא ❤️", "רותי"),
    p("aba", "972523307415", "אבא", "Avi Cohen"),
    p("yossi", "972546120983", "יוסי", "Yossi"),
    p("tamar", "972537789204", "תמר 🌸", "תמר"),
    p("noa", "972548812355", "Noa Levi", "Noa"),
    Person {
        key: "lucas",
        phone: "5511987654321",
        lid: Some("184726153902841"),
        name: "Lucas Oliveira",
        push_name: "Lucas O.",
    },
    p(
        "roberto",
        "5511991827364",
        "Sr. Roberto (proprietário)",
        "Roberto Almeida",
    ),
    p("mariana", "5511976543210", "Mari Souza", "Mariana"),
    p("thiago", "5511954321876", "Thiago Pelada", "Thiago"),
    p("rafael", "5511943218765", "Rafa", "Rafael Lima"),
    p("bruno", "5511932107654", "Bruno Ferreira", "Bruno F."),
    p("gabriel", "5511921096543", "Gabi", "Gabriel Rocha"),
    p(
        "sarah",
        "14155550142",
        "Sarah Mitchell (work)",
        "Sarah Mitchell",
    ),
    p("dev", "14155550187", "Dev Patel", "Dev"),
    p("tom", "14155550163", "Tom Becker", "Tom B"),
    p("aisha", "447700900123", "Aisha Khan", "Aisha"),
    p("carmen", "5491155512345", "Carmen Ruiz", "Carmen"),
];

/// One message in a script. The first field is always who sends it: `"me"` (the account) or a
/// [`Person::key`]. `back` counts messages back in the same chat (1 = the previous one).
pub(crate) enum L {
    /// Plain text.
    T(&'static str, &'static str),
    /// A reply quoting an earlier message.
    R(&'static str, u8, &'static str),
    /// Text @-mentioning the account; `@me` in it becomes `@<own phone>` as WhatsApp writes it.
    At(&'static str, &'static str),
    /// A photo with a caption.
    Img(&'static str, Pic, &'static str),
    /// A reaction (emoji) to an earlier message.
    Re(&'static str, u8, &'static str),
    /// A voice note of so many seconds.
    Voice(&'static str, u32),
    /// A PDF document: file name, caption; the PDF shows the file name.
    Doc(&'static str, &'static str, &'static str),
    /// A shared location (its description).
    Loc(&'static str, &'static str),
    /// A poll: the question and its options, one per line.
    Poll(&'static str, &'static str),
    /// An edit of an earlier message by the same sender: the new text.
    Edit(&'static str, u8, &'static str),
    /// The sender deleting an earlier message of theirs.
    Del(&'static str, u8),
}

impl L {
    /// Who sends this message: `"me"` or a person key.
    pub(crate) fn who(&self) -> &'static str {
        match *self {
            L::T(w, _)
            | L::R(w, ..)
            | L::At(w, _)
            | L::Img(w, ..)
            | L::Re(w, ..)
            | L::Voice(w, _)
            | L::Doc(w, ..)
            | L::Loc(w, _)
            | L::Poll(w, _)
            | L::Edit(w, ..)
            | L::Del(w, _) => w,
        }
    }
}

/// An episode: messages that follow each other within minutes, starting on day `d` (days before
/// today) at local `h:m`; with `lid`, a direct chat is addressed by the contact's LID.
pub(crate) struct Ep {
    pub(crate) d: u8,
    pub(crate) h: u8,
    pub(crate) m: u8,
    pub(crate) lid: bool,
    pub(crate) lines: &'static [L],
}

/// An episode in the chat's usual addressing.
pub(crate) const fn ep(d: u8, h: u8, m: u8, lines: &'static [L]) -> Ep {
    Ep {
        d,
        h,
        m,
        lid: false,
        lines,
    }
}

/// An episode the phone delivered under the contact's LID.
pub(crate) const fn ep_lid(d: u8, h: u8, m: u8, lines: &'static [L]) -> Ep {
    Ep {
        d,
        h,
        m,
        lid: true,
        lines,
    }
}

/// Who a chat is with.
pub(crate) enum With {
    /// A direct chat with the person of this key.
    Person(&'static str),
    /// A group: JID digits, subject, member keys (the account is always a member).
    Group(&'static str, &'static str, &'static [&'static str]),
}

/// One chat and its episodes, oldest first.
pub(crate) struct Chat {
    pub(crate) with: With,
    pub(crate) episodes: &'static [Ep],
}

/// A status story: poster key, hours before now (fractional), text or caption, optional picture.
pub(crate) struct Story {
    pub(crate) who: &'static str,
    pub(crate) hours_ago: f32,
    pub(crate) text: &'static str,
    pub(crate) pic: Option<Pic>,
}

/// The stories: several within the last 24 hours, one older (which `hours: 24` leaves out).
pub(crate) const STORIES: &[Story] = &[
    Story {
        who: "lucas",
        hours_ago: 1.5,
        text: "Fim de tarde na Paulista 🌆",
        pic: Some(Pic::Skyline),
    },
    Story {
        who: "noa",
        hours_ago: 4.0,
        text: "ספירה לאחור לברזיל 🇧🇷✈️ מי יודע איפה אוכלים הכי טוב בסאו פאולו?",
        pic: None,
    },
    Story {
        who: "carmen",
        hours_ago: 9.25,
        text: "Pared nueva en el taller de cerámica 🎨",
        pic: Some(Pic::Mural),
    },
    Story {
        who: "tamar",
        hours_ago: 17.0,
        text: "קפה של בוקר מול הים ☀️🌊",
        pic: None,
    },
    Story {
        who: "thiago",
        hours_ago: 31.0,
        text: "Hoje tem pelada! ⚽",
        pic: None,
    },
];
