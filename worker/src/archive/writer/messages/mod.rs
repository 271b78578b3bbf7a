//! Writing a chunk of messages in one transaction, set-based: a 2,000-message history page
//! costs a handful of statements, and a single live message takes the same path. Edits and
//! deletes update their targets (or are kept as messages when the target is not archived),
//! reactions are archived and folded into their targets, status messages become stories, and
//! excluded chats are never stored. Chat statistics come back as deltas for the writer to apply.

pub(crate) mod planned;
mod rows;
mod store;
mod targets;

use std::collections::{HashMap, HashSet};

use deadpool_postgres::GenericClient;
use wazap_shared::wire::MessageType;

pub(crate) use self::rows::Parsed;
use self::rows::{AttachmentRows, MessageRows, Owner, StoryRows, TargetUpdate, parse};
use super::chats::{self, ChatCache};
use super::stats::{ChatDelta, Deltas};
use crate::archive::ids::IdKey;
use crate::archive::jid::JidKind;
use crate::archive::model::{Inbound, IngestOutcome};

/// What one chunk needs besides its messages.
pub(crate) struct Ctx<'a> {
    /// Hashes opaque ids.
    pub(crate) key: &'a IdKey,
    /// The account written to.
    pub(crate) account: &'a str,
    /// The account's own canonical JIDs (for `mentions_me`).
    pub(crate) own: &'a [String],
    /// Chat ids the archive policy excludes.
    pub(crate) excluded: &'a HashSet<String>,
    /// Live delivery (counts unread) rather than history.
    pub(crate) live: bool,
    /// Chat id → the ids of chats merged into it (whose messages kept their ids).
    pub(crate) merged: &'a HashMap<String, Vec<String>>,
}

impl Ctx<'_> {
    /// Every id WhatsApp message `wa` of `chat_id` may be archived under: its own, and the
    /// one it got if it arrived before a merge.
    fn candidates(&self, chat_id: &str, wa: &str) -> Vec<String> {
        let mut out = vec![self.key.message_id(self.account, chat_id, wa)];
        if let Some(gone) = self.merged.get(chat_id) {
            out.extend(
                gone.iter()
                    .map(|g| self.key.message_id(self.account, g, wa)),
            );
        }
        out
    }
}

/// The result of a chunk.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// One per input message.
    pub(crate) outcomes: Vec<IngestOutcome>,
    /// The highest position stored, if any.
    pub(crate) max_position: Option<i64>,
    /// What the stored messages change in their chats.
    pub(crate) deltas: Deltas,
}

/// Write `messages` inside `tx`, taking positions from `next_position`.
pub(crate) async fn write(
    tx: &impl GenericClient,
    ctx: &Ctx<'_>,
    cache: &mut ChatCache,
    next_position: &mut i64,
    messages: &[Inbound],
) -> anyhow::Result<Written> {
    let parsed = parse_all(messages);
    let ids = chats::resolve(tx, ctx.key, cache, ctx.account, &wanted(&parsed)).await?;
    write_resolved(tx, ctx, &ids, &parsed, next_position, messages).await
}

/// The chat ids the archive policy excludes, as `tx` sees them.
pub(crate) async fn excluded_chats(tx: &impl GenericClient) -> anyhow::Result<HashSet<String>> {
    let stmt = tx
        .prepare_cached("select excluded_chats from archive_policy")
        .await?;
    Ok(tx
        .query_opt(&stmt, &[])
        .await?
        .map(|r| r.get::<_, Vec<String>>(0))
        .unwrap_or_default()
        .into_iter()
        .collect())
}

/// Each message's JIDs, parsed (`None`: not ones the archive understands).
pub(crate) fn parse_all(messages: &[Inbound]) -> Vec<Option<Parsed>> {
    messages.iter().map(parse).collect()
}

/// The canonical JIDs a chunk's messages need chat ids for (chats and group senders).
pub(crate) fn wanted(parsed: &[Option<Parsed>]) -> Vec<(&str, JidKind)> {
    let mut wanted: Vec<(&str, JidKind)> = Vec::new();
    for p in parsed.iter().flatten() {
        if p.chat.kind != JidKind::Status {
            wanted.push((&p.chat.canonical, p.chat.kind));
        }
        if let Some(s) = &p.sender {
            wanted.push((&s.canonical, JidKind::Direct));
        }
    }
    wanted
}

/// True when no message of the chunk reads or changes another archived message or a story
/// (edits, deletes and reactions with a target; status posts): such a chunk may be stored
/// beside another one in flight, as nothing in it depends on that one's rows.
pub(crate) fn independent(messages: &[Inbound], parsed: &[Option<Parsed>]) -> bool {
    messages.iter().zip(parsed).all(|(m, p)| {
        let story = p.as_ref().is_some_and(|p| p.chat.kind == JidKind::Status);
        !changes_another(m) && !story
    })
}

