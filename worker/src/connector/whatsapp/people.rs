//! One person, one chat: WhatsApp addresses a person by phone number (`…@s.whatsapp.net`) or by
//! LID (`…@lid`), and says which two belong together in several places — a message's
//! alternate sender address, the phone ↔ LID mappings of history blobs, group member lists and
//! contact records. [`pair`] reads such a pair; [`Linked`] hands new ones to the archive
//! ([`Archive::link_aliases`]) before the messages that use them, once per pair per process.

use std::collections::HashSet;
use std::sync::Mutex;

use whatsapp_rust::Client;
use whatsapp_rust::Jid;
use whatsapp_rust::types::message::MessageInfo;
use whatsapp_rust::wacore_binary::JidExt as _;

use crate::archive::Archive;
use crate::archive::jid::Jid as ArchiveJid;

/// Pairs remembered before the memory starts over (a few MiB at most).
const REMEMBER_MAX: usize = 100_000;

/// `(phone-number JID, LID)` in canonical form, when `a` and `b` are one of each.
pub fn pair(a: &str, b: &str) -> Option<(String, String)> {
    let (a, b) = (ArchiveJid::parse(a)?, ArchiveJid::parse(b)?);
    match (a.phone().is_some(), b.phone().is_some()) {
        (true, false) if b.is_lid() => Some((a.canonical, b.canonical)),
        (false, true) if a.is_lid() => Some((b.canonical, a.canonical)),
        _ => None,
    }
}

/// The pair a live message's envelope names for its sender: the sender's address and its
/// alternate form (in a direct chat the chat is the sender). Own messages name none (their
/// alternate form is the account's own).
pub fn from_info(info: &MessageInfo) -> Option<(String, String)> {
    let s = &info.source;
    if s.is_from_me {
        return None;
    }
    let alt = s.sender_alt.as_ref()?;
    let who = if s.is_group || s.chat.is_status_broadcast() {
        &s.sender
    } else {
        &s.chat
    };
    pair(&who.to_non_ad_string(), &alt.to_non_ad_string())
}

/// For an own message in a direct chat addressed by LID, the phone number the client's
/// LID ↔ phone store knows for that LID; `None` when it knows none. (Own messages carry no
/// alternate address of the chat; a phone-addressed chat is linked by the other side's
/// messages.)
pub async fn from_own(client: &Client, info: &MessageInfo) -> Option<(String, String)> {
    let s = &info.source;
    if !s.is_from_me || s.is_group || !s.chat.is_lid() {
        return None;
    }
    let entry = client.get_lid_pn_entry(&s.chat).await.ok()??;
    pair(
        &format!("{}@s.whatsapp.net", entry.phone_number),
        &format!("{}@lid", entry.lid),
    )
}

/// The pair a group member's record names (`jid` and its phone number or LID).
pub fn from_member(jid: &Jid, other: Option<&Jid>) -> Option<(String, String)> {
    pair(&jid.to_non_ad_string(), &other?.to_non_ad_string())
}

/// The pairs already handed to the archive by this process.
#[derive(Debug, Default)]
pub struct Linked {
    seen: Mutex<HashSet<(String, String)>>,
}

impl Linked {
    /// Hand the pairs not linked before to the archive and wait for its commit, so messages
    /// queued afterwards resolve to the linked chat.
    pub async fn link(
        &self,
        archive: &Archive,
        account: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<()> {
        let mut new: Vec<(String, String)> = {
            let seen = self.lock();
            pairs.into_iter().filter(|p| !seen.contains(p)).collect()
        };
        new.sort();
        new.dedup();
        if new.is_empty() {
            return Ok(());
        }
        archive.link_aliases(account, new.clone()).await?;
        let mut seen = self.lock();
        if seen.len() + new.len() > REMEMBER_MAX {
            seen.clear();
        }
        seen.extend(new);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_one_phone_jid_with_one_lid_in_either_order() {
        let want = Some((
            "15550001111@s.whatsapp.net".to_owned(),
            "123456789@lid".to_owned(),
        ));
        assert_eq!(pair("15550001111:3@s.whatsapp.net", "123456789@lid"), want);
        assert_eq!(pair("123456789:2@lid", "15550001111@s.whatsapp.net"), want);
        assert_eq!(pair("123@lid", "456@lid"), None);
        assert_eq!(pair("1555@s.whatsapp.net", "1666@s.whatsapp.net"), None);
        assert_eq!(pair("120363000000000001@g.us", "123@lid"), None);
    }
}
