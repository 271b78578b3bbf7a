//! Identity inside the writer: canonical JIDs → chat ids (creating chats on first sight), the
//! LID ⇄ phone link that makes one person one chat (merging two chats when both already
//! exist), and contact, group and own-account updates.

use std::collections::HashMap;

use deadpool_postgres::GenericClient;

use crate::archive::ids::IdKey;
use crate::archive::jid::{Jid, JidKind};
use crate::archive::model::{ContactUpdate, GroupUpdate};

/// Entries kept before the cache starts over (a few MiB at most).
const CACHE_MAX: usize = 200_000;

/// The writer's memory of `(account, canonical JID) → chat id`. Only the writer changes chats
/// and aliases, so the cache is exact as long as it is cleared when a transaction fails.
#[derive(Debug, Default)]
pub(crate) struct ChatCache {
    map: HashMap<String, HashMap<String, String>>,
    len: usize,
}

impl ChatCache {
    pub(super) fn get(&self, account: &str, jid: &str) -> Option<&String> {
        self.map.get(account)?.get(jid)
    }

    fn insert(&mut self, account: &str, jid: String, chat_id: String) {
        if self.len >= CACHE_MAX {
            self.clear();
        }
        let prev = self
            .map
            .entry(account.to_owned())
            .or_default()
            .insert(jid, chat_id);
        if prev.is_none() {
            self.len += 1;
        }
    }

    /// Point every JID of `gone` at `keep`.
    fn repoint(&mut self, account: &str, gone: &str, keep: &str) {
        if let Some(m) = self.map.get_mut(account) {
            m.values_mut()
                .filter(|c| c.as_str() == gone)
                .for_each(|c| *c = keep.to_owned());
        }
    }

    /// Forget everything (after a failed transaction, whose new chats do not exist).
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.len = 0;
    }
}

/// Chat id → the ids of the chats merged into it.
pub(crate) type Merged = HashMap<String, Vec<String>>;

/// The merges recorded for `account`.
pub(crate) async fn load_merged(tx: &impl GenericClient, account: &str) -> anyhow::Result<Merged> {
    let mut out = Merged::new();
    for r in tx
        .query(
            "select into_chat_id, from_chat_id from chat_merges where account_id = $1",
            &[&account],
        )
        .await?
    {
        out.entry(r.get(0)).or_default().push(r.get(1));
    }
    Ok(out)
}

/// Resolve canonical JIDs (direct or group) to chat ids, creating the chats not seen before:
/// one alias lookup and at most two inserts for the whole set.
pub(crate) async fn resolve(
    tx: &impl GenericClient,
    key: &IdKey,
    cache: &mut ChatCache,
    account: &str,
    wanted: &[(&str, JidKind)],
) -> anyhow::Result<HashMap<String, String>> {
    let mut out: HashMap<String, String> = HashMap::with_capacity(wanted.len());
    let mut missing: Vec<&str> = Vec::new();
    for (jid, _) in wanted {
        if out.contains_key(*jid) {
            continue;
        }
        match cache.get(account, jid) {
            Some(c) => {
                out.insert((*jid).to_owned(), c.clone());
            }
            None if !missing.contains(jid) => missing.push(jid),
            None => {}
        }
    }
    if missing.is_empty() {
        return Ok(out);
    }
    let stmt = tx
        .prepare_cached(
            "select jid, chat_id from chat_aliases where account_id = $1 and jid = any($2)",
        )
        .await?;
    for row in tx.query(&stmt, &[&account, &missing]).await? {
        let (jid, chat): (String, String) = (row.get(0), row.get(1));
        cache.insert(account, jid.clone(), chat.clone());
        out.insert(jid, chat);
    }
    let mut new_ids = Vec::new();
    let mut new_jids = Vec::new();
    let mut new_kinds = Vec::new();
    let mut new_phones = Vec::new();
    for (jid, kind) in wanted {
        if out.contains_key(*jid) || new_jids.contains(jid) {
            continue;
        }
        let parsed = Jid::parse(jid);
        new_ids.push(key.chat_id(account, jid));
        new_jids.push(*jid);
        new_kinds.push(match kind {
            JidKind::Group => "group",
            _ => "direct",
        });
        new_phones.push(parsed.as_ref().and_then(|j| j.phone().map(str::to_owned)));
    }
    if new_jids.is_empty() {
        return Ok(out);
    }
    let stmt = tx
        .prepare_cached(
            "insert into chats (account_id, chat_id, kind, jid, phone)
             select $1, * from unnest($2::text[], $3::text[], $4::text[], $5::text[])
             on conflict do nothing",
        )
        .await?;
    tx.execute(
        &stmt,
        &[&account, &new_ids, &new_kinds, &new_jids, &new_phones],
    )
    .await?;
    let stmt = tx
        .prepare_cached(
            "insert into chat_aliases (account_id, jid, chat_id)
             select $1, * from unnest($2::text[], $3::text[])
             on conflict do nothing",
        )
        .await?;
    tx.execute(&stmt, &[&account, &new_jids, &new_ids]).await?;
    for (jid, id) in new_jids.into_iter().zip(new_ids) {
        cache.insert(account, jid.to_owned(), id.clone());
        out.insert(jid.to_owned(), id);
    }
    Ok(out)
}

