//! The `sim` connector: a deterministic test peer driven over NATS
//! `<prefix>.sim.<account>.<op>` (only with `WAZAP_CONNECTOR=sim`, or for an account registered
//! with the `sim` connector), answered by the worker that owns the account. Every op takes a JSON body from `wazap_shared::wire::sim` and
//! answers `{"ok": {"stored": N, "ids": [...]}}` (a `SimAck`) or `{"error": {"code", "message"}}`
//! (`invalid_argument` naming the field for a bad payload). Peers are WhatsApp JIDs
//! (`972501234567@s.whatsapp.net`, `123@lid`, `120363…@g.us`); every op acts on the account
//! its subject names.
//!
//! | op | body | effect, ack |
//! | --- | --- | --- |
//! | `inject_message` | `{"message": SimMessage}` | live path; `ids: [message_id]` (also for a duplicate; for an edit or delete, the target's), `stored` 1 when new or applied; nothing for an excluded chat |
//! | `history_sync` | `{"messages": [SimMessage], "progress"?: 0–100}` | batch path, counted as one history page (the dashboard's progress); `stored` = newly stored, `ids[i]` = id of input i (`""` when excluded by policy) |
//! | `history_page` | `{"chat": jid, "messages": [SimMessage]}` | queued until `read_messages` asks the phone for older history of that chat; then stored through the batch path |
//! | `inject_story` | `InjectStory` | a status story; `ids: [story message_id]` |
//! | `upsert_contact` | `{"jid", "lid"?, "name"}` | contact; with `lid` both forms are one chat; `ids: [chat_id]` |
//! | `upsert_group` | `{"jid", "name", "participants": [jid]}` | group; `ids: [chat_id]` |
//! | `set_state` | `{"state": "live" \| "offline" \| …}` | the session state reads report (default `live`) |
//! | `set_account` | `{"own_jid"?, "own_lid"?}` | the account's own JIDs (for `mentions_me`) |
//! | `arm_send_fault` | `ArmSendFault` | a fault for the next send: `transmit_delay_ms`, `fail_upload`, `no_ack` (+ `no_ack_wait_ms`), `ack_delay_ms`, `error_after_transmit`, `crash_after_transmit` |
//! | `transmissions` | `{}` | answers `{"ok": {"transmissions": [...]}}`: the log of what was sent (Postgres, survives crashes) |
//!
//! Sends (only `live` or `catching_up`) are logged, then acknowledged at once unless a fault
//! is armed; on acknowledgement the sim archives the own-message echo as `from_me`.
//!
//! `SimMessage`: `chat`, `id` (WhatsApp id), `sender` (groups), `push_name`, `from_me`,
//! `timestamp`, `type`, `text` (caption; emoji for a reaction), `reply_to` (WhatsApp id replied
//! to, reacted to, edited or deleted), `mentions`, `attachment` (`mime_type`, `filename`,
//! `seconds`, `data_base64` kept so downloads work, `thumbnail_base64` JPEG), `edit`. A message
//! to `status@broadcast` is a story.

mod send;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use wazap_shared::RpcError;
use wazap_shared::bus::{Reply, decode_request as decode, encode_reply};
use wazap_shared::subjects::{Subjects, sim_op};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::HistoryProgress;
use wazap_shared::wire::sim::{
    ArmSendFault, HistoryPage, HistorySync, InjectMessage, InjectStory, SetAccount, SetState,
    SimAck, UpsertContact, UpsertGroup,
};

use self::send::SimSender;
use super::inbound::{direct_jid, story_to_inbound, to_inbound, to_inbound_all};
use super::{AccountAction, Connector, ControlError, PairingInfo};
use crate::archive::jid::{Jid, JidKind};
use crate::archive::{Archive, ContactUpdate, GroupUpdate, Inbound, IngestOutcome};
use crate::connector::outbound::{OutboundMessage, SendAck, SendError};
use crate::supervise::Supervisor;

/// A queued history page: account, canonical chat JID, messages.
type Page = (String, String, Vec<Inbound>);

/// The sim connector: session states per account and history pages waiting to be asked for.
pub struct SimConnector {
    /// The account it plays (its archive's).
    account: String,
    archive: Archive,
    pool: Pool,
    states: Mutex<HashMap<String, SyncState>>,
    /// History sync received per account (`history_sync` ops).
    history: Mutex<HashMap<String, HistoryProgress>>,
    /// Fake pairing codes per account, after `PairWithCode` (owner dashboard).
    pairing_codes: Mutex<HashMap<String, String>>,
    pages: Mutex<Vec<Page>>,
    sender: SimSender,
}

