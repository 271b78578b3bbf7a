//! History a phone pushes to its companion: the `HistorySync` protobuf, zlib-wrapped (stored
//! blocks: the client inflates whatever deflate it gets), inline in a history-sync notification
//! the phone sends to its own account, as phones do right after linking.

use whatsapp_rust::waproto::buffa::{Message as _, MessageField};
use whatsapp_rust::waproto::whatsapp as wa;

/// One chat's history: the contact's number and its messages, oldest first.
#[derive(Debug, Clone)]
pub struct HistoryChat {
    /// The contact (digits).
    pub with: String,
    /// `(id, from_me, unix seconds, text)` per message.
    pub messages: Vec<(String, bool, u64, String)>,
}

/// The notification message carrying `chats` as initial-bootstrap page number `chunk`, the sync
/// `progress` percent done after it.
pub(crate) fn notification(chats: &[HistoryChat], chunk: u32, progress: u32) -> wa::Message {
    page(
        chats,
        wa::history_sync::HistorySyncType::INITIAL_BOOTSTRAP,
        wa::message::HistorySyncType::INITIAL_BOOTSTRAP,
        None,
        (chunk, progress),
    )
}

/// The answer to an on-demand request (`session`: the request's message id).
pub(crate) fn on_demand(chats: &[HistoryChat], session: &str) -> wa::Message {
    page(
        chats,
        wa::history_sync::HistorySyncType::ON_DEMAND,
        wa::message::HistorySyncType::ON_DEMAND,
        Some(session.to_owned()),
        (1, 100),
    )
}

