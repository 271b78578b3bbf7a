//! A worker process killed with SIGKILL between receiving a message and committing it: WhatsApp
//! never heard an ack, so the server delivers the message again to the next worker, which
//! archives it exactly once. The killed worker is this test binary re-run as a worker process
//! ([`worker_process`]), so it is the real worker in a real process, built like the in-process one.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Linked, OWNER, account_until, count, read_until};

const CAROL: &str = "15550000003";

/// Not a test of its own: the body of the worker process [`a_worker_killed_before_its_commit_gets_the_message_again`]
/// starts by running this binary with `--ignored --exact` and the stack's environment.
#[tokio::test]
#[ignore = "run as a child process by the kill test"]
async fn worker_process() -> anyhow::Result<()> {
    let config = wazap_worker::Config::from_source(&wazap_shared::config::Env)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    wazap_worker::run(config, tokio_util::sync::CancellationToken::new()).await
}

#[tokio::test]
async fn a_worker_killed_before_its_commit_gets_the_message_again() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let mut linked = Linked::start(&net, &phone).await?;
    let device = *net.companions(OWNER).first().expect("the worker's device");

    // The same worker, now as a process of its own.
    linked.stack.stop_worker().await?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "network::killed::worker_process",
            "--ignored",
            "--nocapture",
        ])
        .env_remove(wazap_worker::config::OWNER_PASSWORD)
        .envs(linked.stack.worker_env())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;

    // Hold every insert into the archive; the message reaches the process and waits there.
    let mut holder = linked.stack.pool.get().await?;
    let lock = holder.transaction().await?;
    lock.batch_execute("lock table messages in share mode")
        .await?;
    let id = carol.send_text(OWNER, "kill me softly").await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = lock
            .query_one("select count(*) from pg_locks where not granted", &[])
            .await?
            .get(0);
        if waiting > 0 {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the worker never tried to archive it"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(net.unacknowledged(OWNER, device).contains(&id));

    child.start_kill()?;
    child.wait().await?;
    lock.rollback().await?;
    assert!(
        net.unacknowledged(OWNER, device).contains(&id),
        "a killed worker acknowledged what it never archived"
    );

    // The next worker is handed the message again and archives it once.
    linked.stack.start_worker().await?;
    let mcp = linked.reader().await?;
    let read = read_until(&mcp, json!({"chat_id": format!("+{CAROL}")}), |r| {
        count(r) >= 1
    })
    .await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while net.unacknowledged(OWNER, device).contains(&id) {
        anyhow::ensure!(Instant::now() < deadline, "never acknowledged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let read = mcp
        .call("read_messages", json!({"chat_id": read["chat_id"]}))
        .await?;
    let texts: Vec<&str> = read.ok()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts, ["kill me softly"], "archived exactly once");
    phone.stop().await;
    carol.stop().await;
    Ok(())
}
