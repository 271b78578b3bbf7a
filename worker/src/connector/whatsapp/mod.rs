//! The real WhatsApp connector, on whatsapp-rust 0.7.0 (pinned: its API churns between minor
//! versions). One linked device per worker, its keys in the SQLite device store under
//! `WAZAP_DATA_DIR` ([`store`]), connected to WhatsApp or a local test network ([`network`]). [`session`] runs the client and folds its events into a
//! truthful state ([`status`]; [`stall`] while the archive cannot commit) and hands archive
//! work to [`events`] through a bounded [`queue`] ([`shared`] holds the handler); inbound messages are archived before WhatsApp's ack is
//! released ([`hook`]); [`map`] turns protobufs into archive messages; [`people`] links a
//! person's LID and phone forms into one chat; [`groups`] writes group notifications as
//! `system` messages; [`history`] walks history blobs and asks the phone for older history;
//! [`receipts`] picks the recipients' delivery and read receipts for the journal;
//! [`send`] transmits with the journaled id (photos with a [`thumbnail`]) and waits for the
//! server's ack; [`media`] downloads attachments later.

pub mod events;
pub mod groups;
pub mod history;
pub mod hook;
pub mod map;
pub mod media;
pub mod network;
pub mod people;
pub mod queue;
pub mod receipts;
pub mod send;
pub mod session;
pub mod shared;
pub mod stall;
pub mod status;
pub mod store;
pub mod thumbnail;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use deadpool_postgres::Pool;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::HistoryProgress;

use self::network::Connect as _;
use self::session::Control;
use self::shared::Shared;
use self::store::StorePaths;
use crate::archive::{Archive, Inbound};
use crate::config::Network;
use crate::connector::outbound::{DynReceipts, OutboundMessage, SendAck, SendError};
use crate::connector::{AccountAction, Connector, ControlError, PairingInfo};
use crate::supervise::Supervisor;

/// How long start-up waits for a previous holder of the device store to let go.
const LOCK_WAIT: Duration = Duration::from_secs(15);

/// The connector handle the worker holds.
pub struct WhatsappConnector {
    shared: Arc<Shared>,
    pool: Pool,
    controls: mpsc::Sender<Control>,
    run: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl WhatsappConnector {
    /// Take the device store of `archive`'s account in `data_dir` (failing when another process holds it) and start
    /// the session in the background: this returns at once, whatever the network does, and the
    /// state says `offline` or `unpaired` until WhatsApp answers. Receipts of sent messages go
    /// to `receipts`. The session and the event drain run under `supervisor` (a panic in either
    /// stops the worker) until its stop token is cancelled.
    pub async fn start(
        archive: Archive,
        pool: Pool,
        data_dir: &std::path::Path,
        network: Network,
        receipts: DynReceipts,
        paused: bool,
        supervisor: &Supervisor,
    ) -> anyhow::Result<Arc<Self>> {
        network.admit().map_err(anyhow::Error::msg)?;
        let account = archive.account().to_owned();
        let paths = StorePaths::for_account(data_dir, &account);
        let lock = paths.lock_within(LOCK_WAIT).await?;
        let (shared, work) = Shared::new(archive, pool.clone(), account.clone(), network, receipts);
        let (controls, rx) = mpsc::channel(8);
        let drain = events::drain(shared.clone(), work);
        supervisor.spawn_fatal("WhatsApp event drain", async move {
            drain.await;
            Ok(())
        });
        // Built before returning (local work only, no network), so the very first state
        // answered is already `unpaired` or `offline`, never a guess; a paused account is not
        // started at all, and answers `paused` until the owner resumes it.
        shared.status().paused = paused;
        let first = match paused {
            true => None,
            false => match session::start(&shared, &paths, &lock).await {
                Ok(h) => Some(h),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "the WhatsApp client could not start; retrying");
                    None
                }
            },
        };
        let session = session::run(
            shared.clone(),
            paths,
            lock,
            rx,
            supervisor.stop().clone(),
            first,
        );
        let run = supervisor.spawn_fatal("WhatsApp session", async move {
            session.await;
            Ok(())
        });
        Ok(Arc::new(Self {
            shared,
            pool,
            controls,
            run: std::sync::Mutex::new(Some(run)),
        }))
    }

    /// Where the connection is (finer than [`Connector::state`]: tells a linked device that is
    /// still connecting from one that is not linked).
    pub fn phase(&self) -> status::Phase {
        self.shared.status().phase
    }

    /// Wait until the session has stopped (after its shutdown token was cancelled) and the
    /// client flushed the device store.
    pub async fn stopped(&self) {
        let run = self.run.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(run) = run {
            let _ = run.await;
        }
    }

    /// Whether the session can carry messages now.
    fn connected(&self) -> bool {
        matches!(
            self.shared.status().sync(Utc::now()),
            SyncState::Live | SyncState::CatchingUp
        )
    }

    /// The acknowledged own send as the archive keeps it (`from_me`); the send path archives
    /// it with the journal's `accepted` (the phone's echo, if it comes, is then a duplicate).
    fn echo(
        msg: &OutboundMessage,
        body: &whatsapp_rust::waproto::whatsapp::Message,
        at: chrono::DateTime<Utc>,
    ) -> Option<Inbound> {
        let c = map::content(body)?;
        Some(Inbound {
            chat_jid: msg.recipient.clone(),
            wa_id: msg.wa_id.clone(),
            sender_jid: None,
            push_name: None,
            from_me: true,
            timestamp: at,
            kind: c.kind.unwrap_or(wazap_shared::wire::MessageType::Unknown),
            text: c.text,
            target_wa_id: c.target,
            edit: c.edit,
            mentions: c.mentions,
            attachment: c.attachment,
        })
    }
}

