//! The single writer (DESIGN §8): one task owns every archive write of one account (each
//! account has its own, in the worker that holds the account's lease). Commands arrive on an mpsc
//! queue with a oneshot reply each; the task assigns `messages.position` from its own counter
//! and commits in position order, so positions become visible in order (a reader never sees
//! position 11 before 10). After each commit the highest stored position goes out on a watch
//! channel. Consecutive live messages are committed together; history arrives in chunks, so
//! live messages queue between chunks instead of behind a whole history page, and up to
//! [`LANES`] history chunks are written at once, each committing in its turn (`lanes`).

mod aliases;
mod chats;
mod lanes;
mod live;
pub(crate) mod messages;
mod people;
pub(crate) mod stats;

use std::collections::HashMap;

use deadpool_postgres::{GenericClient, Pool};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use self::chats::{ChatCache, Merged};
pub(crate) use self::lanes::LANES;
use self::lanes::Lanes;
pub use self::live::CommitWith;
use self::live::Delivery;
use self::stats::Pending;
use super::ids::IdKey;
use super::model::{ContactUpdate, GroupUpdate, Inbound, IngestOutcome};

/// How many live messages one transaction takes at most.
const LIVE_GROUP_MAX: usize = 256;

/// A reply channel.
type Reply<T> = oneshot::Sender<anyhow::Result<T>>;

/// One unit of work for the writer.
pub(crate) enum Command {
    /// Store live messages (grouped with other live deliveries waiting at the same moment),
    /// with a statement to commit alongside (`live`).
    Live {
        account: String,
        messages: Vec<Inbound>,
        also: Option<CommitWith>,
        reply: Reply<Vec<IngestOutcome>>,
    },
    /// Store one chunk of history in one transaction. `last` marks the final chunk of a
    /// history page (chat statistics are brought up to date).
    Messages {
        account: String,
        messages: Vec<Inbound>,
        last: bool,
        reply: Reply<Vec<IngestOutcome>>,
    },
    /// Add or update a contact (and link its LID).
    Contact {
        account: String,
        update: ContactUpdate,
        reply: Reply<String>,
    },
    /// Add or update a group.
    Group {
        account: String,
        update: GroupUpdate,
        reply: Reply<String>,
    },
    /// Link `(phone-number JID, LID)` pairs as one person each, without a name (`aliases`).
    Link {
        account: String,
        pairs: Vec<(String, String)>,
        reply: Reply<usize>,
    },
    /// Put resent messages in place of their undecryptable placeholders (`aliases`).
    Replace {
        account: String,
        messages: Vec<Inbound>,
        live: bool,
        reply: Reply<Vec<Option<IngestOutcome>>>,
    },
    /// Record the account's own JID and/or LID (creating the account if needed).
    Own {
        account: String,
        jid: Option<String>,
        lid: Option<String>,
        reply: Reply<()>,
    },
}

impl Command {
    /// The account the command writes.
    pub(crate) fn account(&self) -> &str {
        match self {
            Self::Live { account, .. }
            | Self::Messages { account, .. }
            | Self::Contact { account, .. }
            | Self::Group { account, .. }
            | Self::Link { account, .. }
            | Self::Replace { account, .. }
            | Self::Own { account, .. } => account,
        }
    }
}

/// What the writer knows about one account; its presence means the account row exists.
#[derive(Debug, Clone, Default)]
struct AccountState {
    own: Vec<String>,
    merged: Merged,
}

/// The writer task's state.
pub(crate) struct Writer {
    pool: Pool,
    key: IdKey,
    next_position: i64,
    committed: watch::Sender<i64>,
    cache: ChatCache,
    accounts: HashMap<String, AccountState>,
    pending: Pending,
    /// The archive policy's excluded chats as the live path last read them (`live`).
    excluded: Option<live::Policy>,
    /// History chunks being stored beside each other (`lanes`).
    lanes: Lanes,
    /// Last chunks of history pages, committed, answered once their statistics are applied.
    unflushed: Vec<(Reply<Vec<IngestOutcome>>, Vec<IngestOutcome>)>,
}

impl Writer {
    /// A writer continuing after `last_position`.
    pub(crate) fn new(
        pool: Pool,
        key: IdKey,
        last_position: i64,
        committed: watch::Sender<i64>,
    ) -> Self {
        Self {
            lanes: Lanes::new(pool.clone()),
            unflushed: Vec::new(),
            pool,
            key,
            next_position: last_position + 1,
            committed,
            cache: ChatCache::default(),
            accounts: HashMap::new(),
            pending: Pending::default(),
            excluded: None,
        }
    }

