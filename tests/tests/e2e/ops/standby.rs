//! One worker serves the account; a second one on the same database and prefix stands by (#25,
//! #27: one account, so its share is none): it takes no account while the holder lives, and takes over within 10 s when the holder is SIGKILLed in
//! the middle of sends and inbound messages — nothing transmitted twice, positions in order, a
//! `wait_for_messages` cursor loop across the takeover missing and repeating nothing. The holder
//! is this test binary re-run as a worker process ([`worker_process`]), so the kill is real.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wazap_shared::bus;
use wazap_shared::wire::send::SendState;
use wazap_shared::wire::wait::{WaitForMessages, WaitForMessagesRequest};
use wazap_tests::fixtures::{minutes_ago, person, text};

use crate::send::Sending;

/// Not a test of its own: the body of the worker process the takeover test kills.
#[tokio::test]
#[ignore = "run as a child process by the takeover test"]
async fn worker_process() -> anyhow::Result<()> {
    let config = wazap_worker::Config::from_source(&wazap_shared::config::Env)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    wazap_worker::run(config, CancellationToken::new()).await
}

/// This test binary re-run as `stack`'s worker ([`worker_process`]), killed on drop.
pub(crate) fn spawn_worker(stack: &wazap_tests::Stack) -> anyhow::Result<tokio::process::Child> {
    Ok(tokio::process::Command::new(std::env::current_exe()?)
        .args(["--exact", "ops::standby::worker_process", "--ignored"])
        .env_remove(wazap_worker::config::OWNER_PASSWORD)
        .envs(stack.worker_env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?)
}

/// The lease row: (epoch, holder).
pub(crate) async fn lease(s: &Sending) -> anyhow::Result<(i64, String)> {
    let row = s
        .stack
        .pool
        .get()
        .await?
        .query_one(
            "select epoch, coalesce(holder, '') from worker_lease where name = 'account:default'",
            &[],
        )
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// Until the lease's epoch passes `after` and a worker answers `ping`.
pub(crate) async fn served_after(s: &Sending, after: i64, within: Duration) -> anyhow::Result<i64> {
    let deadline = Instant::now() + within;
    loop {
        let (epoch, _) = lease(s).await?;
        if epoch > after
            && s.stack
                .rpc::<wazap_shared::wire::system::Ping>(&Default::default())
                .await
                .is_ok()
        {
            return Ok(epoch);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no worker took over in {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One poll of the cursor loop, retried while no worker answers (the takeover).
async fn poll(s: &Sending, cursor: Option<&str>) -> anyhow::Result<(String, Vec<String>)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let req = WaitForMessagesRequest {
            cursor: cursor.map(str::to_owned),
            ..Default::default()
        };
        match bus::call::<WaitForMessages>(
            &s.stack.nats,
            &s.stack.subjects,
            Some(&s.grant),
            &req,
            None,
        )
        .await
        {
            Ok(r) => {
                assert!(!r.cursor_reset, "the cursor was reset across the takeover");
                return Ok((
                    r.cursor,
                    r.messages.into_iter().map(|m| m.message_id).collect(),
                ));
            }
            Err(e) => {
                anyhow::ensure!(Instant::now() < deadline, "polls kept failing: {e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[tokio::test]
async fn a_standby_takes_over_a_killed_worker_within_10_s_and_nothing_repeats() -> anyhow::Result<()>
{
    let mut s = Sending::start().await?;
    // The cursor loop starts before anything arrives.
    let (mut cursor, first) = poll(&s, None).await?;
    assert!(first.is_empty());

    // The holder becomes a process of its own; the in-process worker gives the lease up.
    s.stack.stop_worker().await?;
    let (before, _) = lease(&s).await?;
    let mut holder = spawn_worker(&s.stack)?;
    let held = served_after(&s, before, Duration::from_secs(30)).await?;

    // The standby: the same configuration, in this process.
    let stop_standby = CancellationToken::new();
    let standby = tokio::spawn(wazap_worker::run(
        s.stack.worker_config(),
        stop_standby.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(lease(&s).await?.0, held, "the standby took a held lease");
    assert!(!standby.is_finished(), "the standby gave up");

    // Work while the holder lives, read through the loop.
    let mut injected = Vec::new();
    for i in 0..5 {
        injected.push(
            s.stack
                .inject(text(
                    &person("972503330001"),
                    &format!("pre{i}"),
                    minutes_ago(5),
                    "before",
                ))
                .await?,
        );
    }
    let sent = s.text(&s.chat, "before-kill", "sent by the holder").await?;
    assert_eq!(sent.state, SendState::Accepted);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !injected.iter().all(|id| seen.contains(id)) {
        anyhow::ensure!(Instant::now() < deadline, "the loop missed a message");
        let (next, ids) = poll(&s, Some(&cursor)).await?;
        cursor = next;
        seen.extend(ids);
    }

    // SIGKILL the holder with sends in flight: the first waits 3 s for its ack.
    s.arm(wazap_shared::wire::sim::ArmSendFault {
        ack_delay_ms: Some(3_000),
        ..Default::default()
    })
    .await?;
    let in_flight: Vec<_> = (0..4)
        .map(|i| {
            // A call the killed worker took is never answered: give up after 8 s.
            let deadline = Some(Duration::from_secs(8));
            let key = format!("during-{i}");
            crate::send::spawn_send(
                &s.stack,
                &s.grant,
                &s.chat,
                &key,
                "around the kill",
                deadline,
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    holder.start_kill()?;
    let killed = Instant::now();
    holder.wait().await?;
    let taken = served_after(&s, held, Duration::from_secs(10)).await?;
    let took = killed.elapsed();
    println!("takeover after SIGKILL: {took:?}");
    assert_eq!(taken, held + 1);
    assert!(took <= Duration::from_secs(10), "takeover took {took:?}");
    for call in in_flight {
        // Answered, or cut off by the kill; either way the journal decides below.
        let _ = call.await?;
    }

    // The new holder serves: more inbound, a new send, and retries of every key.
    for i in 0..5 {
        injected.push(
            s.stack
                .inject(text(
                    &person("972503330001"),
                    &format!("post{i}"),
                    minutes_ago(1),
                    "after",
                ))
                .await?,
        );
    }
    let after = s.text(&s.chat, "after-kill", "sent by the standby").await?;
    assert_eq!(after.state, SendState::Accepted);
    for key in [
        "before-kill",
        "during-0",
        "during-1",
        "during-2",
        "during-3",
    ] {
        // Every key answers: from the journal (recovery settled those in flight), or as a new
        // send when its first call never reached the holder.
        let text = if key == "before-kill" {
            "sent by the holder"
        } else {
            "around the kill"
        };
        let again = s.text(&s.chat, key, text).await?;
        if key == "before-kill" {
            assert!(again.duplicate && again.state == SendState::Accepted);
        }
    }
    let transmitted = s.transmissions().await?;
    let mut ids = HashSet::new();
    for t in &transmitted {
        assert!(
            ids.insert(t.wa_id.clone()),
            "a WhatsApp id transmitted twice"
        );
    }
    let keys: i64 = s
        .stack
        .pool
        .get()
        .await?
        .query_one("select count(*) from send_journal", &[])
        .await?
        .get(0);
    assert!(
        transmitted.len() as i64 <= keys,
        "more transmissions ({}) than journaled keys ({keys})",
        transmitted.len()
    );

    // The loop goes on from its cursor: everything after the kill, nothing again.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !injected.iter().all(|id| seen.contains(id)) && Instant::now() < deadline {
        let (next, ids) = poll(&s, Some(&cursor)).await?;
        cursor = next;
        seen.extend(ids);
    }
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a message came twice");
    for id in &injected {
        assert!(unique.contains(id), "message {id} was missed");
    }
    // Positions are unique and every one of them is readable in order.
    let gaps: i64 = s
        .stack
        .pool
        .get()
        .await?
        .query_one(
            "select count(*) - count(distinct position) from messages",
            &[],
        )
        .await?
        .get(0);
    assert_eq!(gaps, 0, "two messages share a position");

    stop_standby.cancel();
    standby.await??;
    Ok(())
}

/// The holder loses NATS (its server dies) while Postgres is fine: it gives its account up after
/// 3 s (and takes none until NATS is back), and the standby, which reaches NATS, takes over and
/// answers.
#[tokio::test]
async fn a_holder_cut_off_from_nats_gives_the_lease_to_a_standby_that_is_not() -> anyhow::Result<()>
{
    let mut s = Sending::start().await?;
    s.stack.stop_worker().await?;
    let (before, _) = lease(&s).await?;

    // The holder talks to a NATS of its own; the standby and the clients to the shared one.
    let mut cut_off = wazap_tests::fault::NatsServer::start().await?;
    let mut config = s.stack.worker_config();
    config.nats.url = cut_off.url();
    let stop_holder = CancellationToken::new();
    let holder = tokio::spawn(wazap_worker::run(config, stop_holder.clone()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while lease(&s).await?.0 == before {
        anyhow::ensure!(Instant::now() < deadline, "the holder never took the lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held = lease(&s).await?.0;
    let stop_standby = CancellationToken::new();
    let standby = tokio::spawn(wazap_worker::run(
        s.stack.worker_config(),
        stop_standby.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lease(&s).await?.0, held, "the standby took a held lease");

    let cut = Instant::now();
    cut_off.kill().await?;
    let taken = served_after(&s, held, Duration::from_secs(15)).await?;
    let took = cut.elapsed();
    println!("takeover after the holder lost NATS: {took:?}");
    assert_eq!(taken, held + 1);
    assert!(took <= Duration::from_secs(10), "takeover took {took:?}");
    assert!(
        !holder.is_finished(),
        "the cut-off worker goes on, serving nothing"
    );
    // The standby serves: a send goes out once.
    let sent = s.text(&s.chat, "after-cut", "from the standby").await?;
    assert_eq!(sent.state, SendState::Accepted);
    assert_eq!(lease(&s).await?.0, taken, "the cut-off worker took it back");

    stop_standby.cancel();
    standby.await??;
    stop_holder.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(15), holder).await?;
    Ok(())
}
