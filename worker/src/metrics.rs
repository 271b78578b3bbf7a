//! The worker's OpenTelemetry metrics, recorded through these few helpers so the recording
//! points stay one line each: requests by op and outcome with their latency (the dispatcher),
//! sends by final state (the send path), receipts of sent messages by kind and outcome (the
//! journal's receipt recorder), messages archived (the archive writer's commit), failures of
//! supervised tasks by task and action ([`crate::supervise`]), and gauges read
//! at export time: the session state, the Postgres pool and the NATS connection.
//!
//! Attributes are op names, outcome codes and states only: never a chat, a phone number, text or
//! a token. Without `OTEL_EXPORTER_OTLP_ENDPOINT` the global meter is a no-op and recording
//! costs next to nothing.

use std::sync::LazyLock;
use std::time::Duration;

use deadpool_postgres::Pool;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use wazap_shared::wire::SyncState;

/// The instruments, created on first use (after `telemetry::init` installed the provider).
struct Instruments {
    requests: Counter<u64>,
    duration: Histogram<f64>,
    sends: Counter<u64>,
    receipts: Counter<u64>,
    archived: Counter<u64>,
    lease_lost: Counter<u64>,
    task_failures: Counter<u64>,
}

fn meter() -> Meter {
    opentelemetry::global::meter("wazap-worker")
}

static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| {
    let m = meter();
    Instruments {
        requests: m
            .u64_counter("wazap.worker.rpc.requests")
            .with_description("RPC requests answered, by op and outcome (ok or an error code)")
            .build(),
        duration: m
            .f64_histogram("wazap.worker.rpc.duration")
            .with_unit("s")
            .with_description("Time from receiving an RPC request to publishing its reply")
            .build(),
        sends: m
            .u64_counter("wazap.worker.sends")
            .with_description("Sends that reached a final state, by state")
            .build(),
        receipts: m
            .u64_counter("wazap.worker.receipts")
            .with_description(
                "Delivery/read receipts of sent messages, one per message id, by kind (delivered, \
                 read, played) and outcome (recorded: set a journal time; unchanged: a repeat or \
                 not a journaled send; failed: the write failed)",
            )
            .build(),
        archived: m
            .u64_counter("wazap.worker.messages.archived")
            .with_description("Messages newly stored in the archive (the ingest rate)")
            .build(),
        lease_lost: m
            .u64_counter("wazap.worker.lease.lost")
            .with_description(
                "Worker leases lost to another worker that took them over; the worker stops \
                 after each",
            )
            .build(),
        task_failures: m
            .u64_counter("wazap.worker.task.failures")
            .with_description(
                "Supervised tasks that panicked or failed, by task and action (restart: started \
                 again after a backoff; exit: the worker stops)",
            )
            .build(),
    }
});

/// The lease was lost: another worker took it over.
pub fn lease_lost() {
    INSTRUMENTS.lease_lost.add(1, &[]);
}

/// One RPC request answered with `outcome` (`ok` or an error code) after `elapsed`.
pub fn rpc(op: &str, outcome: &'static str, elapsed: Duration) {
    let attrs = [
        KeyValue::new("op", op.to_owned()),
        KeyValue::new("outcome", outcome),
    ];
    INSTRUMENTS.requests.add(1, &attrs);
    INSTRUMENTS.duration.record(elapsed.as_secs_f64(), &attrs);
}

/// One new send journaled in its final `state` (`accepted`, `failed`, `outcome_unknown`).
pub fn send(state: &'static str) {
    INSTRUMENTS.sends.add(1, &[KeyValue::new("state", state)]);
}

/// `count` message ids of one receipt of `kind` that ended in `outcome` (`recorded`,
/// `unchanged`, `failed`).
pub fn receipts(kind: &'static str, outcome: &'static str, count: usize) {
    if count > 0 {
        let attrs = [
            KeyValue::new("kind", kind),
            KeyValue::new("outcome", outcome),
        ];
        INSTRUMENTS.receipts.add(count as u64, &attrs);
    }
}

/// `count` messages committed to the archive (duplicates not counted).
pub fn archived(count: usize) {
    if count > 0 {
        INSTRUMENTS.archived.add(count as u64, &[]);
    }
}

/// The supervised task `task` failed; `action` is `restart` or `exit` ([`crate::supervise`]).
pub fn task_failed(task: &'static str, action: &'static str) {
    let attrs = [KeyValue::new("task", task), KeyValue::new("action", action)];
    INSTRUMENTS.task_failures.add(1, &attrs);
}

/// Every session state, so the gauge reports 1 for the current one and 0 for the rest.
const STATES: [SyncState; 6] = [
    SyncState::Live,
    SyncState::CatchingUp,
    SyncState::Offline,
    SyncState::Paused,
    SyncState::Unpaired,
    SyncState::Demo,
];

/// Register the gauges read at each export: session state (of the account `session_state`
/// reports), pool connections (in use, idle) and waiters, NATS connected. Call once per worker, when it starts serving.
pub fn register_gauges(
    session_states: impl Fn() -> Vec<(String, SyncState)> + Clone + Send + Sync + 'static,
    pool: &Pool,
    nats: &async_nats::Client,
) {
    let m = meter();
    let served = session_states.clone();
    m.u64_observable_gauge("wazap.worker.accounts.served")
        .with_description("How many accounts this worker serves now (it holds their leases)")
        .with_callback(move |o| o.observe(served().len() as u64, &[]))
        .build();
    m.u64_observable_gauge("wazap.worker.session.state")
        .with_description("1 for each served account's current session state, 0 for the others")
        .with_callback(move |o| {
            for (account, now) in session_states() {
                for s in STATES {
                    o.observe(
                        u64::from(s == now),
                        &[
                            KeyValue::new("account", account.clone()),
                            KeyValue::new("state", s.as_str()),
                        ],
                    );
                }
            }
        })
        .build();
    let pool = pool.clone();
    m.u64_observable_gauge("wazap.worker.db.pool.connections")
        .with_description("Postgres pool connections by state (in_use, idle) and callers waiting")
        .with_callback(move |o| {
            let s = pool.status();
            let idle = s.available as u64;
            o.observe(
                (s.size as u64).saturating_sub(idle),
                &[KeyValue::new("state", "in_use")],
            );
            o.observe(idle, &[KeyValue::new("state", "idle")]);
            o.observe(s.waiting as u64, &[KeyValue::new("state", "waiting")]);
        })
        .build();
    let nats = nats.clone();
    m.u64_observable_gauge("wazap.worker.nats.connected")
        .with_description("1 while the NATS connection is up")
        .with_callback(move |o| {
            let up = nats.connection_state() == async_nats::connection::State::Connected;
            o.observe(u64::from(up), &[]);
        })
        .build();
}
