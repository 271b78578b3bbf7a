//! Routing between devices: a message's per-device ciphertexts to each device it names, a group
//! message to every member device (and the server ack to the sender), receipts back to the device that sent the message, and acks that
//! release what a device has taken.

use whatsapp_rust::wacore_binary::Node;
use whatsapp_rust::{Jid, NodeBuilder};

use super::Server;
use super::socket::Out;
use super::state::{Addr, State};
use crate::Fault;
use crate::node::{attr, child, children, jid, now};

/// The JID a device is known by in `from` (phone-number form).
pub(crate) fn device_jid(addr: &Addr) -> String {
    if addr.device == 0 {
        format!("{}@s.whatsapp.net", addr.user)
    } else {
        format!("{}:{}@s.whatsapp.net", addr.user, addr.device)
    }
}

/// A device's LID JID.
fn lid_jid(lid: &str, device: u16) -> String {
    if device == 0 {
        format!("{lid}@lid")
    } else {
        format!("{lid}:{device}@lid")
    }
}

/// A `<message>` from `from`: one stanza per addressed device, then the server ack.
pub(crate) fn message(server: &Server, from: &Addr, node: &Node) {
    let (Some(id), Some(to)) = (attr(node, "id"), jid(node, "to")) else {
        return;
    };
    let mut st = server.state();
    let fault = st.faults.remove(from);
    match fault {
        Some(Fault::DropBeforeRelay) => return drop_sender(&mut st, from),
        Some(Fault::Nack(code)) => {
            return ack_sender(&mut st, from, &id, &to.to_non_ad_string(), Some(code));
        }
        _ => {}
    }
    let notify = st
        .accounts
        .get(&from.user)
        .map(|a| a.push_name.clone())
        .unwrap_or_default();
    let identity = child(node, "device-identity").cloned();
    let t = now().to_string();
    let deliveries = if to.server.as_str() == "g.us" {
        group_copies(&st, from, node, &to)
    } else {
        direct_copies(&st, from, node, &to)
    };
    for (addr, b, encs) in deliveries {
        let mut b = b.attr("id", id.clone()).attr("t", t.clone());
        if !notify.is_empty() {
            b = b.attr("notify", notify.clone());
        }
        let pkmsg = encs
            .iter()
            .any(|e| attr(e, "type").as_deref() == Some("pkmsg"));
        let mut kids = encs;
        if st.garble.remove(&addr)
            && let Some(first) = kids.first_mut()
        {
            garble(first);
        }
        if pkmsg && let Some(i) = &identity {
            kids.push(i.clone());
        }
        st.deliver(&addr, id.clone(), "message", b.children(kids).build());
    }
    match fault {
        Some(Fault::DropAfterRelay) => drop_sender(&mut st, from),
        Some(Fault::NoAck) => {}
        Some(Fault::DelayAck(wait)) => {
            if let Some(out) = st.online.get(from).cloned() {
                let ack = ack_node(&id, &to.to_non_ad_string(), None);
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let _ = out.send(Out::Node(ack));
                });
            }
        }
        _ => ack_sender(&mut st, from, &id, &to.to_non_ad_string(), None),
    }
}

