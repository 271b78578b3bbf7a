//! The server refusing or ignoring a login: a "try again" refusal (503) is retried and nothing
//! sent meanwhile is lost; a final one (405, client outdated) stops the session with a clear
//! word and no reconnect loop; a server that takes the socket and never answers the handshake
//! leaves the account offline until it answers again.

use std::time::Duration;

use serde_json::json;

use super::{Linked, OWNER, account_until, read_until};

const EVE: &str = "15550000005";

#[tokio::test]
async fn a_refused_login_is_retried_or_stops_with_the_reason() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let eve = net.phone(EVE, "Eve").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];
    let mcp = linked.reader().await?;

    // 503: the client logs in again; what came meanwhile arrives.
    net.refuse_login(OWNER, device, 503, 1);
    assert!(net.drop_socket(OWNER, device));
    eve.send_text(OWNER, "after the refusal").await?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    read_until(&mcp, json!({"chat_id": format!("+{EVE}")}), |r| {
        r["messages"][0]["text"] == "after the refusal"
    })
    .await?;

    // 405: the session stops, says why, and does not knock again.
    net.refuse_login(OWNER, device, 405, 100);
    assert!(net.drop_socket(OWNER, device));
    let (a, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(30), |a| {
        a["detail"].as_str().is_some_and(|d| d.contains("outdated"))
    })
    .await?;
    assert_eq!(a["state"], "offline", "{a}");
    let before = net.handshakes();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        net.handshakes(),
        before,
        "no reconnect loop after a final refusal"
    );
    phone.stop().await;
    eve.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_stalled_server_leaves_the_account_offline_until_it_answers() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let eve = net.phone(EVE, "Eve").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];

    net.stall(true);
    assert!(net.drop_socket(OWNER, device));
    account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "offline"
    })
    .await?;
    eve.send_text(OWNER, "during the stall").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let a = linked.owner.get(&linked.gw, "/api/account").await?.json;
    assert_eq!(
        a["state"], "offline",
        "a stalled handshake is not live: {a}"
    );
    net.stall(false);
    // The client gives up on the stalled handshake (20 s) and connects again.
    account_until(&linked.owner, &linked.gw, Duration::from_secs(45), |a| {
        a["state"] == "live"
    })
    .await?;
    let mcp = linked.reader().await?;
    read_until(&mcp, json!({"chat_id": format!("+{EVE}")}), |r| {
        r["messages"][0]["text"] == "during the stall"
    })
    .await?;
    phone.stop().await;
    eve.stop().await;
    Ok(())
}