    /// Serve commands until `shutdown` or until every sender is gone. The command in hand and
    /// the history chunks in flight are finished first; queued ones are dropped (their callers
    /// see the writer gone). Pending chat statistics are flushed on the way out.
    pub(crate) async fn run(
        mut self,
        mut rx: mpsc::Receiver<Command>,
        shutdown: CancellationToken,
    ) {
        let mut held: Option<Command> = None;
        loop {
            if self.flush_due() {
                self.flush().await;
            }
            let cmd = match held.take() {
                Some(c) => c,
                None => tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    Some(f) = self.lanes.next(), if !self.lanes.is_empty() => {
                        self.finish(f);
                        continue;
                    }
                    c = rx.recv(), if self.lanes.has_room() => match c {
                        Some(c) => c,
                        None => break,
                    },
                },
            };
            if !matches!(cmd, Command::Messages { .. }) {
                // Everything but history sees the archive with no chunk in flight.
                self.drain().await;
            }
            match cmd {
                Command::Live {
                    account,
                    messages,
                    also,
                    reply,
                } => {
                    // Group the live deliveries already waiting behind this one.
                    let mut total = messages.len();
                    let mut group = vec![Delivery {
                        messages,
                        also,
                        reply,
                    }];
                    while total < LIVE_GROUP_MAX {
                        match rx.try_recv() {
                            Ok(Command::Live {
                                account: a,
                                messages,
                                also,
                                reply,
                            }) if a == account => {
                                total += messages.len();
                                group.push(Delivery {
                                    messages,
                                    also,
                                    reply,
                                });
                            }
                            Ok(other) => {
                                held = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.live_group(&account, group).await;
                }
                Command::Messages {
                    account,
                    messages,
                    last,
                    reply,
                } => self.history(account, messages, last, reply).await,
                Command::Contact {
                    account,
                    update,
                    reply,
                } => {
                    let r = self.contact(&account, &update).await;
                    let _ = reply.send(r);
                }
                Command::Group {
                    account,
                    update,
                    reply,
                } => {
                    let r = self.group(&account, &update).await;
                    let _ = reply.send(r);
                }
                Command::Link {
                    account,
                    pairs,
                    reply,
                } => {
                    let r = self.link(&account, &pairs).await;
                    let _ = reply.send(r);
                }
                Command::Replace {
                    account,
                    messages,
                    live,
                    reply,
                } => {
                    let r = self.replace(&account, &messages, live).await;
                    let _ = reply.send(r);
                }
                Command::Own {
                    account,
                    jid,
                    lid,
                    reply,
                } => {
                    let r = self.set_own(&account, jid.as_deref(), lid.as_deref()).await;
                    let _ = reply.send(r);
                }
            }
        }
        self.drain().await;
        if let Err(e) = self.pending.flush_all(&self.pool).await {
            tracing::warn!(error = %crate::error::redacted(e.as_ref()), "chat statistics not flushed at shutdown; repaired at next start");
        }
        for (reply, outcomes) in self.unflushed.drain(..) {
            let _ = reply.send(Ok(outcomes));
        }
        tracing::debug!("archive writer stopped");
    }

    /// The account's state, creating the account row and loading it on first use.
    async fn account(
        &mut self,
        tx: &impl GenericClient,
        account: &str,
    ) -> anyhow::Result<AccountState> {
        if let Some(a) = self.accounts.get(account) {
            return Ok(a.clone());
        }
        tx.execute(
            "insert into accounts (account_id, display_name) values ($1, $1)
             on conflict do nothing",
            &[&account],
        )
        .await?;
        let state = AccountState {
            own: chats::load_own(tx, account).await?,
            merged: chats::load_merged(tx, account).await?,
        };
        self.accounts.insert(account.to_owned(), state.clone());
        Ok(state)
    }

    /// Store a chunk of history in one transaction; on failure forget what the transaction
    /// may have made wrong in memory.
    async fn messages(
        &mut self,
        account: &str,
        messages: &[Inbound],
        last: bool,
    ) -> anyhow::Result<Vec<IngestOutcome>> {
        let result = self.messages_tx(account, messages, last).await;
        self.forgetting(result)
    }

    async fn messages_tx(
        &mut self,
        account: &str,
        messages: &[Inbound],
        last: bool,
    ) -> anyhow::Result<Vec<IngestOutcome>> {
        let pool = self.pool.clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        let state = self.account(&tx, account).await?;
        let excluded = messages::excluded_chats(&tx).await?;
        let ctx = messages::Ctx {
            key: &self.key,
            account,
            own: &state.own,
            excluded: &excluded,
            live: false,
            merged: &state.merged,
        };
        let mut written = messages::write(
            &tx,
            &ctx,
            &mut self.cache,
            &mut self.next_position,
            messages,
        )
        .await?;

        let step = self
            .pending
            .stage(
                &tx,
                account,
                false,
                last,
                std::mem::take(&mut written.deltas),
            )
            .await?;
        tx.commit().await?;
        self.pending.committed(account, step);
        Ok(self.after_commit(written))
    }

    /// Count what a committed transaction stored and announce its highest position.
    fn after_commit(&self, written: messages::Written) -> Vec<IngestOutcome> {
        crate::metrics::archived(
            (written.outcomes.iter())
                .filter(|o| matches!(o, IngestOutcome::Stored { .. }))
                .count(),
        );
        if let Some(p) = written.max_position {
            self.committed.send_if_modified(|c| {
                let advance = p > *c;
                if advance {
                    *c = p;
                }
                advance
            });
        }
        written.outcomes
    }

    /// `r`, after [`Writer::forget`] when it is an error.
    fn forgetting<T>(&mut self, r: anyhow::Result<T>) -> anyhow::Result<T> {
        if r.is_err() {
            self.forget();
        }
        r
    }

    /// Drop cached state a failed transaction may have made wrong (it reloads on demand).
    /// Pending statistics stay: they describe committed messages.
    fn forget(&mut self) {
        self.cache.clear();
        self.accounts.clear();
    }
}
