//! Answers to the IQs a client sends: keepalive, passive, prekeys (upload, count, digest, fetch),
//! props, blocklist, privacy, usync (devices, LIDs), app state (every collection "409": nothing
//! to sync), media hosts, companion removal, groups (`groups`). Anything else gets an empty `result`, so a client
//! never waits out a timeout on something this network does not model.

use whatsapp_rust::NodeBuilder;
use whatsapp_rust::wacore_binary::Node;
use whatsapp_rust::waproto::buffa::Message as _;
use whatsapp_rust::waproto::whatsapp as wa;

use super::Server;
use super::state::{Addr, Prekeys, State};
use crate::node::{attr, child, child_bytes, children, error, jid, now, result};

/// Whether this is the `<active/>` passive IQ after which the offline queue is flushed.
pub(crate) fn is_passive_active(iq: &Node) -> bool {
    attr(iq, "xmlns").as_deref() == Some("passive") && child(iq, "active").is_some()
}

/// The answer to `iq` from `from`, if it takes one.
pub(crate) fn answer(server: &Server, from: &Addr, iq: &Node) -> Option<Node> {
    let xmlns = attr(iq, "xmlns").unwrap_or_default();
    let mut st = server.state();
    Some(match xmlns.as_str() {
        "encrypt" => encrypt(&mut st, from, iq),
        "abt" => result(
            iq,
            vec![
                NodeBuilder::new("props")
                    .attr("protocol", "1")
                    .attr("hash", "wanet")
                    .build(),
            ],
        ),
        "blocklist" => result(iq, vec![NodeBuilder::new("list").build()]),
        "privacy" => result(iq, vec![NodeBuilder::new("privacy").build()]),
        "usync" => usync(&st, iq),
        "w:sync:app:state" => app_state(iq),
        "w:m" => media_conn(server, iq),
        "md" => md(&mut st, from, iq),
        "w:g2" => super::groups::answer(&mut st, from, iq),
        _ => result(iq, vec![]),
    })
}

