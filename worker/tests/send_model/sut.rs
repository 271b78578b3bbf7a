//! The system under test: the worker's send path (its RPC entry, `send_message`) on a real
//! Postgres journal with the `sim` connector over NATS — one credential per case — and what
//! the model is checked against: answers, journal rows, the key counter, the transmission log.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use wazap_shared::RpcError;
use wazap_shared::bus::{Deadline, decode_reply};
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::{op, sim_op};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::send::{SendMessageRequest, SendResult};
use wazap_shared::wire::sim::{ArmSendFault, SetState};
use wazap_worker::send::journal::JOURNAL_CAP;
use wazap_worker::state::AppState;

use super::common::{Harness, sender, transmissions};
use super::model::{Content, Fault, Step};

/// The two texts a key may carry (nothing personal: the journal never holds them anyway).
const TEXTS: [&str; 2] = ["model text zero", "model text one"];

/// How long a cut-off call is given to reach its step.
const REACH: Duration = Duration::from_secs(10);

/// One case's worker and credential.
pub(crate) struct Sut<'h> {
    h: &'h Harness,
    /// The process's state: replaced by a restart.
    state: AppState,
    grant: VerifiedGrant,
    chats: &'h [String; 2],
    /// Transmissions logged before this case.
    before: usize,
}

