//! The phone shape's people and chats (see [`crate::phone`]): the people the phone's owner
//! knows (a third with a LID too), strangers met only in groups, direct chats and groups of
//! 2–250 members ranked by activity, and the phonebook (`--contacts`).
//!
//! The phonebook's size changes who is *named*, never who writes what: the people, chats and
//! messages are drawn the same for every `--contacts`, so runs with phonebooks of different
//! sizes read the same archive and differ only in what a phonebook costs. Below [`KNOWN`]
//! contacts, the rest of the people the owner knows are unsaved numbers; above it, the extra
//! contacts are phonebook entries never chatted with (most of a real phonebook), drawn from an
//! RNG of their own after everything else.

use wazap_worker::archive::{ContactUpdate, GroupUpdate};

use crate::dataset::Rng;
use crate::phone_text::Lang;

/// People the owner knows: direct chats and four in five group members are among them.
pub(crate) const KNOWN: usize = 1_000;
/// Contacts in the phonebook by default (`--contacts`): everyone the owner knows.
pub(crate) const DEFAULT_CONTACTS: usize = KNOWN;
/// The phonebook sizes `--contacts` accepts.
pub(crate) const CONTACTS_RANGE: std::ops::RangeInclusive<usize> = 100..=5_000;
/// People met only in groups (no phonebook name).
const STRANGERS: usize = 600;
/// The seed of the contacts beyond [`KNOWN`] (so they change nothing drawn before them).
const EXTRA_SEED: u64 = 0xc047_ac75;
/// Chats.
pub(crate) const CHATS: usize = 600;
#[rustfmt::skip]
const FIRST: [&[&str]; 3] = [
    &[
        "John", "Emma", "Michael", "Olivia", "David", "Sarah", "James", "Emily", "Daniel", "Kate",
        "Chris", "Laura", "Tom", "Rachel", "Ben", "Anna",
    ],
    &[
        "Maria", "João", "Ana", "Pedro", "Juliana", "Lucas", "Camila", "Rafael", "Fernanda",
        "Gabriel", "Beatriz", "Thiago", "Larissa", "Bruno", "Patrícia", "Mateus",
    ],
    &[
        "נועה", "יוסי", "מיכל", "דוד", "שירה", "אבי", "תמר", "רון", "יעל", "עומר", "רותם", "איתי",
        "הילה", "גיל", "ליאת", "משה",
    ],
];
#[rustfmt::skip]
const LAST: [&[&str]; 3] = [
    &[
        "Smith", "Johnson", "Brown", "Taylor", "Wilson", "Davies", "Evans", "Clarke", "Walker",
        "Wright", "Green", "Hall",
    ],
    &[
        "Silva", "Santos", "Oliveira", "Souza", "Pereira", "Costa", "Rodrigues", "Almeida",
        "Nascimento", "Lima", "Araújo", "Ferreira",
    ],
    &[
        "כהן", "לוי", "מזרחי", "פרץ", "ביטון", "אברהם", "פרידמן", "שפירא", "גולן", "אזולאי", "דהן",
        "חדד",
    ],
];
#[rustfmt::skip]
const GROUP_NAMES: [&[&str]; 3] = [
    &[
        "Family", "Work team", "Book club", "Parents class 3B", "Running", "Neighbours", "Trip",
    ],
    &[
        "Família ❤️", "Futebol quinta", "Turma 2009", "Trabalho", "Churrasco", "Condomínio",
    ],
    &[
        "משפחה", "ועד בית", "הורים כיתה ג", "עבודה", "כדורגל", "חברים", "טיול",
    ],
];

/// One person: a contact (named) or a stranger.
pub(crate) struct Person {
    pub(crate) jid: String,
    pub(crate) lid: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) push: String,
    pub(crate) lang: Lang,
}

impl Person {
    /// The JID a group shows as the sender: the LID where there is one, as WhatsApp does now.
    pub(crate) fn sender(&self) -> &str {
        self.lid.as_deref().unwrap_or(&self.jid)
    }
}

pub(crate) struct Chat {
    pub(crate) jid: String,
    pub(crate) name: String,
    pub(crate) lang: Lang,
    /// The person of a direct chat, or the members of a group.
    pub(crate) people: Vec<usize>,
    pub(crate) group: bool,
}

/// The people the owner knows (the first `contacts` of them named in the phonebook), the
/// strangers, then the contacts beyond [`KNOWN`] (never in a chat).
pub(crate) fn people(rng: &mut Rng, contacts: usize) -> Vec<Person> {
    let extra = contacts.saturating_sub(KNOWN);
    let mut people = Vec::with_capacity(KNOWN + STRANGERS + extra);
    for i in 0..KNOWN + STRANGERS {
        people.push(person(rng, i, i >= KNOWN, i < contacts));
    }
    let mut rng = Rng::new(EXTRA_SEED);
    for i in KNOWN + STRANGERS..KNOWN + STRANGERS + extra {
        people.push(person(&mut rng, i, false, true));
    }
    people
}