/// `encrypt`: prekey upload, count, digest and bundle fetch.
fn encrypt(st: &mut State, from: &Addr, iq: &Node) -> Node {
    if let Some(reg) = child_bytes(iq, "registration") {
        let signed = child(iq, "skey").map(|s| {
            (
                child_bytes(s, "id").unwrap_or_default().to_vec(),
                child_bytes(s, "value").unwrap_or_default().to_vec(),
                child_bytes(s, "signature").unwrap_or_default().to_vec(),
            )
        });
        let one_time = child(iq, "list")
            .map(|l| {
                children(l)
                    .iter()
                    .map(|k| {
                        (
                            child_bytes(k, "id").unwrap_or_default().to_vec(),
                            child_bytes(k, "value").unwrap_or_default().to_vec(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let keys = Prekeys {
            registration: reg.to_vec(),
            identity: child_bytes(iq, "identity").unwrap_or_default().to_vec(),
            signed: signed.unwrap_or_default(),
            one_time,
        };
        if let Some(d) = st
            .accounts
            .get_mut(&from.user)
            .and_then(|a| a.devices.get_mut(&from.device))
        {
            d.keys = Some(keys);
        }
        return result(iq, vec![]);
    }
    if child(iq, "count").is_some() {
        let n = st
            .accounts
            .get(&from.user)
            .and_then(|a| a.devices.get(&from.device))
            .and_then(|d| d.keys.as_ref())
            .map_or(0, |k| k.one_time.len());
        return result(
            iq,
            vec![
                NodeBuilder::new("count")
                    .attr("value", n.to_string())
                    .build(),
            ],
        );
    }
    if let Some(key) = child(iq, "key") {
        let users = children(key)
            .iter()
            .filter_map(|u| bundle(st, u))
            .collect::<Vec<_>>();
        return result(iq, vec![NodeBuilder::new("list").children(users).build()]);
    }
    // `digest` and anything else: an empty result (never 404, which forces a re-upload).
    result(iq, vec![])
}

/// One device's prekey bundle, echoing the JID it was asked for.
fn bundle(st: &mut State, user: &Node) -> Option<Node> {
    let asked = attr(user, "jid")?;
    let j = jid(user, "jid")?;
    let addr = st.addr_of(&j);
    let device = addr.and_then(|a| {
        st.accounts
            .get_mut(&a.user)
            .and_then(|acc| acc.devices.get_mut(&a.device))
    });
    let Some(device) = device.filter(|d| d.keys.is_some()) else {
        return Some(
            NodeBuilder::new("user")
                .attr("jid", asked)
                .children([NodeBuilder::new("error").attr("code", "404").build()])
                .build(),
        );
    };
    let identity_blob = device.identity_blob.clone();
    let keys = device.keys.as_mut()?;
    let (sid, sval, ssig) = keys.signed.clone();
    let mut kids = vec![
        NodeBuilder::new("registration")
            .bytes(keys.registration.clone())
            .build(),
        NodeBuilder::new("type").bytes(vec![5]).build(),
        NodeBuilder::new("identity")
            .bytes(keys.identity.clone())
            .build(),
        NodeBuilder::new("skey")
            .children([
                NodeBuilder::new("id").bytes(sid).build(),
                NodeBuilder::new("value").bytes(sval).build(),
                NodeBuilder::new("signature").bytes(ssig).build(),
            ])
            .build(),
    ];
    if let Some((id, value)) = keys.one_time.pop_front() {
        kids.push(
            NodeBuilder::new("key")
                .children([
                    NodeBuilder::new("id").bytes(id).build(),
                    NodeBuilder::new("value").bytes(value).build(),
                ])
                .build(),
        );
    }
    if let Some(blob) = identity_blob {
        kids.push(NodeBuilder::new("device-identity").bytes(blob).build());
    }
    Some(
        NodeBuilder::new("user")
            .attr("jid", asked)
            .children(kids)
            .build(),
    )
}

/// `usync`: each asked user's devices (with the key-index list companions need) and LID.
fn usync(st: &State, iq: &Node) -> Node {
    let Some(us) = child(iq, "usync") else {
        return error(iq, 400, "bad-request");
    };
    let query = child(us, "query");
    let wants = |tag: &str| query.and_then(|q| child(q, tag)).is_some();
    let users = child(us, "list").map(children).unwrap_or_default();
    let mut out = Vec::new();
    for u in users {
        let Some(asked) = attr(u, "jid") else {
            continue;
        };
        let Some(pn) = jid(u, "jid").and_then(|j| st.owner_of(&j.user)) else {
            continue;
        };
        let account = &st.accounts[&pn];
        let mut kids = Vec::new();
        if wants("devices") {
            kids.push(devices_node(account));
        }
        if wants("lid") {
            kids.push(
                NodeBuilder::new("lid")
                    .attr("val", format!("{}@lid", account.lid))
                    .build(),
            );
        }
        if wants("contact") {
            kids.push(
                NodeBuilder::new("contact")
                    .attr("type", "in")
                    .string_content(format!("{pn}@s.whatsapp.net"))
                    .build(),
            );
        }
        out.push(
            NodeBuilder::new("user")
                .attr("jid", asked)
                .children(kids)
                .build(),
        );
    }
    result(
        iq,
        vec![
            NodeBuilder::new("usync")
                .children([NodeBuilder::new("list").children(out).build()])
                .build(),
        ],
    )
}

/// An account's `<devices>`: the phone, each companion with its key index, and the key-index
/// list naming them.
pub(crate) fn devices_node(account: &super::state::Account) -> Node {
    let list = account
        .devices
        .iter()
        .map(|(id, d)| {
            let b = NodeBuilder::new("device").attr("id", id.to_string());
            if *id == 0 {
                b.build()
            } else {
                b.attr("key-index", d.key_index.to_string()).build()
            }
        })
        .collect::<Vec<_>>();
    NodeBuilder::new("devices")
        .children([
            NodeBuilder::new("device-list").children(list).build(),
            key_index_list(account),
        ])
        .build()
}

/// The account's key-index list: which companions it vouches for (unsigned: clients do not check
/// its signature).
pub(crate) fn key_index_list(account: &super::state::Account) -> Node {
    let indexes: Vec<u32> = account
        .devices
        .iter()
        .filter(|(id, _)| **id != 0)
        .map(|(_, d)| d.key_index)
        .collect();
    let ts = now();
    let details = wa::ADVKeyIndexList {
        raw_id: Some(1),
        timestamp: Some(ts),
        current_index: Some(indexes.iter().copied().max().unwrap_or(0)),
        valid_indexes: indexes,
        ..Default::default()
    }
    .encode_to_vec();
    let signed = wa::ADVSignedKeyIndexList {
        details: Some(details),
        account_signature: Some(vec![0; 64]),
        ..Default::default()
    }
    .encode_to_vec();
    NodeBuilder::new("key-index-list")
        .attr("ts", ts.to_string())
        .bytes(signed)
        .build()
}

/// App-state sync: every collection answers "conflict, nothing more" (409), which the client
/// takes as synced.
fn app_state(iq: &Node) -> Node {
    let cols = child(iq, "sync")
        .map(children)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| attr(c, "name"))
        .map(|name| {
            NodeBuilder::new("collection")
                .attr("name", name)
                .attr("type", "error")
                .children([NodeBuilder::new("error").attr("code", "409").build()])
                .build()
        })
        .collect::<Vec<_>>();
    result(iq, vec![NodeBuilder::new("sync").children(cols).build()])
}

/// `media_conn`: one host, this server (the client's HTTP is routed here).
fn media_conn(server: &Server, iq: &Node) -> Node {
    result(
        iq,
        vec![
            NodeBuilder::new("media_conn")
                .attr("auth", "wanet")
                .attr("ttl", "3600")
                .children([NodeBuilder::new("host")
                    .attr("hostname", server.addr().to_string())
                    .build()])
                .build(),
        ],
    )
}

/// `md`: a companion removing itself (logout).
fn md(st: &mut State, from: &Addr, iq: &Node) -> Node {
    if let Some(rm) = child(iq, "remove-companion-device") {
        let target = jid(rm, "jid")
            .and_then(|j| st.addr_of(&j))
            .unwrap_or_else(|| from.clone());
        if target.device != 0
            && let Some(a) = st.accounts.get_mut(&target.user)
        {
            a.devices.remove(&target.device);
        }
        st.pending.remove(&target);
    }
    result(iq, vec![])
}