/// An edit, delete or reaction aimed at another message: applying it reads that message.
fn changes_another(m: &Inbound) -> bool {
    m.target_wa_id.as_deref().is_some_and(|t| !t.is_empty())
        && (m.edit || matches!(m.kind, MessageType::Deleted | MessageType::Reaction))
}

/// [`write`] with the chats already resolved (`ids`: canonical JID → chat id, covering
/// [`wanted`] of `parsed`).
pub(crate) async fn write_resolved(
    tx: &impl GenericClient,
    ctx: &Ctx<'_>,
    ids: &HashMap<String, String>,
    parsed: &[Option<Parsed>],
    next_position: &mut i64,
    messages: &[Inbound],
) -> anyhow::Result<Written> {
    let chat_of = |j: &crate::archive::jid::Jid| ids.get(&j.canonical).cloned();
    let merged_dups = merged_duplicates(tx, ctx, messages, parsed, ids).await?;

    let mut outcomes: Vec<Option<IngestOutcome>> = vec![None; messages.len()];
    let mut rows = MessageRows::default();
    let mut stories = StoryRows::default();
    let mut edits: Vec<TargetUpdate<'_>> = Vec::new();
    let mut deletes: Vec<TargetUpdate<'_>> = Vec::new();
    let mut reactions: Vec<usize> = Vec::new(); // rows
    for (i, (m, p)) in messages.iter().zip(parsed).enumerate() {
        let Some(p) = p else {
            outcomes[i] = Some(IngestOutcome::Invalid);
            continue;
        };
        let sender_chat = p.sender.as_ref().and_then(chat_of);
        if p.chat.kind == JidKind::Status {
            match (&p.sender, sender_chat) {
                (Some(_), Some(c)) if ctx.excluded.contains(&c) => {
                    outcomes[i] = Some(IngestOutcome::Excluded);
                }
                (Some(sender), Some(c)) => stories.push(ctx, i, m, sender, c),
                _ => outcomes[i] = Some(IngestOutcome::Invalid),
            }
            continue;
        }
        let Some(chat_id) = chat_of(&p.chat) else {
            outcomes[i] = Some(IngestOutcome::Invalid);
            continue;
        };
        if ctx.excluded.contains(&chat_id) {
            outcomes[i] = Some(IngestOutcome::Excluded);
            continue;
        }
        let target = m.target_wa_id.as_deref().filter(|t| !t.is_empty());
        if let Some(t) = target
            && (m.edit || m.kind == MessageType::Deleted)
        {
            let upd = TargetUpdate {
                input: i,
                chat_id,
                target_wa: t,
                ts: m.timestamp,
            };
            if m.edit {
                edits.push(upd);
            } else {
                deletes.push(upd);
            }
            continue;
        }
        if let Some(existing) = merged_dups.get(&i) {
            outcomes[i] = Some(IngestOutcome::Duplicate {
                message_id: existing.clone(),
            });
            continue;
        }
        if m.kind == MessageType::Reaction && target.is_some() {
            reactions.push(rows.len());
        }
        rows.push(ctx, next_position, i, m, p, chat_id, sender_chat, false);
    }

    let mut written = Written::default();
    let mut attachments = AttachmentRows::default();
    let stored = store::insert_messages(tx, ctx.account, &rows, ctx.live).await?;
    record(
        &rows,
        &stored,
        &mut outcomes,
        &mut written,
        &mut attachments,
        ctx.key,
        messages,
    );

    let new_stories = store::insert_stories(tx, ctx.account, &stories).await?;
    for (r, &i) in stories.input.iter().enumerate() {
        let new = new_stories.contains(&stories.story_id[r]);
        if new && let Some(a) = stories.attachment[r] {
            let owner = Owner {
                message_id: &stories.story_id[r],
                chat_id: &stories.sender_chat_id[r],
                story: true,
                kind: messages[i].kind,
                ts: messages[i].timestamp,
            };
            attachments.push(ctx.key, owner, a);
        }
        outcomes[i] = Some(IngestOutcome::Story {
            story_id: stories.story_id[r].clone(),
            new,
        });
    }

    // Edits and deletes whose target is not archived are kept as messages of their own.
    let mut orphans = MessageRows::default();
    for (updates, is_edit) in [(&edits, true), (&deletes, false)] {
        let applied = targets::apply_targets(tx, ctx, messages, updates, is_edit).await?;
        for (u, target) in updates.iter().zip(applied) {
            match target {
                Some(message_id) => outcomes[u.input] = Some(IngestOutcome::Applied { message_id }),
                None => {
                    let m = &messages[u.input];
                    let p = parsed[u.input].as_ref().expect("parsed above");
                    let sender_chat = p.sender.as_ref().and_then(chat_of);
                    orphans.push(
                        ctx,
                        next_position,
                        u.input,
                        m,
                        p,
                        u.chat_id.clone(),
                        sender_chat,
                        is_edit,
                    );
                }
            }
        }
    }
    let stored_orphans = store::insert_messages(tx, ctx.account, &orphans, ctx.live).await?;
    record(
        &orphans,
        &stored_orphans,
        &mut outcomes,
        &mut written,
        &mut attachments,
        ctx.key,
        messages,
    );
    store::insert_attachments(tx, ctx.account, &attachments).await?;
    targets::apply_reactions(tx, ctx, messages, &rows, &stored, &reactions).await?;

    written.deltas = deltas(
        ctx,
        messages,
        parsed,
        &[(&rows, &stored), (&orphans, &stored_orphans)],
        ids,
    );
    written.outcomes = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(IngestOutcome::Invalid))
        .collect();
    Ok(written)
}

