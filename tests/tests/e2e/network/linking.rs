//! Linking a phone from the dashboard: `pair_with_qr` → the phone scans the payload behind the
//! page's QR → the account goes `catching_up` → `live`, quickly. A QR left unscanned expires
//! and says so; an unlinked account links again and reads what arrives afterwards.
//! `wazap-worker link --phone` (in [`super::linking_cli`]) links from the terminal.

use std::time::{Duration, Instant};

use serde_json::json;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::system::Ping;
use wazap_tests::Stack;

use super::{Linked, OWNER, account_until, count, read_until};
use crate::owner::Owner;

const BOB: &str = "15550000002";
const CAROL: &str = "15550000003";

#[tokio::test]
async fn a_phone_links_from_the_dashboard_and_the_account_goes_live() -> anyhow::Result<()> {
    let net = super::start_network().await?;
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
    let net = super::start_network().await?;
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
    let net = super::start_network().await?;
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

/// The QR a client shows lasts 60 s; with one ref offered (`set_qr_refs(1)`) the client then
/// gives up. The dashboard stops showing the QR and says it expired, the stale payload links
/// nothing, and `pair_with_qr` shows a fresh QR that links. Takes ~60 s (the QR's lifetime).
#[tokio::test]
async fn an_unscanned_qr_expires_and_a_new_one_links() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    net.set_qr_refs(1);
    let phone = net.phone(OWNER, "Owner").await?;
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
    let stale = a["qr"].as_str().unwrap_or_default().to_owned();
    let expires: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(a["qr_expires_at"].clone())?;
    let left = expires - chrono::Utc::now();
    assert!(
        left > chrono::TimeDelta::seconds(40) && left <= chrono::TimeDelta::seconds(61),
        "the dashboard says the QR lasts {left}"
    );

    // Nobody scans it. (The dashboard hides the QR at its expiry time; the client's word that
    // it gave up follows within moments.)
    let (a, seen) = account_until(&owner, &gw, Duration::from_secs(75), |a| {
        a["qr"].is_null() && a["detail"].as_str().is_some_and(|d| d.contains("expired"))
    })
    .await?;
    let late = chrono::Utc::now() - expires;
    assert!(
        late > chrono::TimeDelta::seconds(-2) && late < chrono::TimeDelta::seconds(10),
        "the QR went away {late} after the time the dashboard gave"
    );
    assert_eq!(seen, ["unpaired"]);
    assert_eq!(a["state"], "unpaired", "{a}");
    assert!(a["qr_expires_at"].is_null(), "{a}");
    assert!(
        a["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("QR codes expired"),
        "{a}"
    );
    let page = owner.get(&gw, "/account").await?;
    assert!(
        page.text.contains("QR codes expired"),
        "the dashboard says so"
    );

    // The stale QR links nothing: the phone is told so, or nothing comes of it.
    let scanned = phone.scan(&stale);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        net.companions(OWNER).is_empty(),
        "a stale QR linked a device (scan: {scanned:?})"
    );
    assert_eq!(
        owner.get(&gw, "/api/account").await?.json["state"],
        "unpaired"
    );
    assert!(scanned.is_err(), "the phone accepted a stale QR");

    // Asking again shows a fresh QR, and that one links.
    let a = owner
        .post(&gw, "/api/account", json!({"action": "pair_with_qr"}))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(&owner, &gw, Duration::from_secs(10), |a| {
        a["qr"].as_str().is_some()
    })
    .await?;
    let fresh = a["qr"].as_str().unwrap_or_default().to_owned();
    assert_ne!(fresh, stale);
    assert!(
        !a["detail"].as_str().unwrap_or_default().contains("expired"),
        "{a}"
    );
    phone.scan(&fresh)?;
    account_until(&owner, &gw, Duration::from_secs(15), |a| {
        a["state"] == "live"
    })
    .await?;
    assert_eq!(net.companions(OWNER).len(), 1);
    phone.stop().await;
    Ok(())
}

/// Unlink from the dashboard: the account is `unpaired` and the phone's linked devices no
/// longer list the device. Linking again by QR gives a new device that is `live`, the archive
/// kept what it had, and a message a contact sends afterwards reads through `/mcp`. (The
/// contact writing afterwards is one who had not written before: wanet tells no contact of an
/// account's new device, so a contact's cached device list would still name the old one.)
#[tokio::test]
async fn an_unlinked_account_links_again_and_reads_new_messages() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let bob = net.phone(BOB, "Bob").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let linked = Linked::start(&net, &phone).await?;
    let (owner, gw) = (&linked.owner, &linked.gw);
    let device = net.companions(OWNER)[0];
    let mcp = linked.reader().await?;
    carol.send_text(OWNER, "before the unlink").await?;
    read_until(&mcp, json!({"chat_id": format!("+{CAROL}")}), |r| {
        count(r) == 1
    })
    .await?;

    let a = owner
        .post(gw, "/api/account", json!({"action": "unlink"}))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(owner, gw, Duration::from_secs(10), |a| {
        a["state"] == "unpaired"
    })
    .await?;
    assert!(
        a["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("unlinked"),
        "{a}"
    );
    assert!(
        net.companions(OWNER).is_empty(),
        "the phone still lists the unlinked device"
    );
    assert!(!net.is_online(OWNER, device));

    let a = owner
        .post(gw, "/api/account", json!({"action": "pair_with_qr"}))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(owner, gw, Duration::from_secs(10), |a| {
        a["qr"].as_str().is_some()
    })
    .await?;
    phone.scan(a["qr"].as_str().unwrap_or_default())?;
    account_until(owner, gw, Duration::from_secs(15), |a| a["state"] == "live").await?;
    let now = net.companions(OWNER);
    assert_eq!(now.len(), 1);
    assert_ne!(now[0], device, "a new device, not the old one back");

    bob.send_text(OWNER, "after linking again").await?;
    let read = read_until(&mcp, json!({"chat_id": format!("+{BOB}")}), |r| {
        count(r) == 1
    })
    .await?;
    assert_eq!(read["messages"][0]["text"], "after linking again");
    assert_eq!(read["sync"], "live");
    // What the archive held survives the unlink.
    let kept = mcp
        .call("read_messages", json!({"chat_id": format!("+{CAROL}")}))
        .await?;
    assert_eq!(kept.ok()["messages"][0]["text"], "before the unlink");
    assert_eq!(count(kept.ok()), 1);
    phone.stop().await;
    bob.stop().await;
    carol.stop().await;
    Ok(())
}
