//! Group notifications (members added, removed or leaving, admins, subject, description,
//! settings) as `system` messages in the group's chat, written in words: people appear by the
//! name the archive knows for them (phonebook or push name) or as "someone", never by phone
//! number. The actor is the message's sender; the people acted on are its mentions, so "… added
//! you" counts as addressed to the account. Each notification action gets a stable id, so a
//! redelivered notification is dropped as a duplicate.

use std::collections::HashMap;

use deadpool_postgres::Pool;
use wazap_shared::wire::MessageType;
use whatsapp_rust::Jid;
use whatsapp_rust::types::events::GroupUpdate;
use whatsapp_rust::wacore::stanza::groups::{
    GroupNotificationAction as Action, GroupParticipantInfo,
};

use super::people::{self, Linked};
use crate::archive::jid::Jid as ArchiveJid;
use crate::archive::{Archive, Inbound, IngestOutcome};

/// The prefix of the WhatsApp ids the connector makes up for group notifications (real ids
/// never contain `-`; on-demand history never anchors on these).
pub const SYNTHETIC_ID_PREFIX: &str = "wazap-";

/// Archive one group notification action as a `system` message; `own` are the account's own
/// JIDs. Members' phone ↔ LID pairs are linked first. `None` for actions that say nothing a
/// reader needs (forwarding limits, community plumbing, unknown tags).
pub async fn archive_event(
    archive: &Archive,
    pool: &Pool,
    linked: &Linked,
    account: &str,
    own: &[String],
    update: &GroupUpdate,
) -> anyhow::Result<Option<IngestOutcome>> {
    let mut pairs = Vec::new();
    if let Some(p) = update.participant.as_ref() {
        pairs.extend(people::from_member(p, update.participant_pn.as_ref()));
    }
    for p in participants(&update.action) {
        pairs.extend(people::from_member(
            &p.jid,
            p.phone_number.as_ref().or(p.lid.as_ref()),
        ));
    }
    linked.link(archive, account, pairs).await?;
    let mut wanted: Vec<String> = Vec::new();
    wanted.extend(update.participant.iter().map(Jid::to_non_ad_string));
    for p in participants(&update.action) {
        wanted.extend(forms(p));
    }
    let names = names(pool, account, &wanted).await?;
    let Some(m) = system_message(update, own, &names) else {
        return Ok(None);
    };
    Ok(Some(archive.ingest_live(account, m).await?))
}

