//! One logged-in (or pairing) socket: login or the QR offer, then each stanza the device sends,
//! answered (IQs), relayed (messages, receipts) or taken as an acknowledgement (acks).

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use whatsapp_rust::NodeBuilder;
use whatsapp_rust::wacore_binary::Node;
use whatsapp_rust::waproto::whatsapp as wa;

use super::socket::Out;
use super::state::Addr;
use super::{Server, iq, pair, relay};
use crate::node::{SERVER, attr, now};

/// Run the session of a socket whose handshake carried `payload`.
pub(crate) async fn run(
    server: Arc<Server>,
    payload: wa::ClientPayload,
    out: UnboundedSender<Out>,
    rx: UnboundedReceiver<Node>,
) {
    match payload.username {
        Some(user) => {
            let addr = Addr {
                user: user.to_string(),
                device: payload.device.unwrap_or(0) as u16,
            };
            logged_in(server, addr, out, rx).await;
        }
        None => pair::unpaired(server, out, rx).await,
    }
}

/// A device that logs in: refused when unknown or a refusal is armed, else `<success>` and its
/// stanzas.
async fn logged_in(
    server: Arc<Server>,
    addr: Addr,
    out: UnboundedSender<Out>,
    mut rx: UnboundedReceiver<Node>,
) {
    let refusal = {
        let mut st = server.state();
        st.refusals.get_mut(&addr).filter(|r| r.1 > 0).map(|r| {
            r.1 -= 1;
            r.0
        })
    };
    if let Some(reason) = refusal {
        let mut f = NodeBuilder::new("failure").attr("reason", reason.to_string());
        if reason == 402 {
            // A temporary ban says why (code) and for how long (seconds).
            f = f.attr("code", "101").attr("expire", "3600");
        }
        let _ = out.send(Out::Node(f.build()));
        let _ = out.send(Out::Drop);
        return;
    }
    let lid = {
        let mut st = server.state();
        let lid = st
            .accounts
            .get(&addr.user)
            .filter(|a| a.devices.contains_key(&addr.device))
            .map(|a| a.lid.clone());
        if lid.is_some()
            && let Some(old) = st.online.insert(addr.clone(), out.clone())
        {
            // The same device logged in again: the older socket was replaced.
            let _ = old.send(Out::Node(stream_error_conflict("replaced")));
            let _ = old.send(Out::Drop);
        }
        lid
    };
    let Some(lid) = lid else {
        let _ = out.send(Out::Node(
            NodeBuilder::new("failure").attr("reason", "401").build(),
        ));
        let _ = out.send(Out::Drop);
        return;
    };
    let lid_jid = if addr.device == 0 {
        format!("{lid}@lid")
    } else {
        format!("{lid}:{}@lid", addr.device)
    };
    let _ = out.send(Out::Node(
        NodeBuilder::new("success")
            .attr("t", now().to_string())
            .attr("lid", lid_jid)
            .build(),
    ));
    tracing::debug!(user = %addr.user, device = addr.device, "wanet: logged in");
    while let Some(node) = rx.recv().await {
        tracing::debug!(user = %addr.user, device = addr.device, stanza = %summary(&node), "wanet <-");
        match node.tag.as_ref() {
            "iq" => {
                let kind = attr(&node, "type").unwrap_or_default();
                if kind == "get" || kind == "set" {
                    let passive = iq::is_passive_active(&node);
                    if let Some(reply) = iq::answer(&server, &addr, &node) {
                        let _ = out.send(Out::Node(reply));
                    }
                    if passive {
                        flush_pending(&server, &addr, &out);
                    }
                }
            }
            "message" => relay::message(&server, &addr, &node),
            "receipt" => relay::receipt(&server, &addr, &node),
            "ack" => relay::ack(&server, &addr, &node),
            "notification" => relay::notification(&server, &addr, &node),
            _ => {}
        }
    }
    let mut st = server.state();
    if st.online.get(&addr).is_some_and(|o| o.same_channel(&out)) {
        st.online.remove(&addr);
    }
}

/// After the client went active: everything still waiting for it (marked offline), then the
/// end-of-offline marker the client waits for before it sends anything.
fn flush_pending(server: &Server, addr: &Addr, out: &UnboundedSender<Out>) {
    let queued = server
        .state()
        .pending
        .get(addr)
        .cloned()
        .unwrap_or_default();
    let count = queued.len();
    for q in queued {
        let mut node = q.node;
        node.attrs.insert("offline", "1");
        let _ = out.send(Out::Node(node));
    }
    let _ = out.send(Out::Node(
        NodeBuilder::new("ib")
            .attr("from", SERVER)
            .children([NodeBuilder::new("offline")
                .attr("count", count.to_string())
                .build()])
            .build(),
    ));
}

/// `<stream:error><conflict type=…/></stream:error>`.
pub(crate) fn stream_error_conflict(kind: &str) -> Node {
    NodeBuilder::new("stream:error")
        .children([NodeBuilder::new("conflict")
            .attr("type", kind.to_owned())
            .build()])
        .build()
}

/// A stanza's shape for debug logs: tag, type/xmlns and first child (never content).
fn summary(node: &Node) -> String {
    let first = crate::node::children(node)
        .first()
        .map(|c| c.tag.to_string())
        .unwrap_or_default();
    format!(
        "{} {} {} {} {}",
        node.tag,
        attr(node, "type").unwrap_or_default(),
        attr(node, "xmlns").unwrap_or_default(),
        first,
        attr(node, "error")
            .map(|e| format!("error={e}"))
            .unwrap_or_default()
    )
}