/// Resolve one canonical JID.
async fn resolve_one(
    tx: &impl GenericClient,
    key: &IdKey,
    cache: &mut ChatCache,
    account: &str,
    jid: &Jid,
) -> anyhow::Result<String> {
    let mut m = resolve(tx, key, cache, account, &[(&jid.canonical, jid.kind)]).await?;
    m.remove(&jid.canonical)
        .ok_or_else(|| anyhow::anyhow!("chat resolution returned nothing"))
}

/// Add or update a contact; with a LID, make both forms one chat. Returns the chat id.
pub(crate) async fn upsert_contact(
    tx: &impl GenericClient,
    key: &IdKey,
    cache: &mut ChatCache,
    merged: &mut Merged,
    account: &str,
    update: &ContactUpdate,
) -> anyhow::Result<String> {
    let jid = Jid::parse(&update.jid)
        .filter(|j| j.kind == JidKind::Direct)
        .ok_or_else(|| anyhow::anyhow!("contact jid is not a person's JID"))?;
    let lid = match &update.lid {
        Some(l) => Some(
            Jid::parse(l)
                .filter(Jid::is_lid)
                .ok_or_else(|| anyhow::anyhow!("contact lid is not a LID"))?,
        ),
        None => None,
    };
    let mut chat = resolve_one(tx, key, cache, account, &jid).await?;
    if let Some(lid) = lid {
        let existing: Option<String> = tx
            .query_opt(
                "select chat_id from chat_aliases where account_id = $1 and jid = $2",
                &[&account, &lid.canonical],
            )
            .await?
            .map(|r| r.get(0));
        match existing {
            None => {
                tx.execute(
                    "insert into chat_aliases (account_id, jid, chat_id) values ($1, $2, $3)",
                    &[&account, &lid.canonical, &chat],
                )
                .await?;
                cache.insert(account, lid.canonical.clone(), chat.clone());
            }
            Some(other) if other != chat => {
                chat = merge(tx, cache, merged, account, &chat, &other).await?;
            }
            Some(_) => {}
        }
    }
    let phone = jid.phone();
    tx.execute(
        "update chats set name = $3, phone = coalesce($4, phone)
         where account_id = $1 and chat_id = $2",
        &[&account, &chat, &update.name, &phone],
    )
    .await?;
    tx.execute(
        "insert into contacts (account_id, chat_id, name) values ($1, $2, $3)
         on conflict (account_id, chat_id) do update set name = excluded.name",
        &[&account, &chat, &update.name],
    )
    .await?;
    Ok(chat)
}

