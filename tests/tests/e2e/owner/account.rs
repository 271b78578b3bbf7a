//! The account page with the sim connector: pause/resume, unlink, QR drawn as SVG, a pairing
//! code; refusals the connector explains are shown as `invalid_argument`.

use serde_json::json;
use wazap_shared::ErrorCode;
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

/// The owner's pause outlives the worker (#27): restarted, it serves the account paused, and
/// sends are refused, until resumed; a pause the connector refused keeps nothing.
#[tokio::test]
async fn a_pause_is_kept_across_a_worker_restart() -> anyhow::Result<()> {
    let mut s = crate::send::Sending::start().await?;
    let gw = s.stack.gateway(&[]).await?;
    let owner = Owner::login(&s.stack, &gw).await?;
    let act = async |action: &str| {
        (owner
            .post(&gw, "/api/account", json!({ "action": action }))
            .await)
            .map(|r| (r.status, r.json["state"].clone()))
    };
    let state = async || {
        owner
            .get(&gw, "/api/account")
            .await
            .map(|r| r.json["state"].clone())
    };
    assert_eq!(act("pause").await?, (200, json!("paused")));
    s.stack.stop_worker().await?;
    s.stack.start_worker().await?;
    assert_eq!(state().await?, "paused");
    let refused = s.text(&s.chat, "while-paused", "hello").await.unwrap_err();
    assert_eq!(
        refused.code,
        ErrorCode::SessionCannotSend,
        "{}",
        refused.message
    );

    assert_eq!(act("resume").await?, (200, json!("live")));
    s.stack.stop_worker().await?;
    s.stack.start_worker().await?;
    assert_eq!(state().await?, "live");
    s.text(&s.chat, "after-resume", "hello").await?;

    // The sim refuses to pause an unlinked account: nothing is kept, so the next worker does
    // not start it paused (the sim forgets the unlink itself, and reports `live`).
    assert_eq!(act("unlink").await?, (200, json!("unpaired")));
    assert_eq!(act("pause").await?.0, 400);
    s.stack.stop_worker().await?;
    s.stack.start_worker().await?;
    assert_eq!(state().await?, "live");
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
    account_row_once(&owner, &gw, "work", |w| w["state"] == "live").await?;
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

/// `account`'s row of `GET /api/accounts`, once `done` accepts it (within 30 s: the archive is
/// recounted every 10 s).
async fn account_row_once(
    owner: &Owner,
    gw: &wazap_tests::Gateway,
    account: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> anyhow::Result<serde_json::Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = owner.get(gw, "/api/accounts").await?;
        let row = (listed.json["accounts"].as_array())
            .and_then(|all| all.iter().find(|a| a["account_id"] == account))
            .cloned()
            .unwrap_or_default();
        if done(&row) {
            return Ok(row);
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "never: {row}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// #27 item 5: each account's truth on the dashboard — its state and since when, the history
/// sync it is receiving (pages, messages, the phone's percent), what its archive holds (counted
/// per account: another account's messages are not in it), and a banner on every page while an
/// account is not live.
#[tokio::test]
async fn each_account_shows_its_state_since_when_history_and_archive() -> anyhow::Result<()> {
    use wazap_shared::subjects::sim_op;
    use wazap_shared::wire::SyncState;
    use wazap_shared::wire::sim::{HistorySync, SetState};
    use wazap_tests::fixtures::{minutes_ago, person, photo, text};

    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let live = account_row_once(&owner, &gw, "default", |r| r["since"].is_string()).await?;
    assert_eq!(live["state"], "live");

    // The phone starts sending history: 40 % of it, three messages in two chats, a photo.
    let (a, b) = (person("972500000001"), person("972500000002"));
    let newest = minutes_ago(1);
    let messages = vec![
        text(&a, "h1", minutes_ago(30), "hello"),
        photo(&a, "h2", minutes_ago(20), "the view"),
        text(&b, "h3", newest, "see you"),
    ];
    stack
        .sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::CatchingUp,
            },
        )
        .await?;
    let ack = stack
        .sim(
            sim_op::HISTORY_SYNC,
            &HistorySync {
                messages,
                progress: Some(40),
            },
        )
        .await?;
    assert_eq!(ack.stored, 3);
    // A second account, served and counted on its own.
    let added = owner
        .post(
            &gw,
            "/api/accounts",
            json!({"account_id": "work", "connector": "sim"}),
        )
        .await?;
    assert_eq!(added.status, 200, "{}", added.text);

    let row = account_row_once(&owner, &gw, "default", |r| {
        r["state"] == "catching_up" && r["archive"]["messages"] == 3
    })
    .await?;
    assert_eq!(
        row["history"],
        json!({"pages": 1, "messages": 3, "percent": 40})
    );
    let archive = &row["archive"];
    assert_eq!(
        (archive["chats"].as_i64(), archive["media"].as_i64()),
        (Some(2), Some(1))
    );
    let newest_at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(archive["newest_at"].clone())?;
    assert_eq!(newest_at.timestamp(), newest.timestamp());
    assert!(archive["disk_bytes"].as_i64().unwrap_or(0) > 0, "{archive}");
    let since: chrono::DateTime<chrono::Utc> = serde_json::from_value(row["since"].clone())?;
    let before: chrono::DateTime<chrono::Utc> = serde_json::from_value(live["since"].clone())?;
    assert!(
        since > before,
        "catching up since {since}, live since {before}"
    );

    let work = account_row_once(&owner, &gw, "work", |w| w["archive"].is_object()).await?;
    assert_eq!(work["archive"]["messages"], 0, "{work}");
    assert!(work["history"].is_null(), "{work}");

    // The card says it in words; every page of the session carries the banner's place.
    let page = owner.get(&gw, "/account").await?;
    for want in [
        "catching_up</span> since <time",
        "history: 1 page, 3 messages, 40 %",
        "3 messages, 2 chats, 1 media",
    ] {
        assert!(page.text.contains(want), "{want} not on the account page");
    }
    for path in ["/account", "/connections", "/policy", "/sends"] {
        let page = owner.get(&gw, path).await?;
        assert!(page.text.contains(r#"id="accounts-banner""#), "{path}");
    }

    // Offline: the state and its time move.
    stack
        .sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::Offline,
            },
        )
        .await?;
    let catching_up = row["since"].clone();
    let row = account_row_once(&owner, &gw, "default", |r| {
        r["state"] == "offline" && r["since"] != catching_up
    })
    .await?;
    let offline: chrono::DateTime<chrono::Utc> = serde_json::from_value(row["since"].clone())?;
    assert!(offline > since, "offline since {offline}");
    Ok(())
}
