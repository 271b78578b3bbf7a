//! Faults survived (#25 item 7), with the fault harness (`wazap_tests::fault`): Postgres crashed
//! (`pg_ctl stop -m immediate`) and started again under a send load and under inbound messages,
//! the worker's Postgres link stalled (a blackhole) during sends, and the answer to a
//! reservation lost. Each test runs a worker in-process on its own throwaway Postgres cluster,
//! never the machine's server.

mod inbound;
mod killed_send;
mod lost_reply;
mod send_load;
mod stalled_link;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{SendResult, SendState};
use wazap_shared::{ErrorCode, RpcError};
use wazap_tests::Stack;

/// A retry's deadline: a key with a final state answers at once.
const RETRY_DEADLINE: Duration = Duration::from_secs(8);

/// The text every load send carries (the same for a key's retries).
pub(crate) const LOAD_TEXT: &str = "load";

/// One load `send_message` through NATS as the gateway forwards it, within `deadline`.
pub(crate) async fn send(
    stack: &Stack,
    grant: &VerifiedGrant,
    chat: &str,
    key: &str,
    deadline: Duration,
) -> Result<SendResult, RpcError> {
    crate::send::send_text_within(stack, grant, chat, key, LOAD_TEXT, Some(deadline)).await
}

/// A journal row: state and WhatsApp id, by request id.
pub(crate) async fn journal(
    pool: &deadpool_postgres::Pool,
) -> anyhow::Result<HashMap<String, (String, String)>> {
    let rows = pool
        .get()
        .await?
        .query("select request_id, state, wa_id from send_journal", &[])
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect())
}

/// The WhatsApp ids the sim transmitted, asserting none twice; every one must be a journaled
/// key's (no transmission without a durable reservation).
pub(crate) async fn transmitted_once(
    stack: &Stack,
    journal: &HashMap<String, (String, String)>,
) -> anyhow::Result<HashSet<String>> {
    let mut ids = HashSet::new();
    for t in crate::send::transmissions(stack).await? {
        assert!(
            ids.insert(t.wa_id.clone()),
            "WhatsApp id {} transmitted twice",
            t.wa_id
        );
    }
    let journaled: HashSet<&String> = journal.values().map(|(_, wa)| wa).collect();
    for id in &ids {
        assert!(
            journaled.contains(id),
            "{id} was transmitted without a journal row"
        );
    }
    Ok(ids)
}

/// Until `ready` answers true, polling every 100 ms for at most `within`; how long it took.
/// How long until a send is accepted again after a fault (fresh `probe-N` keys), at most 15 s.
pub(crate) async fn until_accepted_again(
    stack: &Arc<Stack>,
    grant: &VerifiedGrant,
    chat: &str,
) -> anyhow::Result<Duration> {
    let mut probe = 0;
    until(Duration::from_secs(15), || {
        probe += 1;
        let key = format!("probe-{probe}");
        let (stack, grant, chat) = (stack.clone(), grant.clone(), chat.to_owned());
        async move {
            matches!(
                send(&stack, &grant, &chat, &key, Duration::from_secs(3)).await,
                Ok(r) if r.state == SendState::Accepted
            )
        }
    })
    .await
}

