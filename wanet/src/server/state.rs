//! What the server remembers: accounts and their devices, the sockets that are up, what waits
//! for a device that is away, groups, pairings in progress, stored media and armed faults.

use std::collections::{BTreeMap, HashMap, VecDeque};

use tokio::sync::mpsc;
use whatsapp_rust::Jid;
use whatsapp_rust::wacore_binary::Node;

use super::socket::Out;

/// A device's address: the account's phone number (digits) and the device id (0 = the phone).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Addr {
    pub(crate) user: String,
    pub(crate) device: u16,
}

/// One account: a phone number, its LID, its devices.
#[derive(Debug, Default)]
pub(crate) struct Account {
    pub(crate) lid: String,
    pub(crate) push_name: String,
    pub(crate) devices: BTreeMap<u16, Device>,
    /// The next companion's device id.
    pub(crate) next_device: u16,
}

/// One device of an account.
#[derive(Debug, Default)]
pub(crate) struct Device {
    /// The ADV key index the account signed for it (companions).
    pub(crate) key_index: u32,
    /// Its signed device identity, served with its prekey bundle (companions).
    pub(crate) identity_blob: Option<Vec<u8>>,
    /// What it uploaded for others to start sessions with it.
    pub(crate) keys: Option<Prekeys>,
}

/// A device's Signal keys as uploaded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prekeys {
    pub(crate) registration: Vec<u8>,
    pub(crate) identity: Vec<u8>,
    pub(crate) signed: (Vec<u8>, Vec<u8>, Vec<u8>),
    pub(crate) one_time: VecDeque<(Vec<u8>, Vec<u8>)>,
}

/// A stanza waiting for a device, kept until the device acknowledges it.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    /// The stanza's id and class (`message`, `receipt`, `notification`): what its ack names.
    pub(crate) id: String,
    pub(crate) class: &'static str,
    pub(crate) node: Node,
}

/// The server's memory.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) accounts: BTreeMap<String, Account>,
    /// Sockets that are logged in, by device.
    pub(crate) online: HashMap<Addr, mpsc::UnboundedSender<Out>>,
    /// Stanzas each device has not acknowledged yet (sent or not).
    pub(crate) pending: HashMap<Addr, Vec<Queued>>,
    /// Unpaired sockets waiting to be scanned, by QR ref.
    pub(crate) unpaired: HashMap<String, mpsc::UnboundedSender<Out>>,
    /// `<pair-success>` IQs waiting for the companion's answer, by IQ id.
    pub(crate) pairing: HashMap<String, Addr>,
    /// Companions waiting to link by pairing code, by pairing ref.
    pub(crate) codes: HashMap<String, super::pair::CodeRequest>,
    /// Encrypted media by direct path.
    pub(crate) media: HashMap<String, Vec<u8>>,
    /// Devices whose next delivered message is garbled (undecryptable).
    pub(crate) garble: std::collections::HashSet<Addr>,
    /// Retry receipts relayed (a device asking the sender to resend).
    pub(crate) retries: u64,
    /// Retry receipts held back instead of relayed, while a test holds them (`Some`).
    pub(crate) held_retries: Option<Vec<(Addr, String, Node)>>,
    /// Faults armed for the next message a device sends.
    pub(crate) faults: HashMap<Addr, crate::Fault>,
    /// Groups by id (the user part of `…@g.us`).
    pub(crate) groups: BTreeMap<String, super::groups::Group>,
    /// Groups created so far (the next group's id).
    pub(crate) next_group: u64,
    /// Accounts whose direct messages others receive from their LID (with `sender_pn`).
    pub(crate) lid_senders: std::collections::HashSet<String>,
    /// Logins refused, by device: the `<failure>` reason and how many more times.
    pub(crate) refusals: HashMap<Addr, (u16, u32)>,
    /// Whether new chat sockets get no answer to their handshake.
    pub(crate) stalled: bool,
    /// QR refs offered to an unpaired socket, when a test wants fewer than a phone server's six.
    pub(crate) qr_refs: Option<usize>,
    /// Server-side ids handed out.
    pub(crate) next_id: u64,
}

impl State {
    /// A fresh server-side stanza id.
    pub(crate) fn id(&mut self) -> String {
        self.next_id += 1;
        format!("wanet-{}", self.next_id)
    }

    /// The account whose phone number or LID is `user`, as its phone number.
    pub(crate) fn owner_of(&self, user: &str) -> Option<String> {
        if self.accounts.contains_key(user) {
            return Some(user.to_owned());
        }
        self.accounts
            .iter()
            .find(|(_, a)| a.lid == user)
            .map(|(pn, _)| pn.clone())
    }

    /// The device a JID names (phone-number or LID form).
    pub(crate) fn addr_of(&self, jid: &Jid) -> Option<Addr> {
        let user = self.owner_of(&jid.user)?;
        Some(Addr {
            user,
            device: jid.device,
        })
    }

    /// Hand `node` to `to` now if it is online, and keep it until it is acknowledged.
    pub(crate) fn deliver(&mut self, to: &Addr, id: String, class: &'static str, node: Node) {
        if let Some(out) = self.online.get(to) {
            let _ = out.send(Out::Node(node.clone()));
        }
        self.pending
            .entry(to.clone())
            .or_default()
            .push(Queued { id, class, node });
    }

    /// `to` acknowledged the stanza `id` of `class`.
    pub(crate) fn acknowledged(&mut self, to: &Addr, id: &str, class: &str) {
        if let Some(q) = self.pending.get_mut(to) {
            q.retain(|s| s.id != id || s.class != class);
        }
    }
}
