//! A state-machine model of the send journal (DESIGN §5 "Journal", "States"), run against the
//! worker's real send path — its RPC entry, the Postgres journal, the `sim` connector over
//! NATS — and checked against a reference model (`send_model/model.rs`) after every step.
//!
//! Operations: a new key; the same key with the same content (answered from the journal, never
//! transmitted again); the same key with other content or another chat
//! (`send_request_conflict`); simultaneous calls with one key, with one content (one
//! transmission, the rest duplicates) or several (explained by some order of them); a call whose
//! deadline passed by its reservation (`failed`, nothing handed over); faults armed on the sim
//! (a nack before transmission, a provider error or no ack after it); a call cut off before its
//! reservation, after it, and after the transmission, with or without a restart (new process
//! state, start-up recovery) after it; the session offline; the key counter near its cap.
//! After each step: every answer, the credential's journal rows and key counter, and the sim's
//! transmission log (this case's count; no WhatsApp id twice).
//!
//! A crash is played in process: the call's task is aborted at its step (its hold on the key
//! ends with it, as a dead process's does) and a restart is a new `AppState` (empty memos, no
//! call handled) on the same database and connector plus start-up recovery. Without a restart
//! the same cut-off is a call that could not journal its outcome in a running worker. (The sim
//! itself is not restarted: its armed fault survives; the real process kill with
//! `crash_after_transmit` is `tests/e2e/send/crash.rs`.)
//!
//! `WAZAP_MODEL_CASES` sets the number of random cases (default 24, ~10 s; each case is one
//! credential on one shared database, so cases are cheap; 400 ran in ~2 min). Failing cases
//! are shrunk and their seeds kept in `worker/proptest-regressions/send_model.txt`, committed
//! and replayed first; sequences worth keeping by name are the fixed cases.

mod common;
#[path = "send_model/model.rs"]
mod model;
#[path = "send_model/sut.rs"]
mod sut;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use wazap_shared::RpcError;
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::send::SendResult;
use wazap_shared::wire::sim::UpsertContact;

use common::{Harness, phone};
use model::{Content, Expect, Fault, Model, Op, Step};
use sut::Sut;

fn content() -> impl Strategy<Value = Content> {
    (0usize..2, 0usize..2).prop_map(|(chat, text)| Content { chat, text })
}

fn op() -> impl Strategy<Value = Op> {
    // Few keys, so that keys repeat.
    let key = 0u8..4;
    prop_oneof![
        6 => (key.clone(), content()).prop_map(|(key, content)| Op::Send { key, content }),
        // Mostly one content (one transmission, duplicates), sometimes others (conflicts).
        2 => (key.clone(), content(), prop::collection::vec(prop::option::weighted(0.3, content()), 1..3))
            .prop_map(|(key, first, more)| Op::Together {
                key,
                contents: std::iter::once(first)
                    .chain(more.into_iter().map(|c| c.unwrap_or(first)))
                    .collect(),
            }),
        1 => (key.clone(), content()).prop_map(|(key, content)| Op::Late { key, content }),
        2 => prop::sample::select(vec![Fault::FailUpload, Fault::ErrorAfterTransmit, Fault::NoAck])
            .prop_map(Op::Arm),
        2 => (key, content(), prop::sample::select(vec![
                Step::BeforeReservation, Step::AfterReservation, Step::AfterTransmission,
            ]))
            .prop_map(|(key, content, step)| Op::Crash { key, content, step }),
        1 => Just(Op::Restart),
        1 => any::<bool>().prop_map(|live| Op::Session { live }),
        1 => (0u8..3).prop_map(Op::Room),
    ]
}

/// Whether `got` is what the model expected.
fn matches(expect: Expect, got: &Result<SendResult, RpcError>) -> bool {
    match (expect, got) {
        (Expect::Sent { state, duplicate }, Ok(r)) => r.state == state && r.duplicate == duplicate,
        (Expect::Refused(code), Err(e)) => e.code == code,
        _ => false,
    }
}