pub(crate) async fn until<F, Fut>(within: Duration, mut ready: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while !ready().await {
        anyhow::ensure!(
            started.elapsed() < within,
            "not recovered within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(started.elapsed())
}

/// One answer of a send load.
pub(crate) struct Answer {
    pub(crate) key: String,
    /// When the call went out (wall clock, to compare with the journal's `created_at`).
    pub(crate) sent: chrono::DateTime<chrono::Utc>,
    pub(crate) at: Instant,
    pub(crate) result: Result<SendResult, RpcError>,
}

/// Senders, each sending new keys in a loop and recording every answer.
pub(crate) struct Load {
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: CancellationToken,
    senders: Vec<JoinHandle<()>>,
}

impl Load {
    /// `senders` loops of `send_message` to `chat`, each call within `deadline`.
    pub(crate) fn start(
        stack: &Arc<Stack>,
        grant: &VerifiedGrant,
        chat: &str,
        senders: usize,
        deadline: Duration,
    ) -> Self {
        let answers = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let senders = (0..senders)
            .map(|i| {
                let (stack, grant, chat) = (stack.clone(), grant.clone(), chat.to_owned());
                let (answers, stop) = (answers.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.is_cancelled() {
                        let key = format!("load-{i}-{n}");
                        n += 1;
                        let sent = chrono::Utc::now();
                        let result = send(&stack, &grant, &chat, &key, deadline).await;
                        let failed = result.is_err();
                        let at = Instant::now();
                        answers.lock().unwrap().push(Answer {
                            key,
                            sent,
                            at,
                            result,
                        });
                        if failed {
                            // Errors come fast while Postgres is away: do not spin.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                })
            })
            .collect();
        Self {
            answers,
            stop,
            senders,
        }
    }

    /// Stop sending; every answer, in the order they came.
    pub(crate) async fn finish(self) -> anyhow::Result<Vec<Answer>> {
        self.stop.cancel();
        for s in self.senders {
            s.await?;
        }
        Ok(std::mem::take(&mut *self.answers.lock().unwrap()))
    }
}

/// A send's state as the journal spells it.
fn journal_state(s: SendState) -> &'static str {
    match s {
        SendState::Accepted => "accepted",
        SendState::Failed => "failed",
        SendState::OutcomeUnknown => "outcome_unknown",
    }
}

/// What a user of the load must find after the fault (`fault_at`: when it began): every key
/// that got an error answers a retry; every answer holds in the journal (accepted and failed
/// exactly, outcome_unknown still in flight at most); nothing answered failed was transmitted;
/// no WhatsApp id went out twice, none without a journal row.
pub(crate) async fn check_load(
    stack: &Arc<Stack>,
    grant: &VerifiedGrant,
    chat: &str,
    answers: &[Answer],
    fault_at: Instant,
) -> anyhow::Result<()> {
    let first = journal(&stack.pool).await?;
    let mut errored: HashMap<&str, usize> = HashMap::new();
    for a in answers.iter().filter(|a| a.result.is_err()) {
        let state = first
            .get(&a.key)
            .map_or("not journaled", |(s, _)| s.as_str());
        *errored.entry(state).or_default() += 1;
    }
    println!("keys that got an error, by journal state before their retry: {errored:?}");

    // Every key that got an error, and those answered around the fault: each retry must
    // answer what the journal holds, sending nothing again.
    let around = fault_at - Duration::from_secs(2);
    let retries: Vec<_> = answers
        .iter()
        .filter(|a| a.result.is_err() || a.at >= around)
        .map(|a| {
            let (stack, grant, chat, key) =
                (stack.clone(), grant.clone(), chat.to_owned(), a.key.clone());
            tokio::spawn(async move {
                let r = send(&stack, &grant, &chat, &key, RETRY_DEADLINE).await;
                (key, r)
            })
        })
        .collect();
    let started = Instant::now();
    let mut retried = Vec::new();
    for r in retries {
        retried.push(r.await?);
    }
    println!(
        "{} retries answered in {:?}",
        retried.len(),
        started.elapsed()
    );

    let journal = journal(&stack.pool).await?;
    let transmitted = transmitted_once(stack, &journal).await?;
    for a in answers {
        let Ok(r) = &a.result else { continue };
        let when = if a.at < fault_at { "before" } else { "after" };
        let (state, wa_id) = journal.get(&a.key).unwrap_or_else(|| {
            panic!(
                "{} was answered {:?} ({when} the fault), not journaled",
                a.key, r.state
            )
        });
        // An `outcome_unknown` answer may be any state by now (a lost COMMIT reply: accepted).
        if r.state != SendState::OutcomeUnknown {
            assert_eq!(
                state,
                journal_state(r.state),
                "{} was answered {:?} ({when} the fault), the journal says {state}",
                a.key,
                r.state,
            );
        }
        if r.state == SendState::Failed {
            assert!(
                !transmitted.contains(wa_id),
                "{} was answered failed but transmitted",
                a.key
            );
        }
    }
    // The sim logs transmissions off the send path and commits them asynchronously (a batch
    // that fails is written again, once each): a Postgres crash can still lose the last rows
    // it committed, which would hide a transmission from the checks here. Say how many
    // accepted sends it lost.
    let unlogged = journal
        .values()
        .filter(|(state, wa_id)| state == "accepted" && !transmitted.contains(wa_id))
        .count();
    println!("accepted sends missing from the sim's transmission log: {unlogged}");
    // Whatever the answers were: a key the journal calls failed never went out.
    for (key, (state, wa_id)) in &journal {
        assert!(
            state != "failed" || !transmitted.contains(wa_id),
            "{key} is journaled failed but was transmitted"
        );
    }
    // A retry answers from the journal. A key the fault left `transmitting` (its call could
    // journal no outcome) is settled `outcome_unknown` by its retry at once, since no call in
    // the worker handles it any more (`send::handling`); only a key whose first call is still
    // under way (waiting for a pooled connection, say) keeps its retry waiting, which its
    // deadline may cut off: counted and reported, and never transmitted again.
    let answered_before: HashMap<&str, SendState> = answers
        .iter()
        .filter_map(|a| Some((a.key.as_str(), a.result.as_ref().ok()?.state)))
        .collect();
    let (mut stuck, mut stuck_sent) = (0, 0);
    for (key, r) in &retried {
        let (state, wa_id) = journal.get(key).expect("a retried key is journaled");
        match r {
            Ok(r) => {
                assert_eq!(
                    state,
                    journal_state(r.state),
                    "the retry of {key} disagrees"
                );
                answered_before.get(key.as_str()).inspect(|&&first| {
                    assert!(r.duplicate, "the retry of {key} was sent as new");
                    assert!(
                        first == SendState::OutcomeUnknown || first == r.state,
                        "{key} was answered {first:?}, its retry {:?}",
                        r.state
                    );
                });
            }
            Err(e) => {
                assert!(
                    state == "transmitting"
                        && matches!(
                            e.code,
                            ErrorCode::SendOutcomeUnknown | ErrorCode::DeadlineExceeded
                        ),
                    "the retry of {key} (journaled {state}) failed: {e:?}"
                );
                stuck += 1;
                stuck_sent += usize::from(transmitted.contains(wa_id));
            }
        }
    }
    println!(
        "{stuck} retried keys still transmitting after recovery ({stuck_sent} of them transmitted)"
    );
    Ok(())
}
