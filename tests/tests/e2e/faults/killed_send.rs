//! A worker SIGKILLed at a send's steps (#25 item 7), then started again: before the
//! reservation commits, after it before anything left (the hand-over under way), after the
//! transmission before WhatsApp's ack, and after the ack before the final state is journaled.
//! Each step is held by something real — a row lock on the key counter or on the journal row,
//! the sim's slow upload or its delayed ack — while the worker, a child process
//! (`ops::standby::worker_process`), is killed. Then the key is retried on a new worker: no key
//! transmits twice, and the answer is what the journal says.

use std::time::{Duration, Instant};

use wazap_shared::RpcError;
use wazap_shared::wire::send::{SendResult, SendState};
use wazap_shared::wire::sim::ArmSendFault;

use crate::send::Sending;

/// The worker as a process of its own, serving the stack's database and prefix: once it holds
/// the account's lease (the killed one's has expired) and has recorded it served.
async fn worker_process(s: &Sending) -> anyhow::Result<tokio::process::Child> {
    let child = crate::ops::standby::spawn_worker(&s.stack)?;
    let pid = child.id().expect("running").to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, holder) = crate::ops::standby::lease(s).await?;
        if holder.split(':').nth(1) == Some(pid.as_str())
            && s.stack
                .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                .await
                .is_ok()
        {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the worker process never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(child)
}