impl std::fmt::Debug for SimConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConnector").finish_non_exhaustive()
    }
}

impl Connector for SimConnector {
    fn state(&self, account_id: &str) -> SyncState {
        self.states
            .lock()
            .expect("sim state lock")
            .get(account_id)
            .copied()
            .unwrap_or(SyncState::Live)
    }

    fn history(&self, account_id: &str) -> Option<HistoryProgress> {
        self.history
            .lock()
            .expect("sim history lock")
            .get(account_id)
            .copied()
    }

    fn can_send(&self) -> bool {
        true
    }

    fn fetch_older(
        &self,
        account_id: &str,
        chat_id: &str,
        wait: Duration,
    ) -> BoxFuture<'_, anyhow::Result<u32>> {
        let (account, chat) = (account_id.to_owned(), chat_id.to_owned());
        Box::pin(async move {
            match tokio::time::timeout(wait, self.serve_pages(&account, &chat)).await {
                Ok(r) => r,
                Err(_) => Ok(0),
            }
        })
    }

    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<SendAck, SendError>> {
        let state = self.state(&message.account_id);
        Box::pin(self.sender.send(state, message))
    }

    /// While unpaired: a deterministic fake QR payload, and the fake code once asked for.
    fn pairing(&self, account_id: &str) -> PairingInfo {
        if self.state(account_id) != SyncState::Unpaired {
            return PairingInfo::default();
        }
        PairingInfo {
            qr: Some(format!("wazap-sim-pairing:{account_id}")),
            qr_expires_at: None,
            pairing_code: self
                .pairing_codes
                .lock()
                .expect("sim pairing lock")
                .get(account_id)
                .cloned(),
            detail: Some("sim: no phone is linked".into()),
        }
    }

    /// pause → paused, resume → live, unlink → unpaired; pairing only while unpaired (a code
    /// is an 8-character function of the number).
    fn control(
        &self,
        account_id: &str,
        action: AccountAction,
    ) -> BoxFuture<'_, Result<(), ControlError>> {
        let state = self.state(account_id);
        let next = match (&action, state) {
            (AccountAction::Unlink, _) => Ok(SyncState::Unpaired),
            (AccountAction::Pause, SyncState::Unpaired) => Err("no phone is linked"),
            (AccountAction::Pause, _) => Ok(SyncState::Paused),
            (AccountAction::Resume, SyncState::Paused) => Ok(SyncState::Live),
            (AccountAction::Resume, _) => Err("the connection is not paused"),
            (
                AccountAction::PairWithQr | AccountAction::PairWithCode { .. },
                SyncState::Unpaired,
            ) => Ok(SyncState::Unpaired),
            (AccountAction::PairWithQr | AccountAction::PairWithCode { .. }, _) => {
                Err("a phone is linked already; unlink it first")
            }
        };
        let mut codes = self.pairing_codes.lock().expect("sim pairing lock");
        let result = next.map_err(ControlError::NotNow).map(|next| {
            match &action {
                AccountAction::PairWithCode { phone } => {
                    use sha2::Digest as _;
                    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTVWXYZ23456789";
                    let code = sha2::Sha256::digest(phone.as_bytes())
                        .iter()
                        .take(8)
                        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
                        .collect();
                    codes.insert(account_id.to_owned(), code);
                }
                _ => {
                    codes.remove(account_id);
                }
            }
            self.states
                .lock()
                .expect("sim state lock")
                .insert(account_id.to_owned(), next);
        });
        Box::pin(async move { result })
    }
}

impl SimConnector {
    /// A sim over `archive`; `pool` resolves queued pages' chats.
    pub fn new(archive: Archive, pool: Pool, paused: bool) -> Arc<Self> {
        let account = archive.account().to_owned();
        let states = (paused
            .then(|| (account.clone(), SyncState::Paused))
            .into_iter())
        .collect();
        Arc::new(Self {
            sender: SimSender::new(pool.clone()),
            account,
            archive,
            pool,
            states: Mutex::new(states),
            history: Mutex::new(HashMap::new()),
            pairing_codes: Mutex::new(HashMap::new()),
            pages: Mutex::new(Vec::new()),
        })
    }

