//! Messages that act on other messages: edits and deletes change their target (the latest per
//! target wins), reactions fold into their target's `reactions`. A target may be archived under
//! the id it had before its chat was merged, so every candidate id is tried.

use std::collections::{HashMap, HashSet};

use deadpool_postgres::GenericClient;

use super::rows::{MessageRows, TargetUpdate};
use super::{Ctx, store};
use crate::archive::model::Inbound;
use crate::archive::private::has_private_tag;
use crate::archive::vector::SearchVector;

/// Apply edits or deletes to their targets, the latest per target winning. Returns, per
/// update, the target's id when it is archived.
pub(super) async fn apply_targets(
    tx: &impl GenericClient,
    ctx: &Ctx<'_>,
    messages: &[Inbound],
    updates: &[TargetUpdate<'_>],
    is_edit: bool,
) -> anyhow::Result<Vec<Option<String>>> {
    if updates.is_empty() {
        return Ok(Vec::new());
    }
    let mut latest: HashMap<(&str, &str), usize> = HashMap::new();
    for (k, u) in updates.iter().enumerate() {
        let e = latest.entry((u.chat_id.as_str(), u.target_wa)).or_insert(k);
        if u.ts >= updates[*e].ts {
            *e = k;
        }
    }
    let winners: Vec<usize> = latest.values().copied().collect();
    let candidates: Vec<Vec<String>> = winners
        .iter()
        .map(|&k| ctx.candidates(&updates[k].chat_id, updates[k].target_wa))
        .collect();
    let all: Vec<String> = candidates.iter().flatten().cloned().collect();
    let found = if is_edit {
        let (mut text, mut private, mut words) = (Vec::new(), Vec::new(), Vec::new());
        for (w, c) in winners.iter().zip(&candidates) {
            let t = messages[updates[*w].input].text.as_str();
            for _ in c {
                text.push(t);
                let p = has_private_tag(t);
                private.push(p);
                words.push(if p { None } else { SearchVector::of_text(t) });
            }
        }
        store::edit(tx, ctx.account, &all, &text, &private, &words).await?
    } else {
        store::delete(tx, ctx.account, &all).await?
    };
    let by = store::by_candidate(&candidates);
    let mut target_of: HashMap<(&str, &str), String> = HashMap::new();
    for id in &found {
        if let Some(&c) = by.get(id.as_str()) {
            let u = &updates[winners[c]];
            target_of.insert((u.chat_id.as_str(), u.target_wa), id.clone());
        }
    }
    Ok(updates
        .iter()
        .map(|u| target_of.get(&(u.chat_id.as_str(), u.target_wa)).cloned())
        .collect())
}

/// Fold newly stored reactions into their targets (one per sender, the latest winning; an
/// empty emoji removes the sender's reaction).
pub(super) async fn apply_reactions(
    tx: &impl GenericClient,
    ctx: &Ctx<'_>,
    messages: &[Inbound],
    rows: &MessageRows<'_>,
    stored: &HashSet<i64>,
    reactions: &[usize],
) -> anyhow::Result<()> {
    // (chat, target) → [(sender, emoji, time)].
    type Senders<'a> = Vec<(String, &'a str, chrono::DateTime<chrono::Utc>)>;
    let mut per_target: HashMap<(&str, &str), Senders<'_>> = HashMap::new();
    for &r in reactions {
        if !stored.contains(&rows.position[r]) {
            continue;
        }
        let Some(target) = messages[rows.input[r]].target_wa_id.as_deref() else {
            continue;
        };
        let sender = match (&rows.sender_chat_id[r], rows.from_me[r]) {
            (_, true) => "me".to_owned(),
            (Some(c), false) => c.clone(),
            (None, false) => rows.sender_jid[r].clone().unwrap_or_default(),
        };
        let v = per_target
            .entry((rows.chat_id[r].as_str(), target))
            .or_default();
        match v.iter_mut().find(|(s, _, _)| *s == sender) {
            Some(e) if rows.ts[r] >= e.2 => {
                e.1 = rows.text[r];
                e.2 = rows.ts[r];
            }
            Some(_) => {}
            None => v.push((sender, rows.text[r], rows.ts[r])),
        }
    }
    let (mut ids, mut changes) = (Vec::new(), Vec::new());
    for ((chat, target), v) in per_target {
        let change = serde_json::Value::Array(
            v.into_iter()
                .map(|(s, e, _)| serde_json::json!({"sender": s, "emoji": e}))
                .collect(),
        );
        for id in ctx.candidates(chat, target) {
            ids.push(id);
            changes.push(change.clone());
        }
    }
    store::react(tx, ctx.account, &ids, &changes).await
}
