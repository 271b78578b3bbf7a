//! The phone shape's people and chats (see [`crate::phone`]): a phonebook of named contacts
//! (a third with a LID too), strangers met only in groups, direct chats and groups of 2–250
//! members ranked by activity.

use crate::dataset::Rng;
use crate::phone_text::Lang;

/// Named contacts in the phonebook.
pub(crate) const CONTACTS: usize = 1_000;
/// People met only in groups (no phonebook name).
const STRANGERS: usize = 600;
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

/// The phonebook's contacts, then the strangers.
pub(crate) fn people(rng: &mut Rng) -> Vec<Person> {
    let mut people = Vec::with_capacity(CONTACTS + STRANGERS);
    for i in 0..CONTACTS + STRANGERS {
        let lang = Lang::draw(rng);
        let stranger = i >= CONTACTS;
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
        people.push(Person {
            jid,
            lid,
            name: (!stranger).then(|| format!("{first} {last}")),
            push: first.to_owned(),
            lang,
        });
    }
    people
}

/// The chats, busiest first: direct chats with contacts in a shuffled order; chat 1 (the second
/// busiest) is a group, then one in five.
pub(crate) fn chats(rng: &mut Rng, people: &[Person]) -> Vec<Chat> {
    // Direct chats with contacts in a shuffled order; chat 1 (the second busiest) is a group,
    // then one in five.
    let mut order: Vec<usize> = (0..CONTACTS).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut partners = order.into_iter();
    let mut chats = Vec::with_capacity(CHATS);
    for rank in 0..CHATS {
        if rank == 1 || (rank > 1 && rng.below(5) == 0) {
            // 2–250 members, log-uniform; four in five are contacts.
            let size = (2f64 * 125f64.powf(rng.unit())).round() as usize;
            let mut members = Vec::with_capacity(size);
            while members.len() < size {
                let p = if rng.below(5) == 0 {
                    CONTACTS + rng.below(STRANGERS)
                } else {
                    rng.below(CONTACTS)
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
            let p = partners.next().expect("more contacts than direct chats");
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
