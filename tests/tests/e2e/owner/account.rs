//! The account page with the sim connector: pause/resume, unlink, QR drawn as SVG, a pairing
//! code; refusals the connector explains are shown as `invalid_argument`.

use serde_json::json;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

use super::Owner;

#[tokio::test]
async fn account_controls_drive_the_sim_connector() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let act = |action: &'static str| {
        let owner = &owner;
        let gw = &gw;
        async move {
            owner
                .post(gw, "/api/account", json!({ "action": action }))
                .await
        }
    };
    assert_eq!(owner.get(&gw, "/api/account").await?.json["state"], "live");
    assert_eq!(act("pause").await?.json["state"], "paused");
    assert_eq!(act("resume").await?.json["state"], "live");
    let refused = act("resume").await?;
    assert_eq!(refused.status, 400);
    let refused = act("pair_with_qr").await?;
    assert_eq!(refused.status, 400, "pairing while linked");
    let a = act("unlink").await?;
    assert_eq!(a.json["state"], "unpaired");
    assert!(a.json["qr"].as_str().is_some());
    let page = owner.get(&gw, "/account").await?;
    assert!(page.text.contains("<svg role=\"img\""), "no QR drawn");
    let code = owner
        .post(
            &gw,
            "/api/account",
            json!({"action": "pair_with_code", "phone": "+972501234567"}),
        )
        .await?;
    let code = code.json["pairing_code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(code.len(), 8);
    assert!(owner.get(&gw, "/account").await?.text.contains(&code));
    let bad = owner
        .post(
            &gw,
            "/api/account",
            json!({"action": "pair_with_code", "phone": "12ab"}),
        )
        .await?;
    assert_eq!(bad.status, 400);
    Ok(())
}

/// The account registry over the owner API (#27 item 1): list (`default` first, named by the
/// migration), add (a clashing or malformed id refused), remove keeping the archive, and
/// deleting it only once the id is typed again — the refusal says what would go.
#[tokio::test]
async fn the_owner_adds_lists_and_removes_accounts() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let listed = owner.get(&gw, "/api/accounts").await?;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.json["accounts"][0]["account_id"], "default");
    assert_eq!(listed.json["accounts"][0]["display_name"], "Default");
    assert_eq!(listed.json["accounts"][0]["state"], "live");

    let added = owner
        .post(
            &gw,
            "/api/accounts",
            json!({"account_id": "work", "display_name": "Work phone", "connector": "sim"}),
        )
        .await?;
    assert_eq!(added.status, 200, "{}", added.text);
    assert_eq!(added.json["account_id"], "work");
    assert_eq!(added.json["connector"], "sim");
    assert_eq!(added.json["state"], "offline", "no worker serves it yet");
    // A worker takes it within a poll or two, and its connector (the sim) is live.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let listed = owner.get(&gw, "/api/accounts").await?;
        let work = (listed.json["accounts"].as_array())
            .and_then(|a| a.iter().find(|a| a["account_id"] == "work"))
            .cloned()
            .unwrap_or_default();
        if work["state"] == "live" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no worker took the new account: {work}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // It is linked and controlled from the dashboard like the default one: unlinked, it shows
    // its own QR code and pairing code, and the default account is untouched.
    let unlinked = owner
        .post(
            &gw,
            "/api/account",
            json!({"account_id": "work", "action": "unlink"}),
        )
        .await?;
    assert_eq!(unlinked.status, 200, "{}", unlinked.text);
    assert_eq!(unlinked.json["account_id"], "work");
    assert_eq!(unlinked.json["state"], "unpaired");
    assert_eq!(unlinked.json["qr"], "wazap-sim-pairing:work");
    let coded = owner
        .post(
            &gw,
            "/api/account",
            json!({"account_id": "work", "action": "pair_with_code", "phone": "+972501234567"}),
        )
        .await?;
    assert_eq!(coded.status, 200, "{}", coded.text);
    assert!(coded.json["pairing_code"].is_string(), "{}", coded.text);
    let work = owner.get(&gw, "/api/account?account_id=work").await?;
    assert_eq!(work.json["pairing_code"], coded.json["pairing_code"]);
    let default = owner.get(&gw, "/api/account").await?;
    assert_eq!(default.json["account_id"], "default");
    assert_eq!(
        default.json["state"], "live",
        "the default account is untouched"
    );
    assert!(default.json["pairing_code"].is_null(), "{}", default.text);
    let page = owner.get(&gw, "/account?account_id=work").await?;
    assert!(
        page.text.contains(r#"data-account="work""#) && page.text.contains("Link a phone"),
        "the page links the work account"
    );
    let bad = owner.get(&gw, "/api/account?account_id=Work").await?;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert_eq!(bad.json["error"]["code"], "invalid_argument");
    let page = owner.get(&gw, "/account").await?;
    assert!(
        page.text.contains("<code>work</code>") && page.text.contains("Work phone"),
        "the accounts card lists it"
    );
    assert!(page.text.contains(r#"data-account="work" data-delete="1""#));
    for (body, field) in [
        (json!({"account_id": "work"}), "account_id"),
        (json!({"account_id": "Work Phone"}), "account_id"),
        (
            json!({"account_id": "x", "connector": "telegram"}),
            "connector",
        ),
        (
            json!({"account_id": "x", "display_name": ""}),
            "display_name",
        ),
    ] {
        let r = owner.post(&gw, "/api/accounts", body.clone()).await?;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        assert!(r.text.contains(field), "{body}: {}", r.text);
    }
    // A write without the session's CSRF token changes nothing.
    let forged = super::send(
        &gw,
        reqwest::Method::POST,
        "/api/accounts",
        &[
            ("cookie", owner.cookie.as_str()),
            ("origin", owner.origin.as_str()),
            ("content-type", "application/json"),
        ],
        Some(&json!({"account_id": "forged"})),
    )
    .await?;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let ids: Vec<String> = owner.get(&gw, "/api/accounts").await?.json["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, ["default", "work"]);

    let remove = |body| owner.post(&gw, "/api/accounts/remove", body);
    assert_eq!(remove(json!({"account_id": "default"})).await?.status, 400);
    assert_eq!(remove(json!({"account_id": "ghost"})).await?.status, 404);
    let unconfirmed = remove(json!({"account_id": "work", "delete_archive": true})).await?;
    assert_eq!(unconfirmed.status, 400);
    assert!(
        unconfirmed.text.contains("0 messages, 0 chats"),
        "{}",
        unconfirmed.text
    );
    let kept = remove(json!({"account_id": "work"})).await?;
    assert_eq!(kept.status, 200, "{}", kept.text);
    assert_eq!(kept.json["deleted"], false);
    let listed = owner.get(&gw, "/api/accounts").await?;
    assert!(listed.json["accounts"][1]["removed_at"].is_string());
    let deleted =
        remove(json!({"account_id": "work", "delete_archive": true, "confirm": "work"})).await?;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(deleted.json["deleted"], true);
    let listed = owner.get(&gw, "/api/accounts").await?;
    assert_eq!(listed.json["accounts"].as_array().map(Vec::len), Some(1));
    Ok(())
}
