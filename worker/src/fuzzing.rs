//! The entry point of the `wa_message` cargo-fuzz target in `fuzz/` (re-exported hidden from
//! the docs; not an API). See `docs/fuzzing.md`.

use whatsapp_rust::waproto::buffa::Message as _;
use whatsapp_rust::waproto::whatsapp as wa;

use crate::connector::whatsapp::map;

/// Chats a history entry may belong to: a person, a group, statuses, a channel, a LID.
const CHATS: [&str; 5] = [
    "972501234567@s.whatsapp.net",
    "120363000000000000@g.us",
    "status@broadcast",
    "120363000000000001@newsletter",
    "123456789012345@lid",
];

/// The first byte picks the chat; the rest, whatever protobuf it decodes as, goes through the
/// mapper: as a history-sync `WebMessageInfo` ([`map::from_history`]) and as a live `Message`
/// ([`map::content`], what [`map::from_live`] maps). Decoding may fail; mapping never panics.
pub fn wa_message(data: &[u8]) {
    let Some((&pick, proto)) = data.split_first() else {
        return;
    };
    let chat = CHATS[usize::from(pick) % CHATS.len()];
    if let Ok(web) = wa::WebMessageInfo::decode_from_slice(proto) {
        let _ = map::from_history(chat, &web);
    }
    if let Ok(message) = wa::Message::decode_from_slice(proto) {
        let _ = map::content(&message);
    }
}