/// Run `ops` on a fresh credential, comparing with the model after each.
async fn run_case(h: &Harness, chats: &[String; 2], ops: &[Op]) -> Result<(), TestCaseError> {
    let mut sut = Sut::start(h, chats).await;
    let mut model = Model::new();
    // Each key's message id, from its first answer: every later answer repeats it.
    let mut ids = std::collections::BTreeMap::<u8, String>::new();
    for (i, op) in ops.iter().enumerate() {
        let at = format!("step {i} ({op:?})");
        if !model.applies(op) {
            continue;
        }
        let answers = match op {
            Op::Send { key, content } => {
                let want = model.send(*key, *content, false);
                vec![(*key, want, sut.send(*key, *content, false).await)]
            }
            Op::Late { key, content } => {
                let want = model.send(*key, *content, true);
                vec![(*key, want, sut.send(*key, *content, true).await)]
            }
            Op::Together { key, contents } => {
                let got = sut.together(*key, contents).await;
                // The calls race: some order of them must explain every answer.
                let explained = model
                    .orders(*key, contents)
                    .into_iter()
                    .find(|(want, _)| want.iter().zip(&got).all(|(w, g)| matches(*w, g)));
                let Some((want, after)) = explained else {
                    return Err(TestCaseError::fail(format!(
                        "{at}: no order of the calls answers {got:?}"
                    )));
                };
                model = after;
                want.into_iter()
                    .zip(got)
                    .map(|(w, g)| (*key, w, g))
                    .collect()
            }
            Op::Arm(fault) => {
                model.armed = Some(*fault);
                sut.arm(*fault).await;
                vec![]
            }
            Op::Crash { key, content, step } => {
                model.crash(*key, *content, *step);
                sut.crash(*key, *content, *step)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                vec![]
            }
            Op::Restart => {
                model.restart();
                sut.restart().await;
                vec![]
            }
            Op::Session { live } => {
                model.live = *live;
                sut.session(*live).await;
                vec![]
            }
            Op::Room(room) => {
                model.counted = sut.room(*room).await;
                vec![]
            }
        };
        for (key, want, got) in answers {
            prop_assert!(
                matches(want, &got),
                "{}: expected {:?}, got {:?}",
                at,
                want,
                got
            );
            if let Ok(r) = &got {
                let id = r.message_id.clone().unwrap_or_default();
                let first = ids.entry(key).or_insert_with(|| id.clone());
                prop_assert_eq!(&*first, &id, "{}: the key's message id changed", at);
            }
        }
        let want_rows: std::collections::BTreeMap<String, String> = model
            .keys
            .iter()
            .map(|(k, v)| (format!("k{k}"), v.state.stored().to_owned()))
            .collect();
        prop_assert_eq!(sut.rows().await, want_rows, "{}: journal rows", at);
        prop_assert_eq!(sut.counted().await, model.counted, "{}: key counter", at);
        let sent = sut
            .transmitted()
            .await
            .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
        prop_assert_eq!(sent, model.transmissions, "{}: transmissions", at);
    }
    Ok(())
}

/// Two chats to send to, made once per harness.
async fn chats(h: &Harness) -> [String; 2] {
    let mut ids = Vec::new();
    for (digits, name) in [("972505550101", "Model One"), ("972505550102", "Model Two")] {
        let ack = h
            .sim(
                sim_op::UPSERT_CONTACT,
                &UpsertContact {
                    jid: phone(digits),
                    lid: None,
                    name: name.into(),
                },
            )
            .await;
        ids.push(ack.ids[0].clone());
    }
    ids.try_into().expect("two chats")
}

