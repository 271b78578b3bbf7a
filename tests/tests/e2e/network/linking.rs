//! Linking a phone from the dashboard: `pair_with_qr` → the phone scans the payload behind the
//! page's QR → the account goes `catching_up` → `live`, quickly.

use std::time::{Duration, Instant};

use serde_json::json;
use wanet::Network;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::system::Ping;
use wazap_tests::Stack;

use super::account_until;
use crate::owner::Owner;

#[tokio::test]
async fn a_phone_links_from_the_dashboard_and_the_account_goes_live() -> anyhow::Result<()> {
    let net = Network::start().await?;
    let phone = net.phone("15550000001", "Owner").await?;
    let stack = Stack::whatsapp(&net.url()).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;

    let a = owner
        .post(&gw, "/api/account", json!({"action": "pair_with_qr"}))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(&owner, &gw, Duration::from_secs(10), |a| {
        a["qr"].as_str().is_some()
    })
    .await?;
    assert_eq!(a["state"], "unpaired");
    let qr = a["qr"].as_str().unwrap_or_default().to_owned();

    let scanned = Instant::now();
    phone.scan(&qr)?;
    let (_, seen) = account_until(&owner, &gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    let took = scanned.elapsed();
    assert!(
        seen.iter()
            .all(|s| ["unpaired", "offline", "catching_up", "live"].contains(&s.as_str())),
        "{seen:?}"
    );
    assert_eq!(
        stack.rpc::<Ping>(&Default::default()).await?.sync,
        SyncState::Live
    );
    eprintln!("linked: scan → live in {took:?}; states {seen:?}");
    // Not a speed budget (wazap-bench measures speed): a guard that no library wait was
    // waited out, such as the 10 s whatsapp-rust grants a new device for its app-state key.
    assert!(
        took < Duration::from_secs(8),
        "linking waited out a timeout: {took:?}"
    );

    // A second link attempt while linked is refused and says why.
    let again = owner
        .post(&gw, "/api/account", json!({"action": "pair_with_qr"}))
        .await?;
    assert_eq!(again.status, 400, "{}", again.text);
    phone.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_phone_links_with_the_pairing_code_the_dashboard_shows() -> anyhow::Result<()> {
    let net = Network::start().await?;
    let phone = net.phone("15550000001", "Owner").await?;
    let stack = Stack::whatsapp(&net.url()).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let a = owner
        .post(
            &gw,
            "/api/account",
            json!({"action": "pair_with_code", "phone": "+15550000001"}),
        )
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(&owner, &gw, Duration::from_secs(10), |a| {
        a["pairing_code"].as_str().is_some()
    })
    .await?;
    let code = a["pairing_code"].as_str().unwrap_or_default().to_owned();
    assert!(owner.get(&gw, "/account").await?.text.contains(&code));

    phone.enter_code(&code)?;
    account_until(&owner, &gw, Duration::from_secs(15), |a| {
        a["state"] == "live"
    })
    .await?;
    assert_eq!(net.companions("15550000001").len(), 1);
    phone.stop().await;
    Ok(())
}

/// The dashboard in headless Chromium (`tests/browser/link.mjs`): the page's QR code, its text
/// handed to the simulated phone, and the page saying `live`.
#[tokio::test]
async fn a_phone_links_through_the_dashboard_in_headless_chromium() -> anyhow::Result<()> {
    use tokio::io::AsyncBufReadExt as _;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser");
    anyhow::ensure!(
        dir.join("node_modules/playwright-core").exists(),
        "tests/browser/node_modules is missing: run `npm ci` in tests/browser (see .ci/run)"
    );
    let artifacts =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser-artifacts");
    let net = Network::start().await?;
    let phone = net.phone("15550000001", "Owner").await?;
    let stack = Stack::whatsapp(&net.url()).await?;
    let gw = stack.gateway(&[]).await?;
    wazap_worker::owner::set_password(&stack.pool, crate::owner::PASSWORD).await?;
    let mut child = tokio::process::Command::new("node")
        .arg("link.mjs")
        .current_dir(&dir)
        .env("WAZAP_DASHBOARD", format!("http://{}", gw.owner_addr))
        .env("WAZAP_PASSWORD", crate::owner::PASSWORD)
        .env("WAZAP_ARTIFACTS", &artifacts)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut linked = false;
    let run = async {
        while let Some(line) = lines.next_line().await? {
            if let Some(qr) = line.strip_prefix("QR ") {
                phone.scan(qr)?;
            } else if line == "LINKED live" {
                linked = true;
            }
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .map_err(|_| anyhow::anyhow!("the browser script did not finish in 120 s"))??;
    let status = child.wait().await?;
    assert!(status.success(), "link.mjs failed (its stderr above)");
    assert!(linked);
    phone.stop().await;
    Ok(())
}
