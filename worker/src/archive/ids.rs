//! Opaque ids (DESIGN §3): keyed hashes under the archive's secret `id_key`, so ids are stable
//! for the life of the archive, reveal no JID or phone number, and differ between archives.
//! Every id names its account: the hash covers it, and every account but the default one is
//! spelled after it (`c_<hash>-work`, [`wazap_shared::ids::with_account`]), so a gateway and a
//! read tell an id's account without a lookup.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use wazap_shared::ids::{
    ATTACHMENT_ID_PREFIX, CHAT_ID_PREFIX, DEFAULT_ACCOUNT, MESSAGE_ID_PREFIX, account_of,
    with_account,
};

/// Hex digits of a chat id's hash (80 bits).
const CHAT_HEX: usize = 20;
/// Hex digits of a message, story or attachment id's hash (96 bits).
const ITEM_HEX: usize = 24;

/// The archive's id key, ready to hash.
#[derive(Clone)]
pub(crate) struct IdKey {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for IdKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdKey(..)")
    }
}

impl IdKey {
    /// A key from the archive's stored secret bytes.
    pub(crate) fn new(secret: &[u8]) -> Self {
        Self {
            mac: Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length"),
        }
    }

    /// `prefix` + the first `hex` hex digits of HMAC(key, domain ‖ parts), each part
    /// length-prefixed so that no two inputs hash alike.
    fn hash(&self, prefix: &str, hex: usize, domain: &[u8], parts: &[&str]) -> String {
        let mut mac = self.mac.clone();
        mac.update(domain);
        for p in parts {
            mac.update(&(p.len() as u32).to_be_bytes());
            mac.update(p.as_bytes());
        }
        let digest = mac.finalize().into_bytes();
        let mut out = String::with_capacity(prefix.len() + hex);
        out.push_str(prefix);
        out.push_str(&hex::encode(&digest[..hex / 2]));
        out
    }

    /// The chat id of a chat of `account` first seen under `canonical_jid`.
    pub(crate) fn chat_id(&self, account: &str, canonical_jid: &str) -> String {
        let hash = self.hash(CHAT_ID_PREFIX, CHAT_HEX, b"chat", &[account, canonical_jid]);
        with_account(hash, account)
    }

    /// The id of WhatsApp message `wa_id` in `chat_id`.
    pub(crate) fn message_id(&self, account: &str, chat_id: &str, wa_id: &str) -> String {
        let hash = self.hash(
            MESSAGE_ID_PREFIX,
            ITEM_HEX,
            b"message",
            &[account, chat_id, wa_id],
        );
        with_account(hash, account)
    }

    /// The id of story `wa_id` posted by the person of `sender_chat_id` (it reads as a message id).
    pub(crate) fn story_id(&self, account: &str, sender_chat_id: &str, wa_id: &str) -> String {
        let hash = self.hash(
            MESSAGE_ID_PREFIX,
            ITEM_HEX,
            b"story",
            &[account, sender_chat_id, wa_id],
        );
        with_account(hash, account)
    }

