//! The archive: the single writer that gives messages their positions ([`writer`]), identity
//! resolution (JIDs → opaque ids, [`ids`], [`jid`]), the `#private` rule, and the read queries
//! behind the read tools ([`read`]).
//!
//! Connectors feed it through a connector-independent ingest API ([`Inbound`],
//! [`Archive::ingest_live`], [`Archive::ingest_batch`], contact and group upserts); the RPC ops
//! read through [`read`] with the caller's [`crate::viewer::Viewer`].

mod events;
pub(crate) mod ids;
mod janitor;
pub(crate) mod jid;
pub(crate) mod lexemes;
mod model;
pub(crate) mod private;
pub(crate) mod read;
mod vector;
mod writer;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, watch};

pub use self::events::spawn_event_publisher;
use self::ids::IdKey;
pub use self::model::{ContactUpdate, GroupUpdate, Inbound, InboundAttachment, IngestOutcome};
pub use self::writer::CommitWith;
use self::writer::{Command, Writer};
use crate::supervise::Supervisor;

/// Messages per history transaction: large enough for set-based speed, small enough that live
/// messages wait at most a few chunks (the ones in flight, `writer::LANES`, and one queued).
pub const BATCH_CHUNK: usize = 2_000;

/// The archive's identity, created with the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveMeta {
    /// Changes when the database is re-created; cursors carry it.
    pub archive_id: uuid::Uuid,
}

/// The archive's identity, created with the first worker's start: a random `archive_id` and
/// 32-byte id key, and the default account.
pub async fn meta(pool: &Pool) -> anyhow::Result<ArchiveMeta> {
    Ok(identity(&pool.get().await?).await?.0)
}

async fn identity(
    client: &impl deadpool_postgres::GenericClient,
) -> anyhow::Result<(ArchiveMeta, IdKey)> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| anyhow::anyhow!("no system randomness for the id key: {e}"))?;
    client
        .execute(
            "insert into archive_meta (archive_id, id_key) values ($1::text::uuid, $2)
             on conflict (singleton) do nothing",
            &[&uuid::Uuid::new_v4().to_string(), &secret.as_slice()],
        )
        .await?;
    let row = client
        .query_one("select archive_id::text, id_key from archive_meta", &[])
        .await?;
    let archive_id: uuid::Uuid = row.get::<_, String>(0).parse()?;
    let key = IdKey::new(row.get::<_, &[u8]>(1));
    client
        .execute(
            "insert into accounts (account_id, display_name) values ($1, 'Default')
             on conflict do nothing",
            &[&wazap_shared::ids::DEFAULT_ACCOUNT],
        )
        .await?;
    Ok((ArchiveMeta { archive_id }, key))
}