/// Make chats `a` and `b` one: the older survives with its id, the newer's messages,
/// attachments, stories, aliases and contact move into it, and its id is recorded as merged.
/// Returns the surviving chat id.
pub(super) async fn merge(
    tx: &impl GenericClient,
    cache: &mut ChatCache,
    merged: &mut Merged,
    account: &str,
    a: &str,
    b: &str,
) -> anyhow::Result<String> {
    let rows = tx
        .query(
            "select chat_id from chats where account_id = $1 and chat_id = any($2)
             order by created_at, chat_id",
            &[&account, &vec![a, b]],
        )
        .await?;
    anyhow::ensure!(rows.len() == 2, "a chat to merge is missing");
    let keep: String = rows[0].get(0);
    let gone: String = rows[1].get(0);
    let steps = [
        // The same WhatsApp message archived under both forms: keep one copy.
        "delete from attachments where account_id = $1 and message_id in (
             select g.message_id from messages g join messages k
               on k.account_id = g.account_id and k.chat_id = $2 and k.wa_id = g.wa_id
              where g.account_id = $1 and g.chat_id = $3)",
        "delete from messages g using messages k
          where g.account_id = $1 and g.chat_id = $3
            and k.account_id = $1 and k.chat_id = $2 and k.wa_id = g.wa_id",
        "update attachments set chat_id = $2 where account_id = $1 and message_id in (
             select message_id from messages where account_id = $1 and chat_id = $3)",
        "update messages set chat_id = $2 where account_id = $1 and chat_id = $3",
        "update attachments set chat_id = $2 where account_id = $1 and story and chat_id = $3",
        "update stories set sender_chat_id = $2 where account_id = $1 and sender_chat_id = $3",
        "update chat_aliases set chat_id = $2 where account_id = $1 and chat_id = $3",
        "insert into contacts (account_id, chat_id, name)
             select account_id, $2, name from contacts where account_id = $1 and chat_id = $3
             on conflict do nothing",
        "delete from contacts where account_id = $1 and chat_id = $3",
        "update chats k set
             name = coalesce(k.name, g.name),
             push_name = coalesce(k.push_name, g.push_name),
             phone = coalesce(k.phone, g.phone),
             last_message_at = greatest(k.last_message_at, g.last_message_at),
             last_position = greatest(k.last_position, g.last_position),
             unread_count = k.unread_count + g.unread_count
           from chats g
          where k.account_id = $1 and k.chat_id = $2 and g.account_id = $1 and g.chat_id = $3",
        "delete from chats where account_id = $1 and chat_id = $3",
        "update chat_merges set into_chat_id = $2 where account_id = $1 and into_chat_id = $3",
        "insert into chat_merges (account_id, from_chat_id, into_chat_id) values ($1, $3, $2)
             on conflict (account_id, from_chat_id) do update set into_chat_id = excluded.into_chat_id",
    ];
    let text = tokio_postgres::types::Type::TEXT;
    for sql in steps {
        // Typed: some steps do not use every parameter.
        let stmt = tx
            .prepare_typed(sql, &[text.clone(), text.clone(), text.clone()])
            .await?;
        tx.execute(&stmt, &[&account, &keep, &gone]).await?;
    }
    cache.repoint(account, &gone, &keep);
    let mut absorbed = merged.remove(&gone).unwrap_or_default();
    absorbed.push(gone.clone());
    merged.entry(keep.clone()).or_default().extend(absorbed);
    tracing::info!(chat.id = %keep, merged.chat.id = %gone, "merged two forms of one person");
    Ok(keep)
}

/// Add or update a group's subject and size. Returns its chat id.
pub(crate) async fn upsert_group(
    tx: &impl GenericClient,
    key: &IdKey,
    cache: &mut ChatCache,
    account: &str,
    update: &GroupUpdate,
) -> anyhow::Result<String> {
    let jid = Jid::parse(&update.jid)
        .filter(|j| j.kind == JidKind::Group)
        .ok_or_else(|| anyhow::anyhow!("group jid is not a group JID"))?;
    let chat = resolve_one(tx, key, cache, account, &jid).await?;
    let mut members: Vec<String> = update
        .participants
        .iter()
        .filter_map(|p| Jid::parse(p).map(|j| j.canonical))
        .collect();
    members.sort();
    members.dedup();
    let count = i32::try_from(members.len()).unwrap_or(i32::MAX);
    tx.execute(
        "update chats set name = $3 where account_id = $1 and chat_id = $2",
        &[&account, &chat, &update.name],
    )
    .await?;
    tx.execute(
        "insert into groups (account_id, chat_id, participant_count) values ($1, $2, $3)
         on conflict (account_id, chat_id) do update set participant_count = excluded.participant_count",
        &[&account, &chat, &count],
    )
    .await?;
    Ok(chat)
}

/// Record the account's own JID and/or LID; returns its canonical own JIDs.
pub(crate) async fn set_own(
    tx: &impl GenericClient,
    account: &str,
    jid: Option<&str>,
    lid: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let parse = |s: Option<&str>| -> anyhow::Result<Option<String>> {
        s.map(|s| {
            Jid::parse(s)
                .filter(|j| j.kind == JidKind::Direct)
                .map(|j| j.canonical)
                .ok_or_else(|| anyhow::anyhow!("own id is not a person's JID"))
        })
        .transpose()
    };
    let (jid, lid) = (parse(jid)?, parse(lid)?);
    tx.execute(
        "insert into accounts (account_id, display_name, own_jid, own_lid) values ($1, $1, $2, $3)
         on conflict (account_id) do update set
             own_jid = coalesce(excluded.own_jid, accounts.own_jid),
             own_lid = coalesce(excluded.own_lid, accounts.own_lid)",
        &[&account, &jid, &lid],
    )
    .await?;
    load_own(tx, account).await
}

/// The account's own canonical JIDs (phone JID and LID, where known).
pub(crate) async fn load_own(
    tx: &impl GenericClient,
    account: &str,
) -> anyhow::Result<Vec<String>> {
    let row = tx
        .query_opt(
            "select own_jid, own_lid from accounts where account_id = $1",
            &[&account],
        )
        .await?;
    Ok(row
        .map(|r| {
            [r.get::<_, Option<String>>(0), r.get::<_, Option<String>>(1)]
                .into_iter()
                .flatten()
                .collect()
        })
        .unwrap_or_default())
}
