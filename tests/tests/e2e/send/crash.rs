//! A worker that dies right after handing a message over (the sim's `crash_after_transmit`
//! aborts the process, as a kill -9 would end it): after a restart the send reads as
//! `outcome_unknown`, the same key transmits nothing again, its text shows as an unconfirmed
//! send, and the worker's own log (stderr at debug level) never carried the text.
//!
//! The worker runs as a child process: the binary `target/<profile>/wazap-worker`, found next
//! to this test's executable (nextest and `cargo test --workspace` build it first).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use wazap_shared::bus;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::{Subjects, sim_op};
use wazap_shared::wire::grants::{ReadScope, SendMode};
use wazap_shared::wire::read::{ReadMessages, ReadMessagesRequest};
use wazap_shared::wire::send::{
    GetSendStatus, GetSendStatusRequest, SendMessage, SendMessageRequest, SendState,
};
use wazap_shared::wire::sim::{ArmSendFault, SimAck, Transmissions, UpsertContact};
use wazap_shared::wire::system::Ping;
use wazap_tests::fixtures::person;
use wazap_tests::{TestDb, nats_url};
use wazap_worker::grants::{NewConnection, PermissionEdit, create_connection, set_send_permission};

fn worker_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| anyhow::anyhow!("no target directory above {}", exe.display()))?;
    let bin = dir.join("wazap-worker");
    anyhow::ensure!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p wazap-worker, or run the tests with \
         cargo nextest run --workspace)",
        bin.display()
    );
    Ok(bin)
}

fn spawn(bin: &PathBuf, db: &str, prefix: &str, log: &std::path::Path) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    Ok(Command::new(bin)
        .env("WAZAP_DATABASE_URL", db)
        .env("WAZAP_NATS_URL", nats_url())
        .env("WAZAP_NATS_PREFIX", prefix)
        .env("WAZAP_CONNECTOR", "sim")
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()?)
}

async fn wait_ready(
    nats: &async_nats::Client,
    subjects: &Subjects,
    child: &mut Child,
) -> anyhow::Result<()> {
    for _ in 0..600 {
        if bus::call::<Ping>(
            nats,
            subjects,
            None,
            &Default::default(),
            Some(Duration::from_millis(500)),
        )
        .await
        .is_ok()
        {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("the worker exited during start: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("the worker did not answer ping")
}

async fn sim<T: serde::Serialize, R: serde::de::DeserializeOwned>(
    nats: &async_nats::Client,
    subjects: &Subjects,
    op: &str,
    body: &T,
) -> anyhow::Result<R> {
    let msg = tokio::time::timeout(
        Duration::from_secs(10),
        nats.request(subjects.sim(op), serde_json::to_vec(body)?.into()),
    )
    .await??;
    Ok(bus::decode_reply(&msg.payload)?)
}

#[tokio::test]
async fn a_crash_after_transmission_reads_as_outcome_unknown_and_never_retransmits()
-> anyhow::Result<()> {
    let bin = worker_binary()?;
    let db = TestDb::create().await?;
    let prefix = format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let subjects = Subjects::new(prefix.clone());
    let nats = async_nats::connect(nats_url()).await?;
    let log = std::env::temp_dir().join(format!("{prefix}-worker.log"));
    let mut child = spawn(&bin, &db.url, &prefix, &log)?;
    wait_ready(&nats, &subjects, &mut child).await?;

    let pool = wazap_worker::db::pool(&db.url, 2)?;
    let chat = sim::<_, SimAck>(
        &nats,
        &subjects,
        sim_op::UPSERT_CONTACT,
        &UpsertContact {
            jid: person("972504440001"),
            lid: None,
            name: "Gal".into(),
        },
    )
    .await?
    .ids
    .remove(0);
    let (conn, token) = create_connection(
        &pool,
        NewConnection {
            name: "crash".into(),
            kind: wazap_shared::grant::ConnectionKind::Local,
            expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
            read_scope: ReadScope::all(),
        },
    )
    .await?;
    set_send_permission(
        &pool,
        PermissionEdit {
            id: conn.id.clone(),
            revision: None,
            mode: SendMode::All,
            chats: vec![],
            expected_send_revision: None,
        },
    )
    .await?;
    let grant = VerifiedGrant {
        connection_id: conn.id.clone(),
        revision: 0,
        loopback: true,
        token,
    };
    let marker = format!("crash-marker-{}", uuid::Uuid::new_v4().simple());
    let req = SendMessageRequest {
        chat_id: chat.clone(),
        request_id: "crash-1".into(),
        text: marker.clone(),
    };

    sim::<_, SimAck>(
        &nats,
        &subjects,
        sim_op::ARM_SEND_FAULT,
        &ArmSendFault {
            crash_after_transmit: true,
            ..Default::default()
        },
    )
    .await?;
    let answer = bus::call::<SendMessage>(
        &nats,
        &subjects,
        Some(&grant),
        &req,
        Some(Duration::from_secs(5)),
    )
    .await;
    assert!(
        answer.is_err(),
        "the worker died before answering: {answer:?}"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await??;
    assert!(!status.success(), "the worker aborted");

    let mut child = spawn(&bin, &db.url, &prefix, &log)?;
    wait_ready(&nats, &subjects, &mut child).await?;
    let status = bus::call::<GetSendStatus>(
        &nats,
        &subjects,
        Some(&grant),
        &GetSendStatusRequest {
            request_id: "crash-1".into(),
        },
        None,
    )
    .await?;
    assert_eq!(status.state, SendState::OutcomeUnknown);
    assert!(status.message_id.is_some());
    let again = bus::call::<SendMessage>(&nats, &subjects, Some(&grant), &req, None).await?;
    assert_eq!(
        (again.state, again.duplicate),
        (SendState::OutcomeUnknown, true)
    );
    let log_entries: Transmissions = sim(
        &nats,
        &subjects,
        sim_op::TRANSMISSIONS,
        &serde_json::json!({}),
    )
    .await?;
    assert_eq!(
        log_entries.transmissions.len(),
        1,
        "transmitted once, never again"
    );

    let read = bus::call::<ReadMessages>(
        &nats,
        &subjects,
        Some(&grant),
        &ReadMessagesRequest {
            chat_id: chat,
            ..Default::default()
        },
        None,
    )
    .await?;
    assert_eq!(read.unconfirmed_sends.len(), 1);
    assert_eq!(read.unconfirmed_sends[0].draft_id, "crash-1");
    assert_eq!(read.unconfirmed_sends[0].text, marker);

    child.start_kill()?;
    let _ = child.wait().await;
    let logged = std::fs::read_to_string(&log)?;
    let _ = std::fs::remove_file(&log);
    assert!(
        logged.contains("aborting the worker"),
        "the log was captured"
    );
    assert!(!logged.contains(&marker), "the text never reaches the log");
    Ok(())
}