/// A history-sync notification carrying `chats` inline.
fn page(
    chats: &[HistoryChat],
    kind: wa::history_sync::HistorySyncType,
    note_kind: wa::message::HistorySyncType,
    session: Option<String>,
    (chunk, progress): (u32, u32),
) -> wa::Message {
    let conversations = chats
        .iter()
        .map(|c| {
            let jid = format!("{}@s.whatsapp.net", c.with);
            wa::Conversation {
                id: jid.clone(),
                messages: c
                    .messages
                    .iter()
                    .enumerate()
                    .map(|(i, (id, from_me, at, text))| wa::HistorySyncMsg {
                        message: MessageField::some(wa::WebMessageInfo {
                            key: MessageField::some(wa::MessageKey {
                                remote_jid: Some(jid.clone()),
                                from_me: Some(*from_me),
                                id: Some(id.clone()),
                                participant: None,
                            }),
                            message: MessageField::some(wa::Message {
                                conversation: Some(text.clone()),
                                ..Default::default()
                            }),
                            message_timestamp: Some(*at),
                            ..Default::default()
                        }),
                        msg_order_id: Some(i as u64 + 1),
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    let sync = wa::HistorySync {
        sync_type: kind,
        conversations,
        chunk_order: Some(chunk),
        progress: Some(progress),
        ..Default::default()
    };
    wrap(
        zlib_stored(&sync.encode_to_vec()),
        note_kind,
        session,
        (chunk, progress),
    )
}

/// A history-sync notification carrying `payload` (a zlib stream) inline.
fn wrap(
    payload: Vec<u8>,
    note_kind: wa::message::HistorySyncType,
    session: Option<String>,
    (chunk, progress): (u32, u32),
) -> wa::Message {
    wa::Message {
        protocol_message: MessageField::some(wa::message::ProtocolMessage {
            r#type: Some(wa::message::protocol_message::Type::HISTORY_SYNC_NOTIFICATION),
            history_sync_notification: MessageField::some(wa::message::HistorySyncNotification {
                file_length: Some(payload.len() as u64),
                sync_type: Some(note_kind),
                chunk_order: Some(chunk),
                progress: Some(progress),
                initial_hist_bootstrap_inline_payload: Some(payload),
                peer_data_request_session_id: session,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An initial-bootstrap page that inflates to more than `inflated` bytes: a conversation field
/// whose length says so, filled with zeros. It is a few hundred KiB on the wire (a deflate stream
/// of maximal back-references), so it travels inline like any page.
pub(crate) fn oversize(inflated: u64) -> wa::Message {
    // Each back-reference copies 258 bytes; the first zero is a literal.
    let copies = inflated.div_ceil(258);
    let zeros = 1 + 258 * copies;
    let mut prefix = vec![0x08, 0x00, 0x12];
    let mut n = zeros;
    while n >= 0x80 {
        prefix.push((n as u8) | 0x80);
        n >>= 7;
    }
    prefix.push(n as u8);

    let mut w = Bits::default();
    // A stored block with the protobuf prefix, then one fixed-Huffman block of zeros.
    w.put(0, 3);
    w.align();
    let len = prefix.len() as u16;
    w.bytes(&len.to_le_bytes());
    w.bytes(&(!len).to_le_bytes());
    w.bytes(&prefix);
    w.put(1, 1);
    w.put(1, 2);
    w.code(0x30, 8); // literal 0
    for _ in 0..copies {
        w.code(0b1100_0101, 8); // length 258
        w.code(0, 5); // distance 1
    }
    w.code(0, 7); // end of block
    w.align();
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&w.out);
    // Adler-32 of the prefix, then of `zeros` zero bytes (a stays, b grows by a per byte).
    let (mut a, mut b) = (1u64, 0u64);
    for &byte in &prefix {
        a = (a + u64::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    b = (b + a * (zeros % 65_521)) % 65_521;
    out.extend_from_slice(&(((b << 16) | a) as u32).to_be_bytes());
    wrap(
        out,
        wa::message::HistorySyncType::INITIAL_BOOTSTRAP,
        None,
        (1, 100),
    )
}

/// A deflate bit writer (least significant bit first; Huffman codes most significant first).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, bits: u32) {
        self.acc |= value << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn code(&mut self, code: u32, bits: u32) {
        let reversed = code.reverse_bits() >> (32 - bits);
        self.put(reversed, bits);
    }

    fn align(&mut self) {
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }
}

/// `data` as a zlib stream of stored (uncompressed) deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut chunks = data.chunks(0xFFFF).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

/// An on-demand history request a phone received from its companion.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) id: String,
    pub(crate) chat: String,
    pub(crate) oldest_ms: i64,
    pub(crate) count: usize,
}

/// What `held` has for the request: its chat's messages older than the request's oldest, the
/// newest `count` of them.
pub(crate) fn older_than(held: &[HistoryChat], r: &Request) -> Vec<HistoryChat> {
    let user = r.chat.split(['@', ':']).next().unwrap_or_default();
    held.iter()
        .filter(|c| c.with == user)
        .map(|c| {
            let mut messages: Vec<_> = c
                .messages
                .iter()
                .filter(|m| (m.2 as i64) * 1000 < r.oldest_ms)
                .cloned()
                .collect();
            let skip = messages.len().saturating_sub(r.count);
            messages.drain(..skip);
            HistoryChat {
                with: c.with.clone(),
                messages,
            }
        })
        .collect()
}

/// The on-demand history request in `msg`, if it is one.
pub(crate) fn request(id: &str, msg: &wa::Message) -> Option<Request> {
    let pdo = msg
        .protocol_message
        .as_option()?
        .peer_data_operation_request_message
        .as_option()?;
    let r = pdo.history_sync_on_demand_request.as_option()?;
    Some(Request {
        id: id.to_owned(),
        chat: r.chat_jid.clone()?,
        oldest_ms: r.oldest_msg_timestamp_ms.unwrap_or(i64::MAX),
        count: usize::try_from(r.on_demand_msg_count.unwrap_or(50)).unwrap_or(50),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_zlib_inflates_to_the_input() {
        for len in [0usize, 1, 70_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let z = zlib_stored(&data);
            let back = whatsapp_rust::wacore_binary::zlib_pool::decompress_zlib_pooled(&z, 1 << 20)
                .expect("inflate");
            assert_eq!(back, data);
        }
    }

    #[test]
    fn the_oversize_page_is_small_and_inflates_to_what_it_says() {
        let msg = oversize(1 << 20);
        let payload = msg
            .protocol_message
            .as_option()
            .and_then(|p| p.history_sync_notification.as_option())
            .and_then(|n| n.initial_hist_bootstrap_inline_payload.clone())
            .expect("inline payload");
        assert!(payload.len() < 10_000, "{}", payload.len());
        let back =
            whatsapp_rust::wacore_binary::zlib_pool::decompress_zlib_pooled(&payload, 2 << 20)
                .expect("inflate");
        assert!(back.len() > 1 << 20);
        assert!(back[back.len() - 1000..].iter().all(|b| *b == 0));
    }
}
