//! Two writer operations beside plain ingest. [`Writer::link`] records that a phone-number JID
//! and a LID are one person, with no name needed (WhatsApp says so in history blobs, in a
//! message's alternate sender address and in group member lists), so both forms resolve to one
//! chat; two chats that already exist are merged as a named contact would merge them.
//! [`Writer::replace`] swaps an undecryptable message's placeholder for the message the phone
//! resent under the same id: the message keeps its `message_id`, takes a new position (so
//! waiting agents see it again, now readable) and keeps the reactions the placeholder had.

use std::collections::{HashMap, HashSet};

use super::chats;
use super::{Writer, messages};
use crate::archive::jid::{Jid, JidKind};
use crate::archive::model::{Inbound, IngestOutcome};

/// An archived placeholder that [`Writer::replace`] removed.
struct Removed {
    from_me: bool,
    reactions: Option<serde_json::Value>,
}

impl Writer {
    /// Make each `(phone-number JID, LID)` pair one chat: a form not archived yet becomes an
    /// alias of the other's chat (a chat is created for a pair neither of whose forms is
    /// known), and two existing chats are merged into the older. Pairs that are not a phone
    /// JID and a LID are skipped. Returns how many pairs changed the archive.
    pub(super) async fn link(
        &mut self,
        account: &str,
        pairs: &[(String, String)],
    ) -> anyhow::Result<usize> {
        let r = self.link_tx(account, pairs).await;
        self.forgetting(r)
    }

    async fn link_tx(
        &mut self,
        account: &str,
        pairs: &[(String, String)],
    ) -> anyhow::Result<usize> {
        let mut valid: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for (pn, lid) in pairs {
            let pn = Jid::parse(pn).filter(|j| j.phone().is_some());
            let lid = Jid::parse(lid).filter(Jid::is_lid);
            if let (Some(pn), Some(lid)) = (pn, lid) {
                valid.push((pn.canonical, lid.canonical));
            }
        }
        valid.sort();
        valid.dedup();
        if valid.is_empty() {
            return Ok(0);
        }
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        self.account(&tx, account).await?;

        let all: Vec<&str> = valid
            .iter()
            .flat_map(|(p, l)| [p.as_str(), l.as_str()])
            .collect();
        let mut known: HashMap<String, String> = HashMap::new();
        for row in tx
            .query(
                "select jid, chat_id from chat_aliases where account_id = $1 and jid = any($2)",
                &[&account, &all],
            )
            .await?
        {
            known.insert(row.get(0), row.get(1));
        }
        // A pair neither of whose forms is known gets a chat under its phone JID.
        let fresh: Vec<(&str, JidKind)> = valid
            .iter()
            .filter(|(p, l)| !known.contains_key(p) && !known.contains_key(l))
            .map(|(p, _)| (p.as_str(), JidKind::Direct))
            .collect();
        let created = fresh.len();
        if !fresh.is_empty() {
            let ids = chats::resolve(&tx, &self.key, &mut self.cache, account, &fresh).await?;
            known.extend(ids);
        }

        let mut changed = created;
        let mut new_aliases: Vec<(String, String)> = Vec::new();
        let mut phones: Vec<(String, String)> = Vec::new();
        for (pn, lid) in &valid {
            match (known.get(pn).cloned(), known.get(lid).cloned()) {
                (Some(a), Some(b)) if a != b => {
                    let merged = &mut self
                        .accounts
                        .get_mut(account)
                        .ok_or_else(|| anyhow::anyhow!("account state not loaded"))?
                        .merged;
                    let keep = chats::merge(&tx, &mut self.cache, merged, account, &a, &b).await?;
                    let gone = if keep == a { b } else { a };
                    // Aliases queued for the chat that went now belong to the one kept.
                    let queued = new_aliases.iter_mut().chain(phones.iter_mut());
                    for c in queued.map(|(_, c)| c).chain(known.values_mut()) {
                        if *c == gone {
                            c.clone_from(&keep);
                        }
                    }
                    changed += 1;
                }
                (Some(_), Some(_)) => {}
                (Some(chat), None) => {
                    new_aliases.push((lid.clone(), chat.clone()));
                    known.insert(lid.clone(), chat);
                    changed += 1;
                }
                (None, Some(chat)) => {
                    new_aliases.push((pn.clone(), chat.clone()));
                    phones.push((pn.clone(), chat.clone()));
                    known.insert(pn.clone(), chat);
                    changed += 1;
                }
                (None, None) => anyhow::bail!("a linked phone JID has no chat"),
            }
        }
        if !new_aliases.is_empty() {
            let (jids, ids): (Vec<String>, Vec<String>) = new_aliases.into_iter().unzip();
            tx.execute(
                "insert into chat_aliases (account_id, jid, chat_id)
                 select $1, * from unnest($2::text[], $3::text[])
                 on conflict do nothing",
                &[&account, &jids, &ids],
            )
            .await?;
        }
        if !phones.is_empty() {
            let (digits, ids): (Vec<String>, Vec<String>) = phones
                .into_iter()
                .filter_map(|(pn, chat)| Some((Jid::parse(&pn)?.phone()?.to_owned(), chat)))
                .unzip();
            tx.execute(
                "update chats c set phone = coalesce(c.phone, u.phone)
                   from unnest($2::text[], $3::text[]) u(phone, chat_id)
                  where c.account_id = $1 and c.chat_id = u.chat_id",
                &[&account, &digits, &ids],
            )
            .await?;
        }
        tx.commit().await?;
        self.repoint_pending(account);
        tracing::debug!(pairs = valid.len(), changed, "LID and phone forms linked");
        Ok(changed)
    }