/// The test's runtime: one thread, so that a call spawned and aborted at once never ran
/// (`Step::BeforeReservation`).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Every operation at least once, in sequences found worth keeping (each a regression of its
/// own), whatever the random cases below draw.
#[test]
fn the_send_journal_follows_its_model_in_fixed_cases() {
    use Fault::*;
    use Step::*;
    let c = |chat, text| Content { chat, text };
    let send = |key, content| Op::Send { key, content };
    let together = |key, contents| Op::Together { key, contents };
    let crash = |key, step| Op::Crash {
        key,
        content: c(0, 0),
        step,
    };
    let cases: Vec<(&str, Vec<Op>)> = vec![
        (
            "new key, same content, other text, other chat",
            vec![
                send(0, c(0, 0)),
                send(0, c(0, 0)),
                send(0, c(0, 1)),
                send(0, c(1, 0)),
            ],
        ),
        (
            "simultaneous calls: new key, known key, other contents",
            vec![
                together(1, vec![c(0, 0); 3]),
                together(1, vec![c(0, 0); 2]),
                together(2, vec![c(0, 0), c(0, 1), c(1, 0)]),
                together(3, vec![c(1, 1), c(0, 1), c(1, 1)]),
            ],
        ),
        (
            "nack before transmission, errors after it",
            vec![
                Op::Arm(FailUpload),
                send(0, c(0, 0)),
                send(0, c(0, 0)),
                Op::Arm(ErrorAfterTransmit),
                send(1, c(0, 0)),
                Op::Arm(NoAck),
                send(2, c(1, 1)),
                send(2, c(1, 1)),
            ],
        ),
        (
            "a passed deadline: failed, nothing handed over, the fault left armed",
            vec![
                Op::Arm(NoAck),
                Op::Late {
                    key: 0,
                    content: c(0, 0),
                },
                send(0, c(0, 0)),
                send(1, c(0, 0)),
            ],
        ),
        (
            "crash at each step, then restart",
            vec![
                crash(0, BeforeReservation),
                crash(1, AfterReservation),
                crash(2, AfterTransmission),
                Op::Restart,
                send(0, c(0, 0)),
                send(1, c(0, 0)),
                send(2, c(0, 0)),
            ],
        ),
        (
            "an abandoned key retried without a restart",
            vec![
                crash(3, AfterTransmission),
                send(3, c(0, 0)),
                send(3, c(0, 1)),
            ],
        ),
        (
            "simultaneous retries of an abandoned key",
            vec![crash(4, AfterReservation), together(4, vec![c(0, 0); 2])],
        ),
        (
            "session offline refuses new and known keys",
            vec![
                send(0, c(0, 0)),
                Op::Session { live: false },
                send(0, c(0, 0)),
                send(1, c(0, 0)),
                Op::Session { live: true },
                send(1, c(0, 0)),
            ],
        ),
        (
            "the cap: known keys still answer, new ones are refused",
            vec![
                send(0, c(0, 0)),
                Op::Room(1),
                send(1, c(0, 0)),
                send(2, c(0, 0)),
                send(0, c(0, 0)),
                together(3, vec![c(0, 0); 2]),
            ],
        ),
    ];
    let rt = runtime();
    let h = rt.block_on(Harness::start());
    let chats = rt.block_on(chats(&h));
    let mut failed = Vec::new();
    for (name, ops) in &cases {
        if let Err(e) = rt.block_on(run_case(&h, &chats, ops)) {
            failed.push(format!("{name}: {e}"));
        }
    }
    rt.block_on(h.finish());
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn the_send_journal_follows_its_model() {
    let cases = std::env::var("WAZAP_MODEL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24);
    let rt = runtime();
    let h = rt.block_on(Harness::start());
    let chats = rt.block_on(chats(&h));
    let mut runner = TestRunner::new(Config {
        cases,
        // Relative to the crate (where tests run): proptest's default looks for the seeds
        // beside a `lib.rs`, which an integration test does not have.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/send_model.txt",
        ))),
        ..Config::default()
    });
    let ops = prop::collection::vec(op(), 1..20);
    let result = runner.run(&ops, |ops| rt.block_on(run_case(&h, &chats, &ops)));
    rt.block_on(h.finish());
    if let Err(e) = result {
        panic!("{e}");
    }
}