    /// The id of the attachment of message (or story) `message_id`, in the message's account.
    pub(crate) fn attachment_id(&self, message_id: &str) -> String {
        let hash = self.hash(ATTACHMENT_ID_PREFIX, ITEM_HEX, b"attachment", &[message_id]);
        with_account(hash, account_of(message_id).unwrap_or(DEFAULT_ACCOUNT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wazap_shared::ids::{is_attachment_id, is_chat_id, is_message_id, is_opaque};

    #[test]
    fn ids_are_stable_keyed_and_well_formed() {
        let k = IdKey::new(&[7; 32]);
        let c = k.chat_id("default", "972501234567@s.whatsapp.net");
        assert!(is_chat_id(&c));
        assert_eq!(c.len(), 2 + CHAT_HEX);
        assert_eq!(c, k.chat_id("default", "972501234567@s.whatsapp.net"));
        assert_ne!(c, k.chat_id("other", "972501234567@s.whatsapp.net"));
        assert_ne!(
            c,
            IdKey::new(&[8; 32]).chat_id("default", "972501234567@s.whatsapp.net")
        );
        assert!(!c.contains("972501234567"));
        let m = k.message_id("default", &c, "ABC");
        assert!(is_opaque(&m, MESSAGE_ID_PREFIX));
        assert_ne!(m, k.story_id("default", &c, "ABC"));
        // Length prefixes keep part boundaries apart.
        assert_ne!(
            k.message_id("default", "c_1", "23"),
            k.message_id("default", "c_12", "3")
        );
        assert!(is_opaque(&k.attachment_id(&m), ATTACHMENT_ID_PREFIX));
        // Another account's ids name it; the default account's carry nothing (as before there
        // were accounts, so the ids agents hold still resolve).
        let w = k.chat_id("work", "972501234567@s.whatsapp.net");
        assert_eq!(account_of(&w), Some("work"));
        assert!(w.ends_with("-work") && is_chat_id(&w));
        let wm = k.message_id("work", &w, "ABC");
        assert!(is_message_id(&wm) && wm.ends_with("-work"));
        let wa = k.attachment_id(&wm);
        assert!(is_attachment_id(&wa) && wa.ends_with("-work"));
        assert_eq!(account_of(&k.story_id("work", &w, "ABC")), Some("work"));
    }

    use proptest::prelude::*;

    fn account() -> impl Strategy<Value = String> {
        prop_oneof![Just("default".to_owned()), "[a-z0-9][a-z0-9-]{0,31}"]
    }

    fn lower_hex(s: &str) -> bool {
        s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    proptest! {
        /// Every id the worker makes is the shape the shared checks (and so the gateway) accept,
        /// is the same for the same inputs under the same key, and differs for different
        /// inputs (a collision of 80 or 96 bits here would be a bug, not chance) — whatever
        /// the key and the strings, separators and empty parts included.
        #[test]
        fn ids_are_well_formed_stable_and_tell_inputs_apart(
            secret in proptest::collection::vec(any::<u8>(), 0..48),
            a in (account(), any::<String>()),
            b in prop_oneof![
                (account(), any::<String>()),
                Just(("default".to_owned(), String::new())),
            ],
        ) {
            let k = IdKey::new(&secret);
            let (ca, cb) = (k.chat_id(&a.0, &a.1), k.chat_id(&b.0, &b.1));
            prop_assert!(is_chat_id(&ca), "{}", ca);
            prop_assert!(wazap_shared::checks::send_chat_id(&ca).is_ok());
            prop_assert_eq!(account_of(&ca), Some(a.0.as_str()));
            let hash = ca.split('-').next().unwrap_or_default();
            prop_assert_eq!(hash.len(), 2 + CHAT_HEX);
            prop_assert!(lower_hex(&hash[2..]));
            prop_assert_eq!(&ca, &IdKey::new(&secret).chat_id(&a.0, &a.1));
            prop_assert_eq!(ca == cb, a == b);
            // The parts' boundary moves: still another hash.
            let moved = format!("{}{}", a.0, a.1);
            prop_assert_eq!(
                k.hash(CHAT_ID_PREFIX, CHAT_HEX, b"chat", &[&moved, ""])
                    == k.hash(CHAT_ID_PREFIX, CHAT_HEX, b"chat", &[&a.0, &a.1]),
                a.1.is_empty()
            );

            let m = k.message_id(&a.0, &ca, &a.1);
            let story = k.story_id(&a.0, &ca, &a.1);
            let att = k.attachment_id(&m);
            for (id, prefix) in [(&m, MESSAGE_ID_PREFIX), (&story, MESSAGE_ID_PREFIX), (&att, ATTACHMENT_ID_PREFIX)] {
                let parsed = wazap_shared::ids::parse_item_id(id, prefix);
                prop_assert!(parsed.is_some(), "{}", id);
                let parsed = parsed.unwrap();
                prop_assert_eq!(parsed.account, a.0.as_str());
                prop_assert_eq!(parsed.hash.len(), ITEM_HEX);
                prop_assert!(lower_hex(parsed.hash));
            }
            prop_assert_ne!(&m, &story);
            prop_assert_eq!(m == k.message_id(&b.0, &cb, &b.1), a == b);
            prop_assert_eq!(att == k.attachment_id(&story), false);
        }
    }
}
