//! The certificate switch never reaches a deploy build: the worker built as deployed (by
//! `scripts/check-deploy`, with the deploy builds' features) is pointed at the test network and
//! must refuse the network's certificate — the handshake begins and never completes — and it
//! never calls itself a test network. The same network completes handshakes with the test build
//! (every other test here).

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt as _;
use wazap_tests::{TestDb, nats_url, random_hex};

#[tokio::test]
async fn the_deploy_build_refuses_the_test_networks_certificate() -> anyhow::Result<()> {
    let Some(worker) = std::env::var_os("WAZAP_DEPLOY_WORKER") else {
        anyhow::bail!(
            "WAZAP_DEPLOY_WORKER is not set: run scripts/test, which builds the deploy worker \
             (scripts/check-deploy)"
        );
    };
    let net = super::start_network().await?;
    let db = TestDb::create().await?;
    let data = std::env::temp_dir().join(format!("wazap-deploy-{}", random_hex(6)));
    let mut child = tokio::process::Command::new(worker)
        .env_clear()
        .env("WAZAP_DATABASE_URL", &db.url)
        .env("WAZAP_NATS_URL", nats_url())
        .env("WAZAP_NATS_PREFIX", format!("t{}", random_hex(6)))
        .env("WAZAP_CONNECTOR", "whatsapp")
        .env("WAZAP_WHATSAPP_NETWORK", net.url())
        .env("WAZAP_DATA_DIR", &data)
        // The leak scan's capture, when on (the rest of the environment is cleared).
        .envs(
            std::env::var_os(wazap_shared::leak::DIR_VAR).map(|d| (wazap_shared::leak::DIR_VAR, d)),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while net.handshakes().0 == 0 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the deploy worker never reached the network"
        );
        anyhow::ensure!(
            child.try_wait()?.is_none(),
            "the deploy worker exited before connecting"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (hellos, completed) = net.handshakes();
    assert!(hellos >= 1);
    assert_eq!(
        completed, 0,
        "the deploy worker accepted a certificate WhatsApp never signed"
    );
    assert!(
        child.try_wait()?.is_none(),
        "it keeps running (and retrying)"
    );
    child.start_kill()?;
    let _ = child.wait().await;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr).await?;
    }
    assert!(
        !stderr.contains("TEST NETWORK"),
        "a deploy build must not think it is a test build"
    );
    let _ = std::fs::remove_dir_all(data);
    Ok(())
}