/// Person `i`: a stranger (in no phonebook, numbers of their own), or someone the owner knows,
/// `named` in the phonebook or not.
fn person(rng: &mut Rng, i: usize, stranger: bool, named: bool) -> Person {
    let lang = Lang::draw(rng);
    // 7919 is prime to 10^7: distinct numbers for distinct people.
    let n = (i * 7_919 + 1_234) % 10_000_000;
    let jid = match (lang, stranger) {
        (Lang::En, false) => format!("1555{n:07}@s.whatsapp.net"),
        (Lang::En, true) => format!("1666{n:07}@s.whatsapp.net"),
        (Lang::Pt, false) => format!("551199{n:07}@s.whatsapp.net"),
        (Lang::Pt, true) => format!("552198{n:07}@s.whatsapp.net"),
        (Lang::He, false) => format!("97250{n:07}@s.whatsapp.net"),
        (Lang::He, true) => format!("97254{n:07}@s.whatsapp.net"),
    };
    let lid = (rng.below(3) == 0)
        .then(|| format!("{}@lid", 180_000_000_000_000u64 + i as u64 * 7_919_017));
    let l = lang as usize;
    let first = FIRST[l][rng.below(FIRST[l].len())];
    let last = LAST[l][rng.below(LAST[l].len())];
    Person {
        jid,
        lid,
        name: (!stranger && named).then(|| format!("{first} {last}")),
        push: first.to_owned(),
        lang,
    }
}

/// The chats, busiest first: direct chats with the people the owner knows in a shuffled order;
/// chat 1 (the second busiest) is a group, then one in five.
pub(crate) fn chats(rng: &mut Rng, people: &[Person]) -> Vec<Chat> {
    let mut order: Vec<usize> = (0..KNOWN).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut partners = order.into_iter();
    let mut chats = Vec::with_capacity(CHATS);
    for rank in 0..CHATS {
        if rank == 1 || (rank > 1 && rng.below(5) == 0) {
            // 2–250 members, log-uniform; four in five are people the owner knows.
            let size = (2f64 * 125f64.powf(rng.unit())).round() as usize;
            let mut members = Vec::with_capacity(size);
            while members.len() < size {
                let p = if rng.below(5) == 0 {
                    KNOWN + rng.below(STRANGERS)
                } else {
                    rng.below(KNOWN)
                };
                if !members.contains(&p) {
                    members.push(p);
                }
            }
            let lang = people[members[0]].lang;
            let names = GROUP_NAMES[lang as usize];
            let name = format!("{} {}", names[rank % names.len()], rank / names.len() + 1);
            chats.push(Chat {
                jid: format!("120363{:012}@g.us", 40_000_000_000u64 + rank as u64 * 7_919),
                name,
                lang,
                people: members,
                group: true,
            });
        } else {
            let p = partners
                .next()
                .expect("more people known than direct chats");
            chats.push(Chat {
                jid: people[p].jid.clone(),
                name: people[p].name.clone().unwrap_or_default(),
                lang: people[p].lang,
                people: vec![p],
                group: false,
            });
        }
    }
    chats
}

/// The phonebook, as contact updates: the named people.
pub(crate) fn contact_updates(people: &[Person]) -> Vec<ContactUpdate> {
    people
        .iter()
        .filter_map(|p| {
            Some(ContactUpdate {
                jid: p.jid.clone(),
                lid: p.lid.clone(),
                name: p.name.clone()?,
            })
        })
        .collect()
}

/// The (phone JID, LID) pairs of the people the owner knows but did not save (below
/// [`KNOWN`] contacts): WhatsApp tells a phone both forms of a person without a name, and
/// without the link their direct chat would split in two, changing the archive's chats.
pub(crate) fn unsaved_links(people: &[Person]) -> Vec<(String, String)> {
    people[..KNOWN]
        .iter()
        .filter(|p| p.name.is_none())
        .filter_map(|p| Some((p.jid.clone(), p.lid.clone()?)))
        .collect()
}

/// The groups with their members.
pub(crate) fn group_updates(chats: &[Chat], people: &[Person]) -> Vec<GroupUpdate> {
    chats
        .iter()
        .filter(|c| c.group)
        .map(|c| GroupUpdate {
            jid: c.jid.clone(),
            name: c.name.clone(),
            participants: c
                .people
                .iter()
                .map(|p| people[*p].sender().to_owned())
                .collect(),
        })
        .collect()
}
