//! The reference model of one credential's send journal: what each operation must answer, and
//! what the journal, its key counter and the sim's transmission log hold afterwards.

use std::collections::BTreeMap;

use wazap_shared::ErrorCode;
use wazap_shared::wire::send::SendState;
use wazap_worker::send::journal::JOURNAL_CAP;

/// What a send carries: one of two chats, one of two texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Content {
    pub(crate) chat: usize,
    pub(crate) text: usize,
}

/// A fault armed on the sim for the next hand-over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The upload fails: nothing transmitted (a nack before transmission).
    FailUpload,
    /// Transmitted, then the provider errs.
    ErrorAfterTransmit,
    /// Transmitted, never acknowledged (within a short wait).
    NoAck,
}

/// Where a call is cut off (its task ends there, as in a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Before anything reached the journal.
    BeforeReservation,
    /// Reserved (`transmitting`), not yet handed to the connector.
    AfterReservation,
    /// Transmitted, no outcome journaled.
    AfterTransmission,
}

/// One operation of a case.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `send_message` with key `k{key}`.
    Send { key: u8, content: Content },
    /// Calls of one key at once, each with its content (the same, or not).
    Together { key: u8, contents: Vec<Content> },
    /// A call whose caller's deadline has passed by its reservation.
    Late { key: u8, content: Content },
    /// Arm a fault for the next hand-over.
    Arm(Fault),
    /// A call on a key the journal does not hold, cut off at `step`.
    Crash {
        key: u8,
        content: Content,
        step: Step,
    },
    /// A new process: empty memos, no call handled, start-up recovery.
    Restart,
    /// The session can send (`live`) or not (`offline`).
    Session { live: bool },
    /// The key counter set `room` keys below the cap.
    Room(u8),
}

/// A key's state in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyState {
    Accepted,
    Failed,
    Unknown,
    /// `transmitting` with no call left to finish it.
    InFlight,
}

impl KeyState {
    /// The journal's word for it.
    pub(crate) fn stored(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Failed => "failed",
            Self::Unknown => "outcome_unknown",
            Self::InFlight => "transmitting",
        }
    }

    fn answer(self) -> SendState {
        match self {
            Self::Accepted => SendState::Accepted,
            Self::Failed => SendState::Failed,
            Self::Unknown | Self::InFlight => SendState::OutcomeUnknown,
        }
    }
}

/// What a call must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    Sent { state: SendState, duplicate: bool },
    Refused(ErrorCode),
}

/// One key as the journal holds it.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub(crate) content: Content,
    pub(crate) state: KeyState,
}

/// The whole model.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) keys: BTreeMap<u8, Key>,
    /// The credential's key counter.
    pub(crate) counted: i32,
    pub(crate) armed: Option<Fault>,
    pub(crate) live: bool,
    /// Hand-overs that reached the wire.
    pub(crate) transmissions: usize,
}

impl Model {
    pub(crate) fn new() -> Self {
        Self {
            keys: BTreeMap::new(),
            counted: 0,
            armed: None,
            live: true,
            transmissions: 0,
        }
    }

    /// Whether `op` applies: a crash needs a call that reaches a new reservation.
    pub(crate) fn applies(&self, op: &Op) -> bool {
        match op {
            Op::Crash { key, .. } => {
                self.live && !self.keys.contains_key(key) && self.counted < JOURNAL_CAP
            }
            _ => true,
        }
    }

    /// One call of `key` with `content` (`late`: its deadline passed), and what it answers.
    pub(crate) fn send(&mut self, key: u8, content: Content, late: bool) -> Expect {
        if !self.live {
            return Expect::Refused(ErrorCode::SessionCannotSend);
        }
        if let Some(k) = self.keys.get_mut(&key) {
            if k.content != content {
                return Expect::Refused(ErrorCode::SendRequestConflict);
            }
            // Nobody finishes an abandoned key: its retry settles it.
            if k.state == KeyState::InFlight {
                k.state = KeyState::Unknown;
            }
            return Expect::Sent {
                state: k.state.answer(),
                duplicate: true,
            };
        }
        if self.counted >= JOURNAL_CAP {
            return Expect::Refused(ErrorCode::SendJournalFull);
        }
        self.counted += 1;
        let state = if late {
            KeyState::Failed
        } else {
            match self.armed.take() {
                None => {
                    self.transmissions += 1;
                    KeyState::Accepted
                }
                Some(Fault::FailUpload) => KeyState::Failed,
                Some(Fault::ErrorAfterTransmit | Fault::NoAck) => {
                    self.transmissions += 1;
                    KeyState::Unknown
                }
            }
        };
        self.keys.insert(key, Key { content, state });
        Expect::Sent {
            state: state.answer(),
            duplicate: false,
        }
    }

    /// Calls of `key` with `contents` at once: whatever they answer must be what one order
    /// of them answers one after the other. Every order: its answers (in call order) and the
    /// model after it.
    pub(crate) fn orders(&self, key: u8, contents: &[Content]) -> Vec<(Vec<Expect>, Model)> {
        permutations(contents.len())
            .into_iter()
            .map(|order| {
                let mut m = self.clone();
                let mut want = vec![None; contents.len()];
                for i in order {
                    want[i] = Some(m.send(key, contents[i], false));
                }
                (
                    want.into_iter().map(|w| w.expect("every call")).collect(),
                    m,
                )
            })
            .collect()
    }

    /// A call cut off at `step` (which [`Model::applies`]).
    pub(crate) fn crash(&mut self, key: u8, content: Content, step: Step) {
        if step == Step::BeforeReservation {
            return;
        }
        // The cut-off call armed its own fault, which replaced any other.
        self.armed = None;
        self.counted += 1;
        if step == Step::AfterTransmission {
            self.transmissions += 1;
        }
        self.keys.insert(
            key,
            Key {
                content,
                state: KeyState::InFlight,
            },
        );
    }

    /// Start-up recovery: whatever was left in flight may have gone out.
    pub(crate) fn restart(&mut self) {
        // (The in-process sim keeps its armed fault: it is not restarted.)
        for k in self.keys.values_mut() {
            if k.state == KeyState::InFlight {
                k.state = KeyState::Unknown;
            }
        }
    }
}

/// Every order of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut all = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            all.push(p);
        }
    }
    all
}
