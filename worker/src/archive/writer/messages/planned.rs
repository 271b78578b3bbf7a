//! A live chunk planned in full before any statement is sent, so the writer can commit it in
//! one flight (`BEGIN`, writes, statistics, `COMMIT` together): what [`super::write`] learns
//! from Postgres along the way — chat ids, earlier copies of a message — is taken from the
//! writer's memory instead, and every row is assumed new. Chunks that need Postgres to decide
//! (a chat not in the cache, a merged chat, edits, deletes, reactions, stories) are not
//! planned; a planned row that turns out to be archived already fails its plain `INSERT`,
//! which rolls the flight back and sends the chunk down the ordinary path.

use std::collections::HashSet;
use std::future::Future;

use deadpool_postgres::GenericClient;
use tokio_postgres::Statement;
use tokio_postgres::error::SqlState;

use super::rows::{AttachmentRows, MessageRows, Parsed, parse};
use super::store;
use super::{Ctx, Written, changes_another, deltas, record};
use crate::archive::jid::JidKind;
use crate::archive::model::{Inbound, IngestOutcome};
use crate::archive::writer::chats::ChatCache;

/// A chunk's rows and its result as if every row were new.
pub(crate) struct Planned<'m> {
    rows: MessageRows<'m>,
    attachments: AttachmentRows<'m>,
    /// Outcomes, highest position and chat deltas, assuming every row is stored.
    pub(crate) written: Written,
}

/// The prepared statements of a [`Planned`] chunk's writes.
pub(crate) struct Prepared {
    messages: Option<Statement>,
    attachments: Option<Statement>,
}

/// Why a planned chunk's writes did not go through.
#[derive(Debug)]
pub(crate) enum Failed {
    /// A row was archived already: the chunk needs the ordinary path.
    Duplicate,
    /// Anything else.
    Other(tokio_postgres::Error),
}

/// Plan `messages` from memory, taking positions from `next_position`; `None` (with
/// `next_position` untouched) when the chunk needs Postgres to decide.
pub(crate) fn plan<'m>(
    ctx: &Ctx<'_>,
    cache: &ChatCache,
    next_position: &mut i64,
    messages: &'m [Inbound],
) -> Option<Planned<'m>> {
    let parsed: Vec<Parsed> = messages.iter().map(parse).collect::<Option<_>>()?;
    let mut ids = std::collections::HashMap::new();
    for p in &parsed {
        if p.chat.kind == JidKind::Status {
            return None;
        }
        for jid in std::iter::once(&p.chat).chain(&p.sender) {
            let chat = cache.get(ctx.account, &jid.canonical)?;
            if ctx.merged.contains_key(chat) {
                return None;
            }
            ids.insert(jid.canonical.clone(), chat.clone());
        }
    }
    let mut position = *next_position;
    let mut rows = MessageRows::default();
    let mut outcomes: Vec<Option<IngestOutcome>> = vec![None; messages.len()];
    for (i, (m, p)) in messages.iter().zip(&parsed).enumerate() {
        if changes_another(m) {
            return None;
        }
        let chat_id = ids[&p.chat.canonical].clone();
        if ctx.excluded.contains(&chat_id) {
            outcomes[i] = Some(IngestOutcome::Excluded);
            continue;
        }
        let sender_chat = p.sender.as_ref().map(|s| ids[&s.canonical].clone());
        rows.push(ctx, &mut position, i, m, p, chat_id, sender_chat, false);
    }
    let stored: HashSet<i64> = rows.position.iter().copied().collect();
    let mut written = Written::default();
    let mut attachments = AttachmentRows::default();
    record(
        &rows,
        &stored,
        &mut outcomes,
        &mut written,
        &mut attachments,
        ctx.key,
        messages,
    );
    let parsed: Vec<Option<Parsed>> = parsed.into_iter().map(Some).collect();
    written.deltas = deltas(ctx, messages, &parsed, &[(&rows, &stored)], &ids);
    written.outcomes = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(IngestOutcome::Invalid))
        .collect();
    *next_position = position;
    Some(Planned {
        rows,
        attachments,
        written,
    })
}

impl Planned<'_> {
    /// Prepare the chunk's statements (before the flight: a statement prepared inside it
    /// would reach Postgres after the ones sent behind it).
    pub(crate) async fn prepare(&self, db: &impl GenericClient) -> anyhow::Result<Prepared> {
        let messages = match self.rows.len() {
            0 => None,
            _ => Some(db.prepare_cached(store::INSERT_MESSAGES).await?),
        };
        let attachments = match self.attachments.attachment_id.len() {
            0 => None,
            _ => Some(db.prepare_cached(store::INSERT_ATTACHMENTS).await?),
        };
        Ok(Prepared {
            messages,
            attachments,
        })
    }

    /// The chunk's writes: a plain `INSERT` of the messages (a row already archived fails it
    /// with a unique violation, reported as [`Failed::Duplicate`]) and of their attachments.
    /// Each statement is sent on the future's first poll, in that order.
    pub(crate) fn send<'a>(
        &'a self,
        db: &'a impl GenericClient,
        account: &'a str,
        prepared: &'a Prepared,
    ) -> impl Future<Output = Result<(), Failed>> + Send + 'a {
        let messages = async move {
            let Some(stmt) = &prepared.messages else {
                return Ok(());
            };
            let params = store::message_params(&account, &self.rows);
            match db.execute(stmt, &params).await {
                Ok(_) => Ok(()),
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(Failed::Duplicate),
                Err(e) => Err(Failed::Other(e)),
            }
        };
        let attachments = async move {
            let Some(stmt) = &prepared.attachments else {
                return Ok(());
            };
            let params = store::attachment_params(&account, &self.attachments);
            db.execute(stmt, &params).await.map(|_| ())
        };
        async move {
            let (inserted, attached) = tokio::join!(biased; messages, attachments);
            inserted?;
            attached.map_err(Failed::Other)
        }
    }
}
