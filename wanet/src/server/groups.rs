//! Groups: create, query, the account's groups, add, remove and subject (`w:g2` IQs), each change
//! told to every member device as a `w:gp2` notification, and the members a group message fans
//! out to. Groups use phone-number addressing; admins are the creator only.

use whatsapp_rust::NodeBuilder;
use whatsapp_rust::wacore_binary::Node;

use super::relay::device_jid;
use super::state::{Addr, State};
use crate::node::{attr, child, children, error, jid, now, result};

/// One group.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) subject: String,
    /// The creator's phone number (the only admin).
    pub(crate) creator: String,
    pub(crate) creation: u64,
    /// Members' phone numbers, in the order they joined.
    pub(crate) members: Vec<String>,
}

/// The answer to a `w:g2` IQ from `from`.
pub(crate) fn answer(st: &mut State, from: &Addr, iq: &Node) -> Node {
    if child(iq, "participating").is_some() {
        let mine = st
            .groups
            .iter()
            .filter(|(_, g)| g.members.contains(&from.user))
            .map(|(id, g)| group_node(id, g))
            .collect::<Vec<_>>();
        return result(iq, vec![NodeBuilder::new("groups").children(mine).build()]);
    }
    if let Some(create) = child(iq, "create") {
        return self::create(st, from, iq, create);
    }
    let Some(id) = jid(iq, "to")
        .filter(|j| j.server.as_str() == "g.us")
        .map(|j| j.user.to_string())
    else {
        return error(iq, 400, "bad-request");
    };
    let Some(group) = st.groups.get(&id).cloned() else {
        return error(iq, 404, "item-not-found");
    };
    if child(iq, "query").is_some() {
        return result(iq, vec![group_node(&id, &group)]);
    }
    if !group.members.contains(&from.user) {
        return error(iq, 403, "forbidden");
    }
    for tag in ["add", "remove"] {
        if let Some(change) = child(iq, tag) {
            return members(st, from, iq, &id, tag, change);
        }
    }
    if let Some(subject) = child(iq, "subject") {
        let text = crate::node::bytes(subject)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let t = now().to_string();
        if let Some(g) = st.groups.get_mut(&id) {
            g.subject.clone_from(&text);
        }
        let action = NodeBuilder::new("subject")
            .attr("subject", text)
            .attr("s_o", format!("{}@s.whatsapp.net", from.user))
            .attr("s_t", t)
            .build();
        notify(st, from, &id, &group.members, action);
        return result(iq, vec![]);
    }
    error(iq, 400, "bad-request")
}

/// `<create subject=…><participant jid=…/>…</create>`: a new group of the creator and the named
/// accounts, answered with its `<group>` and told to the other members.
fn create(st: &mut State, from: &Addr, iq: &Node, create: &Node) -> Node {
    st.next_group += 1;
    let id = format!("1203630000{:08}", st.next_group);
    let mut members = vec![from.user.clone()];
    for p in children(create).iter().filter(|p| p.tag == "participant") {
        if let Some(user) = jid(p, "jid").and_then(|j| st.owner_of(&j.user))
            && !members.contains(&user)
        {
            members.push(user);
        }
    }
    let group = Group {
        subject: attr(create, "subject").unwrap_or_default(),
        creator: from.user.clone(),
        creation: now(),
        members: members.clone(),
    };
    let node = group_node(&id, &group);
    st.groups.insert(id.clone(), group);
    let action = NodeBuilder::new("create").children([node.clone()]).build();
    notify(st, from, &id, &members, action);
    result(iq, vec![node])
}

/// `<add>` / `<remove>` of `<participant jid=…/>`: each known account added or removed, answered
/// per participant (404 for an unknown number), then told to the members before the change and
/// the added ones.
fn members(
    st: &mut State,
    from: &Addr,
    iq: &Node,
    id: &str,
    tag: &'static str,
    change: &Node,
) -> Node {
    let before = st.groups[id].members.clone();
    let mut answers = Vec::new();
    let mut changed = Vec::new();
    for p in children(change).iter().filter(|p| p.tag == "participant") {
        let Some(asked) = attr(p, "jid") else {
            continue;
        };
        let user = jid(p, "jid").and_then(|j| st.owner_of(&j.user));
        let ok = match (&user, tag) {
            (Some(u), "add") => !before.contains(u),
            (Some(u), _) => before.contains(u),
            (None, _) => false,
        };
        let mut b = NodeBuilder::new("participant").attr("jid", asked);
        if let (true, Some(u)) = (ok, user) {
            changed.push(u);
        } else {
            b = b.attr("error", if tag == "add" { "409" } else { "404" });
        }
        answers.push(b.build());
    }
    if !changed.is_empty() {
        let g = st.groups.get_mut(id).expect("the group exists");
        if tag == "add" {
            g.members.extend(changed.iter().cloned());
        } else {
            g.members.retain(|m| !changed.contains(m));
        }
        let told: Vec<String> = before.iter().chain(&changed).cloned().collect();
        let action = NodeBuilder::new(tag)
            .children(changed.iter().map(|u| {
                NodeBuilder::new("participant")
                    .attr("jid", format!("{u}@s.whatsapp.net"))
                    .build()
            }))
            .build();
        notify(st, from, id, &told, action);
    }
    result(iq, vec![NodeBuilder::new(tag).children(answers).build()])
}

/// A group's `<group>`: subject, creator, members (the creator a super admin).
fn group_node(id: &str, g: &Group) -> Node {
    NodeBuilder::new("group")
        .attr("id", id.to_owned())
        .attr("subject", g.subject.clone())
        .attr("creator", format!("{}@s.whatsapp.net", g.creator))
        .attr("creation", g.creation.to_string())
        .attr("s_t", g.creation.to_string())
        .attr("s_o", format!("{}@s.whatsapp.net", g.creator))
        .attr("addressing_mode", "pn")
        .attr("size", g.members.len().to_string())
        .children(g.members.iter().map(|m| {
            let b = NodeBuilder::new("participant").attr("jid", format!("{m}@s.whatsapp.net"));
            if *m == g.creator {
                b.attr("type", "superadmin").build()
            } else {
                b.build()
            }
        }))
        .build()
}

/// Tell every device of `members` except the acting one about `action` in group `id`.
fn notify(st: &mut State, actor: &Addr, id: &str, members: &[String], action: Node) {
    let t = now().to_string();
    let nid = st.id();
    let push_name = st
        .accounts
        .get(&actor.user)
        .map(|a| a.push_name.clone())
        .unwrap_or_default();
    let node = NodeBuilder::new("notification")
        .attr("from", format!("{id}@g.us"))
        .attr("type", "w:gp2")
        .attr("id", nid.clone())
        .attr("t", t)
        .attr(
            "participant",
            device_jid(&Addr {
                user: actor.user.clone(),
                device: 0,
            }),
        )
        .attr("notify", push_name)
        .children([action])
        .build();
    for to in devices(st, members) {
        if &to != actor {
            st.deliver(&to, nid.clone(), "notification", node.clone());
        }
    }
}

/// Every device of the accounts `members`.
pub(crate) fn devices(st: &State, members: &[String]) -> Vec<Addr> {
    members
        .iter()
        .filter_map(|m| st.accounts.get(m).map(|a| (m, a)))
        .flat_map(|(m, a)| {
            a.devices.keys().map(|d| Addr {
                user: m.clone(),
                device: *d,
            })
        })
        .collect()
}
