//! What the phone shape asks the tools other than `search_messages` for (issue 29 item 2),
//! picked from the archive the generator made, as the search words are: so every query hits
//! something that is there, the same query for the same `--messages` and `--contacts`, and a
//! case that finds nothing is a fault to show, not a dull query. The tools match names and
//! file names by substring (`ilike`), so the picks are checked here against every other name
//! they could also match.

use std::collections::HashMap;

use crate::phone_people::{Chat, Person};

/// The queries [`crate::phone_cases`] measures.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lookups {
    /// A last name several chats with messages share (`list_chats` `query`), with how many.
    pub(crate) shared_name: Option<(String, usize)>,
    /// A full name only one chat with messages shows, and no other name contains.
    pub(crate) unique_name: Option<String>,
    /// The first name of the busiest named chat's person (`search_contacts`).
    pub(crate) first_name: Option<String>,
    /// The last seven digits of that person's phone number (`search_contacts`).
    pub(crate) digits: Option<String>,
    /// The first word of the name of the group ranked busiest (`search_groups`).
    pub(crate) group_word: Option<String>,
    /// The word of four letters or more that most document file names hold
    /// (`search_attachments` `query`), with how many documents.
    pub(crate) file_word: Option<(String, u64)>,
    /// One photo's whole file name (`search_attachments` `query`: a rare match).
    pub(crate) photo_name: Option<String>,
}

impl Lookups {
    /// Pick from the people, the chats (busiest first) with their messages, the documents per
    /// file-name word, and one photo's file name.
    pub(crate) fn pick(
        people: &[Person],
        chats: &[Chat],
        per_chat: &[u64],
        file_words: &HashMap<String, u64>,
        photo_name: Option<String>,
    ) -> Self {
        // The names `list_chats` matches: those of chats with messages (an unsaved person's
        // chat shows a number or a first name, which no full name is part of).
        let talking: Vec<(usize, &str)> = chats
            .iter()
            .enumerate()
            .filter(|(c, chat)| per_chat[*c] > 0 && !chat.name.is_empty())
            .map(|(c, chat)| (c, chat.name.as_str()))
            .collect();
        // Named direct chats, busiest first (ties: the better rank).
        let mut direct: Vec<usize> = talking
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !chats[*c].group)
            .collect();
        direct.sort_by_key(|c| (std::cmp::Reverse(per_chat[*c]), *c));

        let mut by_last: Vec<(&str, usize)> = Vec::new();
        for c in &direct {
            if let Some((_, last)) = chats[*c].name.split_once(' ') {
                match by_last.iter_mut().find(|(l, _)| *l == last) {
                    Some((_, n)) => *n += 1,
                    None => by_last.push((last, 1)),
                }
            }
        }
        let shared_name = by_last
            .iter()
            .filter(|(_, n)| *n >= 2)
            .max_by_key(|(_, n)| *n)
            .map(|(l, n)| ((*l).to_owned(), *n));
        let contains = |name: &str, part: &str| name.to_lowercase().contains(&part.to_lowercase());
        let unique_name = direct
            .iter()
            .map(|c| chats[*c].name.as_str())
            .find(|name| talking.iter().filter(|(_, n)| contains(n, name)).count() == 1)
            .map(str::to_owned);
        let busiest = direct.first().map(|c| &people[chats[*c].people[0]]);
        let first_name = busiest
            .and_then(|p| p.name.as_deref()?.split_once(' '))
            .map(|(first, _)| first.to_owned());
        let digits = busiest.map(|p| {
            let number = p.jid.split('@').next().unwrap_or_default();
            number[number.len().saturating_sub(7)..].to_owned()
        });
        let group_word = talking
            .iter()
            .find(|(c, _)| chats[*c].group)
            .and_then(|(_, name)| name.split_whitespace().next())
            .map(str::to_owned);
        let file_word = file_words
            .iter()
            .filter(|(w, _)| w.chars().count() >= 4)
            .max_by_key(|(w, n)| (**n, std::cmp::Reverse(*w)))
            .map(|(w, n)| (w.clone(), *n));
        Self {
            shared_name,
            unique_name,
            first_name,
            digits,
            group_word,
            file_word,
            photo_name,
        }
    }
}