    /// Subscribe to `<prefix>.sim.<account>.>` (confirmed by the server before this returns) and answer
    /// ops, one at a time in arrival order, until the supervisor stops; a panic or the
    /// subscription's end stops the worker.
    pub async fn serve(
        self: Arc<Self>,
        nats: async_nats::Client,
        subjects: Subjects,
        supervisor: &Supervisor,
    ) -> anyhow::Result<()> {
        let mut sub = nats.subscribe(subjects.sim_account(&self.account)).await?;
        nats.flush().await?;
        let shutdown = supervisor.stop().clone();
        supervisor.spawn_fatal("sim connector", async move {
            loop {
                let msg = tokio::select! {
                    () = shutdown.cancelled() => break,
                    m = sub.next() => match m {
                        Some(m) => m,
                        None => anyhow::bail!("its NATS subscription ended"),
                    },
                };
                let Some(reply_to) = msg.reply.clone() else {
                    continue;
                };
                let op = subjects
                    .op_of(msg.subject.as_str(), "sim")
                    .and_then(|rest| rest.split_once('.'))
                    .map(|(_, op)| op)
                    .unwrap_or_default();
                if op == sim_op::INJECT_MESSAGE {
                    // In arrival order into the writer's queue; the commit is awaited beside the
                    // next ops, so a burst of injects shares transactions like live traffic does.
                    match self.enqueue_message(&msg.payload).await {
                        Ok(outcome) => {
                            let nats = nats.clone();
                            tokio::spawn(async move {
                                let result = outcome.await.map_err(internal);
                                let body = encode_reply(&Reply::from(result.and_then(ack_one)));
                                if let Err(e) = nats.publish(reply_to, body).await {
                                    tracing::warn!(error = %e, "sim reply not sent");
                                }
                            });
                        }
                        Err(e) => {
                            let body = encode_reply(&Reply::<SimAck>::Error(e));
                            if let Err(e) = nats.publish(reply_to, body).await {
                                tracing::warn!(error = %e, op, "sim reply not sent");
                            }
                        }
                    }
                    continue;
                }
                let body = if op == sim_op::TRANSMISSIONS {
                    encode_reply(&Reply::from(self.sender.transmissions().await))
                } else {
                    encode_reply(&Reply::from(self.handle(op, &msg.payload).await))
                };
                if let Err(e) = nats.publish(reply_to, body).await {
                    tracing::warn!(error = %e, op, "sim reply not sent");
                }
            }
            Ok(())
        });
        Ok(())
    }

    /// Decode an `inject_message` and queue it on the live path; the future yields its outcome.
    async fn enqueue_message(
        &self,
        body: &[u8],
    ) -> Result<impl Future<Output = anyhow::Result<IngestOutcome>> + use<>, RpcError> {
        let req: InjectMessage = decode(body)?;
        let inbound = to_inbound(req.message)?;
        self.archive
            .enqueue_live(&self.account, inbound)
            .await
            .map_err(internal)
    }