impl<'h> Sut<'h> {
    /// A new credential that may send to both `chats`, the session live, no fault armed.
    pub(crate) async fn start(h: &'h Harness, chats: &'h [String; 2]) -> Self {
        let grant = sender(h, SendMode::All, vec![]).await;
        h.sim(sim_op::ARM_SEND_FAULT, &ArmSendFault::default())
            .await;
        h.sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::Live,
            },
        )
        .await;
        let before = transmissions(h).await.len();
        Self {
            h,
            state: h.state.clone(),
            grant,
            chats,
            before,
        }
    }

    fn request(&self, key: u8, content: Content) -> SendMessageRequest {
        SendMessageRequest {
            chat_id: self.chats[content.chat].clone(),
            request_id: format!("k{key}"),
            text: TEXTS[content.text].to_owned(),
        }
    }

    /// One `send_message` call, `late` with a deadline already passed.
    pub(crate) async fn send(
        &self,
        key: u8,
        content: Content,
        late: bool,
    ) -> Result<SendResult, RpcError> {
        let deadline = late.then(|| Deadline::at(SystemTime::now() - Duration::from_secs(1)));
        call(
            self.state.clone(),
            self.grant.clone(),
            self.request(key, content),
            deadline,
        )
        .await
    }

    /// Calls of `key` at once, one per content.
    pub(crate) async fn together(
        &self,
        key: u8,
        contents: &[Content],
    ) -> Vec<Result<SendResult, RpcError>> {
        let all: Vec<_> = contents
            .iter()
            .map(|content| {
                tokio::spawn(call(
                    self.state.clone(),
                    self.grant.clone(),
                    self.request(key, *content),
                    None,
                ))
            })
            .collect();
        let mut answers = Vec::new();
        for task in all {
            answers.push(task.await.expect("a call ends"));
        }
        answers
    }

    /// Arm `fault` on the sim.
    pub(crate) async fn arm(&self, fault: Fault) {
        let f = match fault {
            Fault::FailUpload => ArmSendFault {
                fail_upload: true,
                ..Default::default()
            },
            Fault::ErrorAfterTransmit => ArmSendFault {
                error_after_transmit: true,
                ..Default::default()
            },
            Fault::NoAck => ArmSendFault {
                no_ack: true,
                no_ack_wait_ms: Some(20),
                ..Default::default()
            },
        };
        self.h.sim(sim_op::ARM_SEND_FAULT, &f).await;
    }

    /// A call of a new key, cut off at `step`: its task is aborted there (before it was ever
    /// polled; while the sim holds it before transmitting; while it waits for an ack after
    /// transmitting). Its hold on the key ends with it, as a crashed process's does.
    pub(crate) async fn crash(&self, key: u8, content: Content, step: Step) -> Result<(), String> {
        let hold = match step {
            Step::BeforeReservation => None,
            Step::AfterReservation => Some(ArmSendFault {
                transmit_delay_ms: Some(60_000),
                ..Default::default()
            }),
            Step::AfterTransmission => Some(ArmSendFault {
                no_ack: true,
                no_ack_wait_ms: Some(60_000),
                ..Default::default()
            }),
        };
        if let Some(f) = &hold {
            self.h.sim(sim_op::ARM_SEND_FAULT, f).await;
        }
        let sent = transmissions(self.h).await.len();
        let task = tokio::spawn(call(
            self.state.clone(),
            self.grant.clone(),
            self.request(key, content),
            None,
        ));
        let started = Instant::now();
        loop {
            let reached = match step {
                // The test runs on one thread: the task has not run yet.
                Step::BeforeReservation => true,
                Step::AfterReservation => self.rows().await.contains_key(&format!("k{key}")),
                Step::AfterTransmission => transmissions(self.h).await.len() > sent,
            };
            if reached {
                break;
            }
            if task.is_finished() || started.elapsed() > REACH {
                return Err(format!("the call never reached {step:?}: {:?}", task.await));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        task.abort();
        let _ = task.await;
        if hold.is_some() {
            // Cut off before the sim took it, the hold would delay the next hand-over.
            self.h
                .sim(sim_op::ARM_SEND_FAULT, &ArmSendFault::default())
                .await;
        }
        Ok(())
    }

    /// A new process on the same database and connector: empty memos, no call handled, then
    /// start-up recovery.
    pub(crate) async fn restart(&mut self) {
        let h = self.h;
        self.state = AppState::new(
            h.pool.clone(),
            h.state.meta.clone(),
            h.nats.clone(),
            h.subjects.clone(),
            h.supervisor.clone(),
        );
        (self.state).serve(h.pool.clone(), h.archive.clone(), h.connector.clone(), None);
        wazap_worker::send::recovery::recover(&h.pool, "default")
            .await
            .expect("recovery");
    }

    /// The session can send, or not.
    pub(crate) async fn session(&self, live: bool) {
        let state = if live {
            SyncState::Live
        } else {
            SyncState::Offline
        };
        self.h.sim(sim_op::SET_STATE, &SetState { state }).await;
    }

    /// The credential's key counter set `room` below the cap.
    pub(crate) async fn room(&self, room: u8) -> i32 {
        let keys = JOURNAL_CAP - i32::from(room);
        let n = self
            .h
            .pool
            .get()
            .await
            .expect("db")
            .execute(
                "update send_journal_keys set keys = $2 where connection_id = $1",
                &[&self.grant.connection_id, &keys],
            )
            .await
            .expect("counter");
        assert_eq!(n, 1, "the credential has its counter row");
        keys
    }

    /// The journal's rows of this credential: request id → state.
    pub(crate) async fn rows(&self) -> BTreeMap<String, String> {
        self.h
            .pool
            .get()
            .await
            .expect("db")
            .query(
                "select request_id, state from send_journal where connection_id = $1",
                &[&self.grant.connection_id],
            )
            .await
            .expect("journal")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    /// The credential's key counter.
    pub(crate) async fn counted(&self) -> i32 {
        self.h
            .pool
            .get()
            .await
            .expect("db")
            .query_one(
                "select keys from send_journal_keys where connection_id = $1",
                &[&self.grant.connection_id],
            )
            .await
            .expect("counter")
            .get(0)
    }

    /// This case's transmissions, after checking that no WhatsApp id went out twice (over the
    /// whole log).
    pub(crate) async fn transmitted(&self) -> Result<usize, String> {
        let all = transmissions(self.h).await;
        let mut seen = HashSet::new();
        if let Some(t) = all.iter().find(|t| !seen.insert(t.wa_id.clone())) {
            return Err(format!("WhatsApp id {} transmitted twice", t.wa_id));
        }
        Ok(all.len() - self.before)
    }
}

/// `send_message` through the worker's RPC entry inside `deadline`, as the dispatcher runs it.
async fn call(
    state: AppState,
    grant: VerifiedGrant,
    req: SendMessageRequest,
    deadline: Option<Deadline>,
) -> Result<SendResult, RpcError> {
    let body = serde_json::to_vec(&req).expect("body");
    let work = wazap_worker::rpc::dispatch(&state, op::SEND_MESSAGE, Some(&grant), &body);
    let (reply, _) = Deadline::scope(deadline, work).await;
    decode_reply(&reply)
}
