//! The old holder resumed (#25 item 7): a holder worker process is paused (SIGSTOP) past its
//! lease, the standby takes over and serves; then the paused one is resumed (SIGCONT) with work
//! waiting for it — the ack of a send it had handed over when it stopped, sends and an inbound
//! message NATS delivered to it while it slept, its background sweeps — and must write nothing:
//! its sessions carry the old epoch, which the fence (`wazap_fence()`, SQLSTATE `WZF01`)
//! refuses, so no fenced table changes and nothing more is transmitted. It notices the lost
//! lease and stops serving the account, and goes on as a worker with no account (the account's
//! new holder keeps it); sends through the new holder keep working.
//!
//! While the paused process's NATS connection lives (the server drops it after two missed
//! pings, minutes by default), its queue subscription still takes a share of the requests, which
//! go unanswered: calls meanwhile are retried with their key, as DESIGN §7 tells clients to.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wazap_shared::ErrorCode;
use wazap_shared::wire::send::{SendResult, SendState};
use wazap_shared::wire::sim::ArmSendFault;
use wazap_tests::fixtures::{minutes_ago, person, text};

use super::standby::{lease, served_after, spawn_worker};
use crate::send::{Sending, send_text_within, spawn_send};

/// `kill -<signal> <pid>`.
async fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .await?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid}: {status}");
    Ok(())
}

/// Every row of every fenced table with the transaction that wrote it, as one digest per
/// table, and the transmission count: any write (even of the same values) changes it.
async fn fenced_state(s: &Sending) -> anyhow::Result<Vec<(String, i64, String)>> {
    let db = s.stack.pool.get().await?;
    let tables: Vec<String> = db
        .query(
            "select distinct c.relname::text from pg_trigger t join pg_class c on c.oid = t.tgrelid
              where t.tgname = 'wazap_fence' order by 1",
            &[],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    anyhow::ensure!(tables.len() >= 10, "fenced tables: {tables:?}");
    let mut state = Vec::new();
    for table in tables
        .iter()
        .map(String::as_str)
        .chain(["sim_transmissions"])
    {
        let row = db
            .query_one(
                &format!(
                    "select count(*), coalesce(md5(string_agg(x, ',' order by x)), '')
                       from (select r.xmin::text || ':' || r::text as x from {table} r) rows"
                ),
                &[],
            )
            .await?;
        state.push((table.to_owned(), row.get(0), row.get(1)));
    }
    Ok(state)
}

/// A send retried with its key while the answer is retryable (a call the paused process took
/// is never answered).
async fn send_retrying(s: &Sending, key: &str, body: &str) -> anyhow::Result<SendResult> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let within = Some(Duration::from_secs(1));
        match send_text_within(&s.stack, &s.grant, &s.chat, key, body, within).await {
            Ok(r) => return Ok(r),
            Err(e) if matches!(e.code, ErrorCode::SendOutcomeUnknown) => {
                anyhow::ensure!(Instant::now() < deadline, "{key}: still {e:?}");
            }
            Err(e) => anyhow::bail!("{key}: {e:?}"),
        }
    }
}