/// Until some session waits for a lock (`waiting`: the send is held where the test wants it),
/// or until none does (the dead worker's statement was cancelled).
async fn until_lock_waits(s: &Sending, waiting: bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiters: i64 = s
            .stack
            .pool
            .get()
            .await?
            .query_one("select count(*) from pg_locks where not granted", &[])
            .await?
            .get(0);
        if (waiters > 0) == waiting {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "lock waits never became {waiting} (a dead worker's statement still waits?)"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Once the worker's statement waits on the test's lock, SIGKILL the worker, and wait until its
/// server has cancelled that statement (the 1 s client check), so it cannot commit once the
/// lock goes.
async fn kill_while_held(s: &Sending, worker: &mut tokio::process::Child) -> anyhow::Result<()> {
    until_lock_waits(s, true).await?;
    worker.start_kill()?;
    worker.wait().await?;
    until_lock_waits(s, false).await
}

/// Fire `send_message` for `key` in the background (the killed worker never answers it).
fn fire(s: &Sending, key: &str) -> tokio::task::JoinHandle<Result<SendResult, RpcError>> {
    let deadline = Some(Duration::from_secs(20));
    crate::send::spawn_send(&s.stack, &s.grant, &s.chat, key, "killed", deadline)
}

async fn journal_state(s: &Sending, key: &str) -> anyhow::Result<Option<String>> {
    Ok(s.stack
        .pool
        .get()
        .await?
        .query_opt(
            "select state from send_journal where request_id = $1",
            &[&key],
        )
        .await?
        .map(|r| r.get(0)))
}

#[tokio::test]
async fn a_worker_killed_at_each_send_step_never_sends_a_key_twice() -> anyhow::Result<()> {
    let mut s = Sending::start().await?;
    s.stack.stop_worker().await?;

    // 1. Before the reservation commits: the key counter row is locked, the reservation waits.
    let mut worker = worker_process(&s).await?;
    let mut holder = s.stack.pool.get().await?;
    let lock = holder.transaction().await?;
    lock.execute(
        "select 1 from send_journal_keys where connection_id = $1 for update",
        &[&s.grant.connection_id],
    )
    .await?;
    let call = fire(&s, "before-reserve");
    kill_while_held(&s, &mut worker).await?;
    lock.rollback().await?;
    drop(holder);
    call.abort();
    assert_eq!(journal_state(&s, "before-reserve").await?, None);

    // 2. After the reservation, before anything left: the sim's upload takes 30 s.
    let mut worker = worker_process(&s).await?;
    s.arm(ArmSendFault {
        transmit_delay_ms: Some(30_000),
        ..Default::default()
    })
    .await?;
    let call = fire(&s, "before-transmit");
    let deadline = Instant::now() + Duration::from_secs(10);
    while journal_state(&s, "before-transmit").await?.is_none() {
        anyhow::ensure!(Instant::now() < deadline, "never reserved");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.start_kill()?;
    worker.wait().await?;
    call.abort();

    // 3. After the transmission, before the ack: the sim acknowledges after 30 s.
    let mut worker = worker_process(&s).await?;
    s.arm(ArmSendFault {
        ack_delay_ms: Some(30_000),
        ..Default::default()
    })
    .await?;
    let call = fire(&s, "before-ack");
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.transmissions().await?.is_empty() {
        anyhow::ensure!(Instant::now() < deadline, "never transmitted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.start_kill()?;
    worker.wait().await?;
    call.abort();
    assert_eq!(
        journal_state(&s, "before-ack").await?.as_deref(),
        Some("transmitting")
    );

    // 4. After the ack, before the final state: the journal row is locked, `accepted` waits.
    let mut worker = worker_process(&s).await?;
    s.arm(ArmSendFault {
        ack_delay_ms: Some(1_000),
        ..Default::default()
    })
    .await?;
    let mut holder = s.stack.pool.get().await?;
    let lock = holder.transaction().await?;
    let call = fire(&s, "before-final");
    let deadline = Instant::now() + Duration::from_secs(10);
    while journal_state(&s, "before-final").await?.is_none() {
        anyhow::ensure!(Instant::now() < deadline, "never reserved");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    lock.execute(
        "select 1 from send_journal where request_id = 'before-final' for update",
        &[],
    )
    .await?;
    kill_while_held(&s, &mut worker).await?;
    lock.rollback().await?;
    drop(holder);
    call.abort();

    // A new worker; every key retried.
    s.stack.start_worker().await?;
    let sent_before = s.transmissions().await?.len();
    let fresh = s.text(&s.chat, "before-reserve", "killed").await?;
    assert_eq!(
        (fresh.state, fresh.duplicate),
        (SendState::Accepted, false),
        "a key whose reservation never committed is sent, once"
    );
    for key in ["before-transmit", "before-ack", "before-final"] {
        let again = s.text(&s.chat, key, "killed").await?;
        assert!(again.duplicate, "{key} was sent again");
        assert_eq!(
            again.state,
            SendState::OutcomeUnknown,
            "{key}: it may have gone out, its outcome was not journaled"
        );
    }
    let transmitted = s.transmissions().await?;
    assert_eq!(
        transmitted.len(),
        sent_before + 1,
        "only the never-reserved key went out now"
    );
    let held: String = s
        .stack
        .pool
        .get()
        .await?
        .query_one(
            "select wa_id from send_journal where request_id = 'before-transmit'",
            &[],
        )
        .await?
        .get(0);
    assert!(
        transmitted.iter().all(|t| t.wa_id != held),
        "the key killed before it left went out"
    );
    let mut ids: Vec<_> = transmitted.iter().map(|t| t.wa_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), transmitted.len(), "a WhatsApp id went out twice");
    Ok(())
}

/// `kill -<signal> <pid>`.
fn signal(child: &tokio::process::Child, signal: &str) -> anyhow::Result<()> {
    let pid = child
        .id()
        .ok_or_else(|| anyhow::anyhow!("the worker has exited"))?;
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -{signal} failed");
    Ok(())
}

/// The worker is paused (SIGSTOP) with a send waiting for it, past the caller's deadline and
/// its own lease's: the caller is told the outcome is unknown. Resumed (SIGCONT), the worker
/// sees the deadline passed and transmits nothing; the retry returns the final state, `failed`.
#[tokio::test]
async fn a_worker_paused_past_the_deadline_transmits_nothing_when_it_resumes() -> anyhow::Result<()>
{
    let mut s = Sending::start().await?;
    s.stack.stop_worker().await?;
    let mut worker = worker_process(&s).await?;

    signal(&worker, "STOP")?;
    let cut = wazap_shared::bus::call::<wazap_shared::wire::send::SendMessage>(
        &s.stack.nats,
        &s.stack.subjects,
        Some(&s.grant),
        &wazap_shared::wire::send::SendMessageRequest {
            chat_id: s.chat.clone(),
            request_id: "paused".into(),
            text: "still there?".into(),
        },
        Some(Duration::from_secs(2)),
    )
    .await;
    let code = cut.expect_err("nobody answered in time").code;
    assert_eq!(code, wazap_shared::ErrorCode::SendOutcomeUnknown);
    // Past the lease's TTL too (nobody took it over: the worker renews it when it resumes).
    tokio::time::sleep(wazap_worker::lease::TTL).await;
    signal(&worker, "CONT")?;
    // The request that waited is taken up first, and journaled `failed` (its caller is gone).
    let deadline = Instant::now() + Duration::from_secs(15);
    while journal_state(&s, "paused").await?.is_none() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the waiting request was never taken up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let deadline = Instant::now() + Duration::from_secs(15);
    let retried = loop {
        match s.text(&s.chat, "paused", "still there?").await {
            Ok(r) => break r,
            Err(e) => {
                anyhow::ensure!(Instant::now() < deadline, "no answer after SIGCONT: {e:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    assert_eq!(
        (retried.state, retried.duplicate),
        (SendState::Failed, true),
        "the paused request was journaled failed, not sent"
    );
    assert!(
        s.transmissions().await?.is_empty(),
        "a send nobody waited for went out"
    );
    // The worker goes on serving under the same lease.
    let next = s.text(&s.chat, "after-pause", "back").await?;
    assert_eq!(next.state, SendState::Accepted);
    worker.start_kill()?;
    Ok(())
}