impl Connector for WhatsappConnector {
    /// The session's state; a live session whose archive cannot commit is still catching up
    /// (what arrives waits, unacknowledged, until it can).
    fn state(&self, _account_id: &str) -> SyncState {
        let state = self.shared.status().sync(Utc::now());
        if state == SyncState::Live && self.shared.stall.note().is_some() {
            return SyncState::CatchingUp;
        }
        state
    }

    fn history(&self, _account_id: &str) -> Option<HistoryProgress> {
        self.shared.status().history
    }

    fn can_send(&self) -> bool {
        true
    }

    fn notes(&self, _account_id: &str) -> Vec<&'static str> {
        self.shared.stall.note().into_iter().collect()
    }

    fn fetch_older(
        &self,
        account_id: &str,
        chat_id: &str,
        wait: Duration,
    ) -> BoxFuture<'_, anyhow::Result<u32>> {
        let (account, chat) = (account_id.to_owned(), chat_id.to_owned());
        Box::pin(async move {
            let Some(client) = self.shared.client().filter(|_| self.connected()) else {
                return Ok(0);
            };
            history::request_older(
                &client,
                &self.pool,
                &self.shared.pending,
                &account,
                &chat,
                wait,
            )
            .await
        })
    }

    fn download(
        &self,
        account_id: &str,
        attachment_id: &str,
    ) -> BoxFuture<'_, anyhow::Result<Option<Vec<u8>>>> {
        let (account, id) = (account_id.to_owned(), attachment_id.to_owned());
        Box::pin(async move {
            let client = self
                .shared
                .client()
                .ok_or_else(|| anyhow::anyhow!("the WhatsApp client is not running"))?;
            media::download(&client, &self.pool, &account, &id).await
        })
    }

    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<SendAck, SendError>> {
        Box::pin(async move {
            let state = self.shared.status().sync(Utc::now());
            let client = match self.shared.client() {
                Some(c) if self.connected() => c,
                _ => return Err(SendError::CannotSend(state)),
            };
            let (ack, body) = send::transmit(
                &self.shared.acks,
                &message.wa_id,
                send::ACK_WAIT,
                send::hand_over(&client, &message),
            )
            .await?;
            let echo = Self::echo(&message, &body, ack.at);
            Ok(SendAck { echo, ..ack })
        })
    }

    fn pairing(&self, _account_id: &str) -> PairingInfo {
        self.shared.status().pairing(Utc::now())
    }

    fn control(
        &self,
        _account_id: &str,
        action: AccountAction,
    ) -> BoxFuture<'_, Result<(), ControlError>> {
        Box::pin(async move {
            let (reply, rx) = oneshot::channel();
            self.controls
                .send(Control { action, reply })
                .await
                .map_err(|_| ControlError::NotNow("the WhatsApp session has stopped"))?;
            rx.await
                .map_err(|_| ControlError::NotNow("the WhatsApp session has stopped"))?
        })
    }
}