#[tokio::test]
async fn a_holder_resumed_after_a_takeover_writes_nothing_and_serves_the_account_no_more()
-> anyhow::Result<()> {
    let mut s = Sending::start().await?;
    s.stack.stop_worker().await?;
    let (before, _) = lease(&s).await?;
    let mut holder = spawn_worker(&s.stack)?;
    let pid = holder.id().expect("the holder's pid");
    let held = served_after(&s, before, Duration::from_secs(30)).await?;
    let stop_standby = CancellationToken::new();
    let standby = tokio::spawn(wazap_worker::run(
        s.stack.worker_config(),
        stop_standby.clone(),
    ));
    let sent = s
        .text(&s.chat, "before-pause", "sent by the holder")
        .await?;
    assert_eq!(sent.state, SendState::Accepted);

    // Paused with a send handed over, its ack due 1 s later.
    s.arm(ArmSendFault {
        ack_delay_ms: Some(1_000),
        ..Default::default()
    })
    .await?;
    let handed = spawn_send(
        &s.stack,
        &s.grant,
        &s.chat,
        "handed-over",
        "paused mid-send",
        Some(Duration::from_secs(3)),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal(pid, "STOP").await?;
    let paused = Instant::now();
    // Work that reaches only the paused holder (the standby subscribes once it serves).
    let asleep: Vec<_> = (0..3)
        .map(|i| {
            let key = format!("asleep-{i}");
            let deadline = Some(Duration::from_millis(1_500));
            spawn_send(&s.stack, &s.grant, &s.chat, &key, "while paused", deadline)
        })
        .collect();
    let inbound = text(&person("972503330001"), "paused-in", minutes_ago(1), "hi");
    let lost = tokio::time::timeout(
        Duration::from_millis(1_500),
        s.stack.inject(inbound.clone()),
    );
    assert!(lost.await.is_err(), "a paused holder archived a message");
    for call in asleep {
        let e = call.await?.expect_err("a paused holder answered");
        assert_eq!(e.code, ErrorCode::SendOutcomeUnknown);
    }
    let _ = handed.await?;

    // The standby takes over and serves.
    let taken = served_after(&s, held, Duration::from_secs(15)).await?;
    println!("takeover of a paused holder: {:?}", paused.elapsed());
    assert_eq!(taken, held + 1);
    for i in 0..3 {
        let r = send_retrying(&s, &format!("new-{i}"), "from the new holder").await?;
        assert_eq!(r.state, SendState::Accepted);
    }
    let ids = s.stack.inject(inbound.clone()).await?;
    assert!(!ids.is_empty());

    // Resumed: it finds its lease taken and stops serving the account, having written nothing.
    // (The sim writes its transmission log behind the sends; asking for it waits for those
    // rows.) Its fleet looks again each second: two looks after the resume, its account's
    // renewal (each second too) has found the lease taken.
    s.transmissions().await?;
    let quiet = fenced_state(&s).await?;
    signal(pid, "CONT").await?;
    let resumed = s
        .stack
        .pool
        .get()
        .await?
        .query_one("select now()", &[])
        .await?;
    let resumed: chrono::DateTime<chrono::Utc> = resumed.get(0);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let seen: Option<chrono::DateTime<chrono::Utc>> = s
            .stack
            .pool
            .get()
            .await?
            .query_opt(
                "select seen_at from worker_presence where split_part(holder, ':', 2) = $1",
                &[&pid.to_string()],
            )
            .await?
            .map(|r| r.get(0));
        if seen.is_some_and(|t| t > resumed + chrono::Duration::seconds(2)) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the resumed holder never looked again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(holder.try_wait()?.is_none(), "the resumed worker exited");
    assert_eq!(
        lease(&s).await?.0,
        taken,
        "the resumed holder took the account back"
    );
    let after = fenced_state(&s).await?;
    for (was, now) in quiet.iter().zip(&after) {
        assert_eq!(was, now, "the resumed holder wrote to {}", was.0);
    }

    // The new holder goes on: each key answered once, the one cut by the pause settled.
    for i in 0..3 {
        let r = send_retrying(&s, &format!("asleep-{i}"), "while paused").await?;
        assert!(r.state == SendState::Accepted && !r.duplicate, "{r:?}");
    }
    let r = send_retrying(&s, "handed-over", "paused mid-send").await?;
    assert!(r.state == SendState::OutcomeUnknown && r.duplicate, "{r:?}");
    let transmitted = s.transmissions().await?;
    let mut wa_ids: Vec<_> = transmitted.iter().map(|t| t.wa_id.clone()).collect();
    wa_ids.sort();
    wa_ids.dedup();
    assert_eq!(
        wa_ids.len(),
        transmitted.len(),
        "a WhatsApp id went out twice"
    );
    // before-pause, handed-over, new-0..2, asleep-0..2.
    assert_eq!(transmitted.len(), 8, "{transmitted:?}");

    stop_standby.cancel();
    standby.await??;
    holder.start_kill()?;
    let _: ExitStatus = holder.wait().await?;
    Ok(())
}