/// Inputs already archived under the id of a chat since merged into theirs → that id.
async fn merged_duplicates(
    tx: &impl GenericClient,
    ctx: &Ctx<'_>,
    messages: &[Inbound],
    parsed: &[Option<Parsed>],
    ids: &HashMap<String, String>,
) -> anyhow::Result<HashMap<usize, String>> {
    if ctx.merged.is_empty() {
        return Ok(HashMap::new());
    }
    let mut alt: HashMap<String, usize> = HashMap::new();
    for (i, (m, p)) in messages.iter().zip(parsed).enumerate() {
        let Some(chat) = p.as_ref().and_then(|p| ids.get(&p.chat.canonical)) else {
            continue;
        };
        for g in ctx.merged.get(chat).into_iter().flatten() {
            alt.insert(ctx.key.message_id(ctx.account, g, &m.wa_id), i);
        }
    }
    let keys: Vec<String> = alt.keys().cloned().collect();
    let found = store::existing(tx, ctx.account, &keys).await?;
    Ok(found.into_iter().map(|id| (alt[&id], id)).collect())
}

/// Turn stored/duplicate rows into outcomes and queue the stored rows' attachments.
fn record<'m>(
    rows: &MessageRows<'m>,
    stored: &HashSet<i64>,
    outcomes: &mut [Option<IngestOutcome>],
    written: &mut Written,
    attachments: &mut AttachmentRows<'m>,
    key: &IdKey,
    messages: &[Inbound],
) {
    for r in 0..rows.len() {
        let i = rows.input[r];
        let position = rows.position[r];
        let message_id = rows.message_id[r].clone();
        if !stored.contains(&position) {
            outcomes[i] = Some(IngestOutcome::Duplicate { message_id });
            continue;
        }
        written.max_position = written.max_position.max(Some(position));
        if let Some(a) = rows.attachment[r] {
            let owner = Owner {
                message_id: &message_id,
                chat_id: &rows.chat_id[r],
                story: false,
                kind: messages[i].kind,
                ts: rows.ts[r],
            };
            attachments.push(key, owner, a);
        }
        outcomes[i] = Some(IngestOutcome::Stored {
            message_id,
            position,
        });
    }
}

/// What the stored rows change in their chats (latest time and position, unread count) and
/// in the senders' chats (push names).
fn deltas(
    ctx: &Ctx<'_>,
    messages: &[Inbound],
    parsed: &[Option<Parsed>],
    sets: &[(&MessageRows<'_>, &HashSet<i64>)],
    ids: &HashMap<String, String>,
) -> Deltas {
    let mut out = Deltas::new();
    for (rs, stored) in sets {
        for r in 0..rs.len() {
            if !stored.contains(&rs.position[r]) {
                continue;
            }
            let mut d = ChatDelta {
                ts: Some(rs.ts[r]),
                position: Some(rs.position[r]),
                ..ChatDelta::default()
            };
            if ctx.live && messages[rs.input[r]].kind != MessageType::Reaction {
                if rs.from_me[r] {
                    d.reset = true;
                } else {
                    d.unread = 1;
                }
            }
            merge_into(&mut out, &rs.chat_id[r], d);
        }
    }
    for (m, p) in messages.iter().zip(parsed) {
        let (Some(p), Some(name)) = (p, m.push_name.as_deref()) else {
            continue;
        };
        if m.from_me || name.trim().is_empty() {
            continue;
        }
        let person = match (&p.sender, p.chat.kind) {
            (Some(s), _) => &s.canonical,
            (None, JidKind::Direct) => &p.chat.canonical,
            _ => continue,
        };
        if let Some(chat) = ids.get(person) {
            let d = ChatDelta {
                push_name: Some(name.to_owned()),
                ..ChatDelta::default()
            };
            merge_into(&mut out, chat, d);
        }
    }
    out
}

fn merge_into(out: &mut Deltas, chat: &str, d: ChatDelta) {
    match out.get_mut(chat) {
        Some(e) => e.merge(d),
        None => {
            out.insert(chat.to_owned(), d);
        }
    }
}