/// A direct message's copies: to each device named in `<participants>` (the recipient's and the
/// sender's own other devices), or a peer message to the own phone, or a resend to one device.
fn direct_copies(
    st: &State,
    from: &Addr,
    node: &Node,
    to: &Jid,
) -> Vec<(Addr, NodeBuilder, Vec<Node>)> {
    let mut targets: Vec<(Jid, Node)> = Vec::new();
    if let Some(parts) = child(node, "participants") {
        for t in children(parts) {
            if let (Some(dev), Some(enc)) = (jid(t, "jid"), child(t, "enc")) {
                targets.push((dev, enc.clone()));
            }
        }
    } else if let Some(enc) = child(node, "enc") {
        // A peer message (to the own phone) or a resend to one device: `to` is the device.
        let dev = if attr(node, "category").as_deref() == Some("peer") {
            Jid {
                device: 0,
                ..to.clone()
            }
        } else {
            to.clone()
        };
        targets.push((dev, enc.clone()));
    }
    let mut out = Vec::new();
    for (dev, enc) in targets {
        let Some(addr) = st.addr_of(&dev) else {
            continue;
        };
        if &addr == from {
            continue;
        }
        let mut b = NodeBuilder::new("message")
            .attr("type", attr(node, "type").unwrap_or_else(|| "text".into()));
        b = match st.accounts.get(&from.user) {
            // Another account's device hears from a LID-addressed sender by LID, with the phone
            // number beside it.
            Some(a) if addr.user != from.user && st.lid_senders.contains(&from.user) => b
                .attr("from", lid_jid(&a.lid, from.device))
                .attr("sender_pn", format!("{}@s.whatsapp.net", from.user)),
            // By phone number, with the sender's LID beside it (as WhatsApp tells a contact's
            // devices both forms).
            Some(a) if addr.user != from.user => b
                .attr("from", device_jid(from))
                .attr("sender_lid", lid_jid(&a.lid, 0)),
            _ => b.attr("from", device_jid(from)),
        };
        if let Some(c) = attr(node, "category") {
            b = b.attr("category", c);
        }
        if addr.user == from.user && attr(node, "category").is_none() {
            // The sender's own other device gets a copy of what was sent to `to`.
            b = b.attr("recipient", to.to_non_ad_string());
        }
        out.push((addr, b, vec![enc]));
    }
    out
}

/// A group message's copies: every member device but the sender's gets the group ciphertext
/// (`skmsg`), preceded by its own `<participants>` entry (the sender key, Signal-encrypted to it)
/// when the sender included one. Nothing for a group the server does not know or a sender who is
/// not a member.
fn group_copies(
    st: &State,
    from: &Addr,
    node: &Node,
    to: &Jid,
) -> Vec<(Addr, NodeBuilder, Vec<Node>)> {
    let Some(group) = st.groups.get(to.user.as_str()) else {
        return Vec::new();
    };
    if !group.members.contains(&from.user) {
        return Vec::new();
    }
    let mut own: std::collections::HashMap<Addr, Node> = std::collections::HashMap::new();
    if let Some(parts) = child(node, "participants") {
        for t in children(parts) {
            if let (Some(addr), Some(enc)) =
                (jid(t, "jid").and_then(|j| st.addr_of(&j)), child(t, "enc"))
            {
                own.insert(addr, enc.clone());
            }
        }
    }
    let shared: Vec<Node> = children(node)
        .iter()
        .filter(|c| c.tag == "enc")
        .cloned()
        .collect();
    let mut out = Vec::new();
    for addr in super::groups::devices(st, &group.members) {
        if &addr == from {
            continue;
        }
        let mut encs: Vec<Node> = own.remove(&addr).into_iter().collect();
        encs.extend(shared.iter().cloned());
        if encs.is_empty() {
            continue;
        }
        let b = NodeBuilder::new("message")
            .attr("from", to.to_non_ad_string())
            .attr("participant", device_jid(from))
            .attr("type", attr(node, "type").unwrap_or_else(|| "text".into()));
        out.push((addr, b, encs));
    }
    out
}

/// Flip the ciphertext's last byte (in its MAC): the recipient cannot decrypt it.
fn garble(enc: &mut Node) {
    if let Some(whatsapp_rust::wacore_binary::NodeContent::Bytes(b)) = enc.content.as_mut()
        && let Some(last) = b.last_mut()
    {
        *last ^= 0xA5;
    }
}

/// The server's ack of a message to the device that sent it (a nack with `error`).
fn ack_sender(st: &mut State, from: &Addr, id: &str, to: &str, error: Option<u16>) {
    if let Some(out) = st.online.get(from) {
        let _ = out.send(Out::Node(ack_node(id, to, error)));
    }
}

/// The server's ack of message `id` sent to `to` (a nack with `error`).
fn ack_node(id: &str, to: &str, error: Option<u16>) -> Node {
    let mut ack = NodeBuilder::new("ack")
        .attr("class", "message")
        .attr("id", id.to_owned())
        .attr("from", to.to_owned())
        .attr("t", now().to_string());
    if let Some(code) = error {
        ack = ack.attr("error", code.to_string());
    }
    ack.build()
}

