//! The session's truth through the dashboard: the phone logging the device out, another client
//! taking the connection over, and a dropped socket.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Linked, OWNER, account_until, read_until};

const DAN: &str = "15550000004";

#[tokio::test]
async fn logout_from_the_phone_unpairs_and_deletes_the_device_store() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let linked = Linked::start(&net, &phone).await?;
    let store = linked
        .stack
        .worker_config()
        .data_dir
        .join("whatsapp.sqlite");
    assert!(store.exists());
    let device = net.companions(OWNER)[0];

    net.unlink(OWNER, device);
    let (a, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "unpaired"
    })
    .await?;
    assert!(
        a["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("logged this device out"),
        "{a}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.exists() {
        anyhow::ensure!(Instant::now() < deadline, "the dead device store was kept");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let page = linked.owner.get(&linked.gw, "/account").await?;
    assert!(
        page.text.contains("logged this device out"),
        "the dashboard says so"
    );

    // Linking again works (a new device for the same phone).
    let a = linked
        .owner
        .post(
            &linked.gw,
            "/api/account",
            json!({"action": "pair_with_qr"}),
        )
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    let (a, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["qr"].as_str().is_some()
    })
    .await?;
    phone.scan(a["qr"].as_str().unwrap_or_default())?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "live"
    })
    .await?;
    assert_eq!(net.companions(OWNER).len(), 1);
    assert_ne!(net.companions(OWNER)[0], device);
    phone.stop().await;
    Ok(())
}

#[tokio::test]
async fn another_client_taking_over_stops_the_session_without_a_reconnect_loop()
-> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];

    assert!(net.take_over(OWNER, device));
    let (a, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "offline"
    })
    .await?;
    assert!(
        a["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("another client took over"),
        "{a}"
    );
    let (_, before) = net.handshakes();
    stays_offline(&net, device, before, "wazap reconnected by itself").await;

    // The owner resumes from the dashboard: live again.
    resume(&linked).await?;
    phone.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_dropped_socket_reconnects_and_nothing_sent_meanwhile_is_lost() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let dan = net.phone(DAN, "Dan").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];

    assert!(net.drop_socket(OWNER, device));
    let (_, seen) = account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "offline"
    })
    .await?;
    // Sent while the worker is away: queued by the server for the worker's device.
    dan.send_text(OWNER, "while you were away").await?;
    let (_, after) = account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    eprintln!("states: {seen:?} then {after:?}");
    let mcp = linked.reader().await?;
    read_until(&mcp, json!({"chat_id": format!("+{DAN}")}), |r| {
        r["messages"][0]["text"] == "while you were away"
    })
    .await?;
    assert!(net.unacknowledged(OWNER, device).is_empty());
    phone.stop().await;
    dan.stop().await;
    Ok(())
}

/// A pause is the owner's, not the process's (#27): the worker restarted does not reconnect a
/// paused account — no handshake, the device offline on the network, the dashboard `paused` —
/// until the owner resumes it.
#[tokio::test]
async fn a_paused_account_stays_paused_when_the_worker_restarts() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let mut linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];

    let a = linked
        .owner
        .post(&linked.gw, "/api/account", json!({"action": "pause"}))
        .await?;
    assert_eq!(a.json["state"], "paused", "{}", a.text);
    linked.stack.stop_worker().await?;
    let (_, before) = net.handshakes();
    linked.stack.start_worker().await?;
    let a = linked.owner.get(&linked.gw, "/api/account").await?;
    assert_eq!(a.json["state"], "paused", "{}", a.text);
    stays_offline(&net, device, before, "the restarted worker connected").await;

    resume(&linked).await?;
    assert!(net.is_online(OWNER, device));
    // Resumed is kept too: the next restart connects.
    linked.stack.stop_worker().await?;
    linked.stack.start_worker().await?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(15), |a| {
        a["state"] == "live"
    })
    .await?;
    phone.stop().await;
    Ok(())
}

/// For 2 s: no handshake after the `before`-th, and `device` offline on the network (`why`: what
/// a handshake would mean).
async fn stays_offline(net: &wanet::Network, device: u16, before: u64, why: &str) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(net.handshakes().1, before, "{why}");
    assert!(!net.is_online(OWNER, device));
}

/// The owner resumes the account from the dashboard; until it is `live` again (15 s at most).
async fn resume(linked: &Linked) -> anyhow::Result<()> {
    let a = linked
        .owner
        .post(&linked.gw, "/api/account", json!({"action": "resume"}))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    account_until(&linked.owner, &linked.gw, Duration::from_secs(15), |a| {
        a["state"] == "live"
    })
    .await?;
    Ok(())
}