/// The archive's names for `jids` (canonical JID → phonebook name, else push name).
pub async fn names(
    pool: &Pool,
    account: &str,
    jids: &[String],
) -> anyhow::Result<HashMap<String, String>> {
    let canon: Vec<String> = jids
        .iter()
        .filter_map(|j| ArchiveJid::parse(j).map(|j| j.canonical))
        .collect();
    if canon.is_empty() {
        return Ok(HashMap::new());
    }
    let db = pool.get().await?;
    let rows = db
        .query(
            "select a.jid, coalesce(c.name, c.push_name)
               from chat_aliases a
               join chats c on c.account_id = a.account_id and c.chat_id = a.chat_id
              where a.account_id = $1 and a.jid = any($2)
                and coalesce(c.name, c.push_name) is not null",
            &[&account, &canon],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The `system` message for one action, given the names known and the account's own JIDs.
pub fn system_message(
    update: &GroupUpdate,
    own: &[String],
    names: &HashMap<String, String>,
) -> Option<Inbound> {
    let is_own = |forms: &[String]| forms.iter().any(|f| own.contains(f));
    let actor_forms: Vec<String> = [update.participant.as_ref(), update.participant_pn.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|j| canonical(&j.to_non_ad_string()))
        .collect();
    let from_me = is_own(&actor_forms);
    let actor_name = if from_me {
        "You".to_owned()
    } else {
        actor_forms
            .iter()
            .find_map(|f| names.get(f).filter(|n| usable(n)).cloned())
            .or_else(|| update.notify.clone().filter(|n| usable(n)))
            .unwrap_or_else(|| "Someone".to_owned())
    };
    let members = participants(&update.action);
    let member_forms: Vec<Vec<String>> = members
        .iter()
        .map(|p| forms(p).iter().filter_map(|f| canonical(f)).collect())
        .collect();
    let who: Vec<Option<String>> = members
        .iter()
        .zip(&member_forms)
        .map(|(p, f)| {
            if is_own(f) {
                Some("you".to_owned())
            } else {
                f.iter()
                    .find_map(|f| names.get(f).filter(|n| usable(n)).cloned())
                    .or_else(|| p.display_name.clone().filter(|n| usable(n)))
            }
        })
        .collect();
    let list = listing(&who);
    // The actor acting on themself (joining, leaving) or no actor at all.
    let self_acting = actor_forms.is_empty()
        || (member_forms.len() == 1 && member_forms[0].iter().any(|f| actor_forms.contains(f)));
    let a = actor_name;
    let text = match &update.action {
        Action::Add { .. } if self_acting => format!("{} joined", capital(&list)),
        Action::Add { .. } => format!("{a} added {list}"),
        Action::Remove { .. } if self_acting => format!("{} left", capital(&list)),
        Action::Remove { .. } => format!("{a} removed {list}"),
        Action::Promote { .. } => format!("{a} made {list} an admin"),
        Action::Demote { .. } => format!("{a} dismissed {list} as an admin"),
        Action::Modify { .. } => format!("{} changed their phone number", capital(&list)),
        Action::Subject { subject, .. } => format!("{a} changed the group name to “{subject}”"),
        Action::Description {
            description: Some(d),
            ..
        } => {
            format!("{a} changed the group description: {d}")
        }
        Action::Description {
            description: None, ..
        } => {
            format!("{a} deleted the group description")
        }
        Action::Locked { .. } => format!("{a} allowed only admins to edit the group info"),
        Action::Unlocked => format!("{a} allowed all members to edit the group info"),
        Action::Announce => format!("{a} allowed only admins to send messages"),
        Action::NotAnnounce => format!("{a} allowed all members to send messages"),
        Action::Ephemeral { expiration: 0, .. } => format!("{a} turned off disappearing messages"),
        Action::Ephemeral { expiration, .. } => {
            format!(
                "{a} turned on disappearing messages ({})",
                duration(*expiration)
            )
        }
        Action::MembershipApprovalMode { enabled } => format!(
            "{a} turned {} admin approval to join",
            if *enabled { "on" } else { "off" }
        ),
        Action::MembershipApprovalRequest { .. } => format!("{a} asked to join"),
        Action::MemberAddMode { mode } if mode == "admin_add" => {
            format!("{a} allowed only admins to add members")
        }
        Action::MemberAddMode { mode } if mode == "all_member_add" => {
            format!("{a} allowed all members to add members")
        }
        Action::Invite { .. } => format!("{a} joined using an invite link"),
        Action::RevokeInvite => format!("{a} reset the invite link"),
        Action::Create { .. } => format!("{a} created the group"),
        Action::Delete { .. } => format!("{a} deleted the group"),
        Action::Suspended => "The group was suspended".to_owned(),
        Action::Unsuspended => "The group is no longer suspended".to_owned(),
        _ => return None,
    };
    let id = match update.notification_id.as_deref().filter(|i| !i.is_empty()) {
        Some(n) => format!("{SYNTHETIC_ID_PREFIX}gn-{n}-{}", update.action_index),
        None => format!(
            "{SYNTHETIC_ID_PREFIX}gn-{}-{}-{}",
            update.timestamp.timestamp(),
            update.action_index,
            update.action.tag_name()
        ),
    };
    let sender = if from_me {
        None
    } else {
        update
            .participant_pn
            .as_ref()
            .or(update.participant.as_ref())
            .map(Jid::to_non_ad_string)
    };
    Some(Inbound {
        chat_jid: update.group_jid.to_non_ad_string(),
        wa_id: id,
        push_name: sender
            .as_ref()
            .and_then(|_| update.notify.clone().filter(|n| usable(n))),
        sender_jid: sender,
        from_me,
        timestamp: update.timestamp,
        kind: MessageType::System,
        text,
        target_wa_id: None,
        edit: false,
        mentions: member_forms.into_iter().flatten().collect(),
        attachment: None,
    })
}

/// The people an action is about.
fn participants(action: &Action) -> &[GroupParticipantInfo] {
    match action {
        Action::Add { participants, .. }
        | Action::Remove { participants, .. }
        | Action::Promote { participants }
        | Action::Demote { participants }
        | Action::Modify { participants } => participants,
        _ => &[],
    }
}

/// Every address a member record gives.
fn forms(p: &GroupParticipantInfo) -> Vec<String> {
    [Some(&p.jid), p.phone_number.as_ref(), p.lid.as_ref()]
        .into_iter()
        .flatten()
        .map(Jid::to_non_ad_string)
        .collect()
}

fn canonical(jid: &str) -> Option<String> {
    ArchiveJid::parse(jid).map(|j| j.canonical)
}

/// A name fit for the text: not empty and not a phone number (WhatsApp renders strangers as a
/// masked number, e.g. `+55∙∙∙∙∙∙∙79`).
fn usable(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty()
        && !name.starts_with('+')
        && name.chars().filter(char::is_ascii_digit).count() < 5
}

/// "Alice", "Alice and Bob", "Alice, Bob and 2 others"; "someone" / "3 people" for the unnamed.
fn listing(who: &[Option<String>]) -> String {
    let known: Vec<&str> = who.iter().flatten().map(String::as_str).collect();
    let unknown = who.len() - known.len();
    let mut parts: Vec<String> = known.iter().map(|s| (*s).to_owned()).collect();
    match (known.is_empty(), unknown) {
        (_, 0) => {}
        (true, 1) => parts.push("someone".to_owned()),
        (true, n) => parts.push(format!("{n} people")),
        (false, 1) => parts.push("one other".to_owned()),
        (false, n) => parts.push(format!("{n} others")),
    }
    match parts.len() {
        0 => "someone".to_owned(),
        1 => parts.remove(0),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A disappearing-messages timer in words.
fn duration(secs: u32) -> String {
    match secs {
        s if s % 86_400 == 0 => match s / 86_400 {
            1 => "24 hours".to_owned(),
            d => format!("{d} days"),
        },
        s if s % 3_600 == 0 => format!("{} hours", s / 3_600),
        s => format!("{s} seconds"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_names_and_counts_the_unnamed() {
        let n = |s: &str| Some(s.to_owned());
        assert_eq!(listing(&[n("Alice")]), "Alice");
        assert_eq!(listing(&[n("Alice"), n("Bob")]), "Alice and Bob");
        assert_eq!(listing(&[n("Alice"), None, None]), "Alice and 2 others");
        assert_eq!(listing(&[None]), "someone");
        assert_eq!(listing(&[None, None, None]), "3 people");
        assert_eq!(listing(&[n("A"), n("B"), n("C")]), "A, B and C");
    }

    #[test]
    fn phone_numbers_are_not_names() {
        assert!(usable("Alice"));
        assert!(!usable("+55∙∙∙∙∙∙∙∙∙79"));
        assert!(!usable("972501234567"));
        assert!(!usable(" "));
        assert_eq!(duration(86_400), "24 hours");
        assert_eq!(duration(7 * 86_400), "7 days");
    }
}