/// A handle to one account's archive: the archive's identity and the account's single writer
/// (each account has its own, started by the worker that owns the account). Cheap to clone.
#[derive(Clone)]
pub struct Archive {
    meta: ArchiveMeta,
    account: std::sync::Arc<str>,
    tx: mpsc::Sender<Command>,
    committed: watch::Receiver<i64>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("archive_id", &self.meta.archive_id)
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl Archive {
    /// Load (or create) the archive's identity (a random `archive_id` and 32-byte id key) and
    /// the default account, and start `account`'s writer task under `supervisor` (it stops
    /// with the supervisor's stop token; a panic in it stops the worker: its positions cannot
    /// be rebuilt in-process) and the search index's janitor (restarted when it fails). Expects
    /// the migrations applied, and `pool` fenced by the account's lease when several workers
    /// may run ([`crate::db::fenced_pool`]).
    pub async fn start(pool: Pool, account: &str, supervisor: &Supervisor) -> anyhow::Result<Self> {
        let client = pool.get().await?;
        let (meta, key) = identity(&client).await?;
        let archive_id = meta.archive_id;
        if writer::stats::recompute(&client, account).await? {
            tracing::warn!(account, "chat statistics repaired after an unclean stop");
        }
        // Each account numbers its own messages (migration 0019).
        let last: i64 = client
            .query_one(
                "select coalesce(max(position), 0) from messages where account_id = $1",
                &[&account],
            )
            .await?
            .get(0);
        drop(client);
        let (committed_tx, committed) = watch::channel(last);
        let (tx, rx) = mpsc::channel(1024);
        janitor::spawn(pool.clone(), committed.clone(), supervisor);
        let writer = Writer::new(pool, key, last, committed_tx);
        let stop = supervisor.stop().clone();
        supervisor.spawn_fatal("archive writer", async move {
            writer.run(rx, stop).await;
            Ok(())
        });
        tracing::info!(archive.id = %archive_id, account, position = last, "archive started");
        Ok(Self {
            meta,
            account: account.into(),
            tx,
            committed,
        })
    }

    /// The archive's identity.
    pub fn meta(&self) -> &ArchiveMeta {
        &self.meta
    }

    /// The account this archive writes.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The account's highest committed message position; it changes after each commit that stored
    /// messages. Subscribe before querying so nothing slips between.
    pub fn committed(&self) -> watch::Receiver<i64> {
        self.committed.clone()
    }

    /// Queue a command; its answer comes on the returned receiver.
    async fn send<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<anyhow::Result<T>>) -> Command,
    ) -> anyhow::Result<oneshot::Receiver<anyhow::Result<T>>> {
        let (reply, rx) = oneshot::channel();
        let command = make(reply);
        anyhow::ensure!(
            command.account() == &*self.account,
            "the archive of account {} was handed a write of account {}",
            self.account,
            command.account()
        );
        self.tx
            .send(command)
            .await
            .map_err(|_| anyhow::anyhow!("the archive writer has stopped"))?;
        Ok(rx)
    }

    async fn call<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<anyhow::Result<T>>) -> Command,
    ) -> anyhow::Result<T> {
        answer(self.send(make).await?).await
    }

    /// Queue one live message behind everything queued before it and return a future of its
    /// outcome: callers that must keep arrival order (the sim) enqueue in order and wait
    /// concurrently, so the writer can commit messages arriving together in one transaction.
    pub async fn enqueue_live(
        &self,
        account: &str,
        message: Inbound,
    ) -> anyhow::Result<impl Future<Output = anyhow::Result<IngestOutcome>> + use<>> {
        self.enqueue_live_with(account, message, None).await
    }

    /// [`Archive::enqueue_live`] with a statement committed in the same transaction: both
    /// commit or neither does.
    pub async fn enqueue_live_with(
        &self,
        account: &str,
        message: Inbound,
        also: Option<CommitWith>,
    ) -> anyhow::Result<impl Future<Output = anyhow::Result<IngestOutcome>> + use<>> {
        let rx = self
            .send(|reply| Command::Live {
                account: account.to_owned(),
                messages: vec![message],
                also,
                reply,
            })
            .await?;
        Ok(async move {
            let mut out = answer(rx).await?;
            out.pop()
                .ok_or_else(|| anyhow::anyhow!("the writer returned no outcome"))
        })
    }

    /// Store one live message in its own transaction (grouped with other live messages waiting
    /// at the same moment). Returns once it is committed.
    pub async fn ingest_live(
        &self,
        account: &str,
        message: Inbound,
    ) -> anyhow::Result<IngestOutcome> {
        self.enqueue_live(account, message).await?.await
    }

    /// Store one live message and commit `also` in the same transaction: both commit or
    /// neither does (a send's `accepted` with its own message).
    pub async fn ingest_live_with(
        &self,
        account: &str,
        message: Inbound,
        also: CommitWith,
    ) -> anyhow::Result<IngestOutcome> {
        self.enqueue_live_with(account, message, Some(also))
            .await?
            .await
    }

    /// Store a history page, [`BATCH_CHUNK`] messages per transaction (two written at once,
    /// committed in position order; the page's chat statistics are current when it returns);
    /// returns how many messages (and stories) were newly stored. On an error, chunks queued
    /// behind the failed one may still be stored: a retry of the page finds them archived.
    pub async fn ingest_batch(&self, account: &str, messages: Vec<Inbound>) -> anyhow::Result<u32> {
        let outcomes = self.ingest_batch_outcomes(account, messages).await?;
        Ok(outcomes
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    IngestOutcome::Stored { .. } | IngestOutcome::Story { new: true, .. }
                )
            })
            .count() as u32)
    }

    /// Like [`Archive::ingest_batch`], with one outcome per input message, in input order.
    pub async fn ingest_batch_outcomes(
        &self,
        account: &str,
        messages: Vec<Inbound>,
    ) -> anyhow::Result<Vec<IngestOutcome>> {
        let total = messages.len();
        let mut outcomes = Vec::with_capacity(total);
        let mut rest = messages.into_iter();
        let mut sent = 0;
        // Chunks queued ahead of the one awaited: enough to keep every lane busy while an
        // answer travels back, few enough that live messages do not queue behind a page.
        let mut waiting = std::collections::VecDeque::new();
        loop {
            let chunk: Vec<Inbound> = rest.by_ref().take(BATCH_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            sent += chunk.len();
            let rx = self
                .send(|reply| Command::Messages {
                    account: account.to_owned(),
                    messages: chunk,
                    last: sent >= total,
                    reply,
                })
                .await?;
            waiting.push_back(rx);
            if waiting.len() > writer::LANES
                && let Some(rx) = waiting.pop_front()
            {
                outcomes.extend(answer(rx).await?);
            }
        }
        while let Some(rx) = waiting.pop_front() {
            outcomes.extend(answer(rx).await?);
        }
        Ok(outcomes)
    }

    /// Add or update a contact; with a LID, both forms become one chat (merging two existing
    /// chats into the older). Returns the chat id.
    pub async fn upsert_contact(
        &self,
        account: &str,
        update: ContactUpdate,
    ) -> anyhow::Result<String> {
        self.call(|reply| Command::Contact {
            account: account.to_owned(),
            update,
            reply,
        })
        .await
    }

    /// Add or update a group's subject and participant count. Returns the chat id.
    pub async fn upsert_group(&self, account: &str, update: GroupUpdate) -> anyhow::Result<String> {
        self.call(|reply| Command::Group {
            account: account.to_owned(),
            update,
            reply,
        })
        .await
    }

    /// Link each `(phone-number JID, LID)` pair as one person, without a name: both forms
    /// resolve to one chat from now on (two existing chats are merged into the older). Pairs
    /// that are not a phone JID and a LID are skipped. Returns how many pairs changed anything.
    pub async fn link_aliases(
        &self,
        account: &str,
        pairs: Vec<(String, String)>,
    ) -> anyhow::Result<usize> {
        self.call(|reply| Command::Link {
            account: account.to_owned(),
            pairs,
            reply,
        })
        .await
    }

    /// Put each message in place of its archived undecryptable placeholder (same chat and
    /// WhatsApp id, `unknown` with no words): same `message_id`, a new position, reactions
    /// kept. Per input: the new outcome, or `None` when no placeholder was archived for it.
    pub async fn replace_placeholders(
        &self,
        account: &str,
        messages: Vec<Inbound>,
        live: bool,
    ) -> anyhow::Result<Vec<Option<IngestOutcome>>> {
        self.call(|reply| Command::Replace {
            account: account.to_owned(),
            messages,
            live,
            reply,
        })
        .await
    }

    /// Record the account's own phone JID and/or LID (used for `mentions_me`), creating the
    /// account when it does not exist yet.
    pub async fn set_own_ids(
        &self,
        account: &str,
        jid: Option<String>,
        lid: Option<String>,
    ) -> anyhow::Result<()> {
        self.call(|reply| Command::Own {
            account: account.to_owned(),
            jid,
            lid,
            reply,
        })
        .await
    }
}

/// The writer's answer on `rx`.
async fn answer<T>(rx: oneshot::Receiver<anyhow::Result<T>>) -> anyhow::Result<T> {
    rx.await
        .map_err(|_| anyhow::anyhow!("the archive writer stopped before answering"))?
}