/// Close the sender's socket (a fault).
fn drop_sender(st: &mut State, from: &Addr) {
    if let Some(out) = st.online.remove(from) {
        let _ = out.send(Out::Drop);
    }
}

/// A `<receipt>` from `from`: the messages it names are taken; delivery, read and retry
/// receipts go on to the device they name, or to every device of the account they name.
pub(crate) fn receipt(server: &Server, from: &Addr, node: &Node) {
    let Some(id) = attr(node, "id") else {
        return;
    };
    let mut st = server.state();
    let mut ids = vec![id.clone()];
    if let Some(list) = child(node, "list") {
        ids.extend(children(list).iter().filter_map(|i| attr(i, "id")));
    }
    for i in &ids {
        st.acknowledged(from, i, "message");
    }
    let kind = attr(node, "type").unwrap_or_default();
    if kind == "retry" {
        st.retries += 1;
    }
    if kind == "server-error" && child(node, "rmr").is_some() {
        // A companion asking for media again: its own phone keeps the files.
        let phone = Addr {
            user: from.user.clone(),
            device: 0,
        };
        let b = NodeBuilder::new("receipt")
            .attr("from", device_jid(from))
            .attr("id", id.clone())
            .attr("type", kind)
            .attr("t", now().to_string())
            .children(children(node).to_vec());
        return st.deliver(&phone, id, "receipt", b.build());
    }
    if matches!(
        kind.as_str(),
        "sender" | "hist_sync" | "peer_msg" | "server-error"
    ) {
        return;
    }
    let target = jid(node, "participant")
        .filter(|_| jid(node, "to").is_some_and(|t| t.server.as_str() == "g.us"))
        .or_else(|| jid(node, "to"));
    let Some(author) = target.and_then(|t| st.addr_of(&t)) else {
        return;
    };
    // To an account (no device): every device of it sees the tick; to a device: that device.
    let to_all = author.device == 0 && author.user != from.user;
    let authors = if to_all {
        super::groups::devices(&st, std::slice::from_ref(&author.user))
    } else {
        vec![author]
    };
    let mut b = NodeBuilder::new("receipt")
        .attr("from", device_jid(from))
        .attr("id", id.clone())
        .attr("t", now().to_string());
    if !kind.is_empty() {
        b = b.attr("type", kind);
    }
    if let Some(r) = attr(node, "recipient") {
        b = b.attr("recipient", r);
    }
    if let Some(c) = attr(node, "category") {
        b = b.attr("category", c);
    }
    let kids = children(node).to_vec();
    if !kids.is_empty() {
        b = b.children(kids);
    }
    let node = b.build();
    let retry = attr(&node, "type").as_deref() == Some("retry");
    for a in authors {
        match &mut st.held_retries {
            Some(held) if retry => held.push((a, id.clone(), node.clone())),
            _ => st.deliver(&a, id.clone(), "receipt", node.clone()),
        }
    }
}

/// A phone's answer to a media retry (`mediaretry`, to one of its own companions): handed to
/// that companion as the server's notification.
pub(crate) fn notification(server: &Server, from: &Addr, node: &Node) {
    let (Some(id), Some(to)) = (attr(node, "id"), jid(node, "to")) else {
        return;
    };
    let mut st = server.state();
    let Some(addr) = st.addr_of(&to).filter(|a| a.user == from.user) else {
        return;
    };
    if attr(node, "type").as_deref() != Some("mediaretry") {
        return;
    }
    let b = NodeBuilder::new("notification")
        .attr("from", format!("{}@s.whatsapp.net", from.user))
        .attr("type", "mediaretry")
        .attr("id", id.clone())
        .attr("t", now().to_string())
        .children(children(node).to_vec());
    st.deliver(&addr, id, "notification", b.build());
}

/// An `<ack>` from `from`: the stanza it names is taken.
pub(crate) fn ack(server: &Server, from: &Addr, node: &Node) {
    if let (Some(id), Some(class)) = (attr(node, "id"), attr(node, "class")) {
        server.state().acknowledged(from, &id, &class);
    }
}