    /// For each message whose archived copy (same chat and WhatsApp id) is an undecryptable
    /// placeholder (`unknown`, no words, no attachment), put the message in its place in one
    /// transaction. Returns, per input, the new outcome, or `None` when the archived copy was
    /// not a placeholder (or there was none) and nothing changed. `live` as for ingest.
    pub(super) async fn replace(
        &mut self,
        account: &str,
        messages: &[Inbound],
        live: bool,
    ) -> anyhow::Result<Vec<Option<IngestOutcome>>> {
        let r = self.replace_tx(account, messages, live).await;
        self.forgetting(r)
    }

    async fn replace_tx(
        &mut self,
        account: &str,
        input: &[Inbound],
        live: bool,
    ) -> anyhow::Result<Vec<Option<IngestOutcome>>> {
        let mut out = vec![None; input.len()];
        let parsed: Vec<Option<Jid>> = input
            .iter()
            .map(|m| Jid::parse(&m.chat_jid).filter(|j| j.kind != JidKind::Status))
            .collect();
        if parsed.iter().all(Option::is_none) {
            return Ok(out);
        }
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        let state = self.account(&tx, account).await?;
        let wanted: Vec<(&str, JidKind)> = parsed
            .iter()
            .flatten()
            .map(|j| (j.canonical.as_str(), j.kind))
            .collect();
        let chat_ids = chats::resolve(&tx, &self.key, &mut self.cache, account, &wanted).await?;

        // Every id the archived copy may have: its chat's, and those of chats merged into it.
        let mut candidate_of: HashMap<String, usize> = HashMap::new();
        for (i, (m, j)) in input.iter().zip(&parsed).enumerate() {
            let Some(chat) = j.as_ref().and_then(|j| chat_ids.get(&j.canonical)) else {
                continue;
            };
            let chats = std::iter::once(chat).chain(state.merged.get(chat).into_iter().flatten());
            for c in chats {
                candidate_of.insert(self.key.message_id(account, c, &m.wa_id), i);
            }
        }
        let candidates: Vec<&String> = candidate_of.keys().collect();
        let rows = tx
            .query(
                "delete from messages m
                  where m.account_id = $1 and m.message_id = any($2)
                    and m.kind = 'unknown' and m.text = ''
                    and not exists (select 1 from attachments a
                                     where a.account_id = m.account_id
                                       and a.message_id = m.message_id)
                 returning m.message_id, m.from_me, m.reactions",
                &[&account, &candidates],
            )
            .await?;
        let mut removed: HashMap<usize, Removed> = HashMap::new();
        for r in rows {
            let id: String = r.get(0);
            if let Some(&i) = candidate_of.get(&id) {
                removed.insert(
                    i,
                    Removed {
                        from_me: r.get(1),
                        reactions: r.get(2),
                    },
                );
            }
        }
        if removed.is_empty() {
            tx.commit().await?;
            return Ok(out);
        }
        let mut order: Vec<usize> = removed.keys().copied().collect();
        order.sort_unstable();
        let batch: Vec<Inbound> = order.iter().map(|&i| input[i].clone()).collect();

        let excluded: HashSet<String> = tx
            .query_opt("select excluded_chats from archive_policy", &[])
            .await?
            .map(|r| r.get::<_, Vec<String>>(0))
            .unwrap_or_default()
            .into_iter()
            .collect();
        let ctx = messages::Ctx {
            key: &self.key,
            account,
            own: &state.own,
            excluded: &excluded,
            live,
            merged: &state.merged,
        };
        let mut written =
            messages::write(&tx, &ctx, &mut self.cache, &mut self.next_position, &batch).await?;

        let (mut ids, mut reactions) = (Vec::new(), Vec::new());
        for (k, &i) in order.iter().enumerate() {
            let gone = &removed[&i];
            let outcome = &written.outcomes[k];
            if let (IngestOutcome::Stored { message_id, .. }, Some(r)) = (outcome, &gone.reactions)
            {
                ids.push(message_id.clone());
                reactions.push(r.clone());
            }
            // The placeholder was counted unread when it arrived; its replacement is the same
            // message, not a new one.
            if live
                && !gone.from_me
                && matches!(outcome, IngestOutcome::Stored { .. })
                && let Some(chat) = parsed[i].as_ref().and_then(|j| chat_ids.get(&j.canonical))
                && let Some(d) = written.deltas.get_mut(chat)
                && d.unread > 0
            {
                d.unread -= 1;
            }
            out[i] = Some(written.outcomes[k].clone());
        }
        if !ids.is_empty() {
            tx.execute(
                "update messages m set reactions = u.r
                   from unnest($2::text[], $3::jsonb[]) u(id, r)
                  where m.account_id = $1 and m.message_id = u.id",
                &[&account, &ids, &reactions],
            )
            .await?;
        }
        let deltas = std::mem::take(&mut written.deltas);
        let step = self.pending.stage(&tx, account, live, true, deltas).await?;
        tx.commit().await?;
        self.pending.committed(account, step);
        self.after_commit(written);
        tracing::info!(
            replaced = order.len(),
            "undecryptable placeholders replaced by the resent messages"
        );
        Ok(out)
    }
}
