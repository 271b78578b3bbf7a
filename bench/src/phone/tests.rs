//! The phone shape's generator: deterministic, shaped as documented, and the phonebook size
//! changing the phonebook alone.

use super::*;

#[test]
fn the_phone_shape_is_deterministic_and_shaped() {
    let now = Utc::now();
    let total = 60_000;
    let mut a = Phone::new(total, pp::DEFAULT_CONTACTS, now);
    let mut b = Phone::new(total, pp::DEFAULT_CONTACTS, now);
    assert_eq!(a.slab(500), b.slab(500));
    let members: std::collections::HashMap<String, Vec<String>> = a
        .groups()
        .into_iter()
        .map(|g| (g.jid, g.participants))
        .collect();
    assert!(members.values().all(|m| (2..=250).contains(&m.len())));
    assert_eq!(a.contacts().len(), pp::DEFAULT_CONTACTS);
    assert!(a.links().is_empty());
    let (mut media, mut last) = (0, a.start);
    let mut seen = 500;
    while seen < total {
        for m in a.slab(10_000) {
            seen += 1;
            media += usize::from(m.attachment.is_some());
            assert!(m.timestamp >= last && m.timestamp <= now);
            last = m.timestamp;
            if let Some(sender) = &m.sender_jid {
                assert!(members[&m.chat_jid].contains(sender));
            }
        }
    }
    let s = a.finish();
    let share = s.busy.1 as f64 / total as f64;
    assert!((0.12..0.25).contains(&share), "busiest share {share}");
    assert!((0.08..0.12).contains(&(media as f64 / total as f64)));
    let decades: Vec<u64> = s.picks.iter().map(|p| p.decade).collect();
    assert_eq!(decades[..4], [1, 10, 100, 1_000], "{:?}", s.picks);
    assert!(s.pair.is_some() && s.prefix.is_some());
    let l = &s.lookups;
    assert!(
        l.shared_name.as_ref().is_some_and(|(_, n)| *n >= 2),
        "{l:?}"
    );
    assert!(l.unique_name.is_some() && l.first_name.is_some() && l.group_word.is_some());
    assert_eq!(l.digits.as_ref().map(String::len), Some(7));
    assert!(l.file_word.is_some() && l.photo_name.is_some());
    eprintln!("{s:#?}");
}

#[test]
fn the_phonebook_size_changes_the_phonebook_alone() {
    let now = Utc::now();
    let total = 20_000;
    let mut base = Phone::new(total, pp::DEFAULT_CONTACTS, now);
    let messages = base.slab(total);
    for contacts in [100, 2_000, 5_000] {
        let mut p = Phone::new(total, contacts, now);
        assert_eq!(p.slab(total), messages, "{contacts} contacts");
        assert_eq!(p.groups(), base.groups());
        let book = p.contacts();
        assert_eq!(book.len(), contacts);
        // The first contacts are the same people under the same names.
        let shared = contacts.min(pp::DEFAULT_CONTACTS);
        assert_eq!(book[..shared], base.contacts()[..shared]);
        // Below 1,000 the unsaved people's LIDs are linked; none is in the phonebook.
        let links = p.links();
        assert_eq!(links.is_empty(), contacts >= pp::KNOWN);
        assert!(
            links
                .iter()
                .all(|(jid, _)| book.iter().all(|c| c.jid != *jid))
        );
        let l = p.finish().lookups;
        assert!(l.first_name.is_some() && l.unique_name.is_some(), "{l:?}");
    }
}