    /// Run one op.
    async fn handle(&self, op: &str, body: &[u8]) -> Result<SimAck, RpcError> {
        let account = self.account.as_str();
        match op {
            sim_op::INJECT_MESSAGE => {
                let out = self.enqueue_message(body).await?.await;
                ack_one(out.map_err(internal)?)
            }
            sim_op::INJECT_STORY => {
                let req: InjectStory = decode(body)?;
                let inbound = story_to_inbound(req)?;
                let out = self
                    .archive
                    .ingest_live(account, inbound)
                    .await
                    .map_err(internal)?;
                ack_one(out)
            }
            sim_op::HISTORY_SYNC => {
                let req: HistorySync = decode(body)?;
                let inbound = to_inbound_all(req.messages)?;
                let outcomes = self
                    .archive
                    .ingest_batch_outcomes(account, inbound)
                    .await
                    .map_err(internal)?;
                let ack = ack_many(&outcomes);
                let mut history = self.history.lock().expect("sim history lock");
                let h = history.entry(account.to_owned()).or_default();
                h.pages += 1;
                h.messages += u64::from(ack.stored);
                h.percent = req.progress.map(|p| p.min(100)).or(h.percent);
                Ok(ack)
            }
            sim_op::HISTORY_PAGE => {
                let req: HistoryPage = decode(body)?;
                let chat = Jid::parse(&req.chat)
                    .filter(|j| j.kind != JidKind::Status)
                    .ok_or_else(|| {
                        RpcError::invalid("chat", "expected a person's or group's JID")
                    })?;
                let inbound = to_inbound_all(req.messages)?;
                self.pages.lock().expect("sim pages lock").push((
                    account.to_owned(),
                    chat.canonical,
                    inbound,
                ));
                Ok(SimAck::default())
            }
            sim_op::UPSERT_CONTACT => {
                let req: UpsertContact = decode(body)?;
                direct_jid(&req.jid, "jid")?;
                if let Some(lid) = &req.lid {
                    Jid::parse(lid)
                        .filter(Jid::is_lid)
                        .ok_or_else(|| RpcError::invalid("lid", "expected a LID (…@lid)"))?;
                }
                let chat = self
                    .archive
                    .upsert_contact(
                        account,
                        ContactUpdate {
                            jid: req.jid,
                            lid: req.lid,
                            name: req.name,
                        },
                    )
                    .await
                    .map_err(internal)?;
                Ok(SimAck {
                    stored: 1,
                    ids: vec![chat],
                })
            }
            sim_op::UPSERT_GROUP => {
                let req: UpsertGroup = decode(body)?;
                Jid::parse(&req.jid)
                    .filter(|j| j.kind == JidKind::Group)
                    .ok_or_else(|| RpcError::invalid("jid", "expected a group JID (…@g.us)"))?;
                for p in &req.participants {
                    direct_jid(p, "participants")?;
                }
                let chat = self
                    .archive
                    .upsert_group(
                        account,
                        GroupUpdate {
                            jid: req.jid,
                            name: req.name,
                            participants: req.participants,
                        },
                    )
                    .await
                    .map_err(internal)?;
                Ok(SimAck {
                    stored: 1,
                    ids: vec![chat],
                })
            }
            sim_op::SET_STATE => {
                let req: SetState = decode(body)?;
                self.states
                    .lock()
                    .expect("sim state lock")
                    .insert(account.to_owned(), req.state);
                Ok(SimAck::default())
            }
            sim_op::SET_ACCOUNT => {
                let req: SetAccount = decode(body)?;
                if let Some(j) = &req.own_jid {
                    direct_jid(j, "own_jid")?;
                }
                if let Some(l) = &req.own_lid {
                    direct_jid(l, "own_lid")?;
                }
                self.archive
                    .set_own_ids(account, req.own_jid, req.own_lid)
                    .await
                    .map_err(internal)?;
                Ok(SimAck::default())
            }
            sim_op::ARM_SEND_FAULT => {
                let fault: ArmSendFault = decode(body)?;
                self.sender.arm(fault);
                Ok(SimAck::default())
            }
            _ => Err(RpcError::invalid("op", "unknown sim op")),
        }
    }

    /// Store the queued pages of `chat_id` through the batch path; returns how many messages
    /// were new.
    async fn serve_pages(&self, account: &str, chat_id: &str) -> anyhow::Result<u32> {
        let queued: Vec<(usize, String)> = self
            .pages
            .lock()
            .expect("sim pages lock")
            .iter()
            .enumerate()
            .filter(|(_, (a, _, _))| a == account)
            .map(|(i, (_, jid, _))| (i, jid.clone()))
            .collect();
        if queued.is_empty() {
            return Ok(0);
        }
        let client = self.pool.get().await?;
        let mut mine = Vec::new();
        for (i, jid) in queued {
            let row = client
                .query_opt(
                    "select chat_id from chat_aliases where account_id = $1 and jid = $2",
                    &[&account, &jid],
                )
                .await?;
            if row.is_some_and(|r| r.get::<_, &str>(0) == chat_id) {
                mine.push(i);
            }
        }
        drop(client);
        let messages: Vec<Inbound> = {
            let mut pages = self.pages.lock().expect("sim pages lock");
            let mut out = Vec::new();
            for i in mine.into_iter().rev() {
                let (_, _, msgs) = pages.remove(i);
                out.splice(0..0, msgs);
            }
            out
        };
        if messages.is_empty() {
            return Ok(0);
        }
        self.archive.ingest_batch(account, messages).await
    }
}

/// Log an archive failure once (without values) and return `internal`.
fn internal(e: anyhow::Error) -> RpcError {
    RpcError::internal(crate::error::Error::internal("sim", e).log())
}

fn ack_one(out: IngestOutcome) -> Result<SimAck, RpcError> {
    let stored = u32::from(matches!(
        out,
        IngestOutcome::Stored { .. }
            | IngestOutcome::Story { new: true, .. }
            | IngestOutcome::Applied { .. }
    ));
    match out {
        IngestOutcome::Invalid => Err(RpcError::invalid(
            "message",
            "not a message the archive understands",
        )),
        other => Ok(SimAck {
            stored,
            ids: other.id().map(str::to_owned).into_iter().collect(),
        }),
    }
}

fn ack_many(outcomes: &[IngestOutcome]) -> SimAck {
    SimAck {
        stored: outcomes
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    IngestOutcome::Stored { .. } | IngestOutcome::Story { new: true, .. }
                )
            })
            .count() as u32,
        ids: outcomes
            .iter()
            .map(|o| o.id().unwrap_or_default().to_owned())
            .collect(),
    }
}
