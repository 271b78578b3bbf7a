//! The archive policy through the owner API (excluded chats leave the editors' lists and can
//! no longer be granted; stale revisions are 409) and recent sends (journal rows, never bodies).

use serde_json::json;
use wazap_tests::{Stack, post_raw};
use wazap_worker::config::ConnectorKind;

use super::{Owner, chat};

#[tokio::test]
async fn excluded_chats_leave_the_editor_and_sends_show_without_bodies() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let kept = chat(&stack, 1, "Kept").await?;
    let hidden = chat(&stack, 2, "Hidden").await?;
    let (id, token) = owner
        .create(&gw, "agent", json!({"chats": {"mode": "all"}}))
        .await?;

    let p = owner.get(&gw, "/api/policy").await?;
    assert_eq!(p.json, json!({"excluded_chats": [], "revision": 0}));
    let stale = owner
        .post(
            &gw,
            "/api/policy",
            json!({"excluded_chats": [hidden], "revision": 4}),
        )
        .await?;
    assert_eq!(stale.status, 409);
    let bad = owner
        .post(
            &gw,
            "/api/policy",
            json!({"excluded_chats": ["+972501234567"], "revision": 0}),
        )
        .await?;
    assert_eq!(bad.status, 400);
    let set = owner
        .post(
            &gw,
            "/api/policy",
            json!({"excluded_chats": [hidden], "revision": 0}),
        )
        .await?;
    assert_eq!(set.json, json!({"excluded_chats": [hidden], "revision": 1}));
    let listed = owner
        .get(&gw, &format!("/api/chats?connection_id={id}"))
        .await?;
    let ids: Vec<&str> = listed.json["chats"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(ids.contains(&kept.as_str()) && !ids.contains(&hidden.as_str()));
    let refused = owner
        .post(
            &gw,
            "/api/connections/send-permission",
            json!({"id": id, "revision": 0, "chats": [hidden]}),
        )
        .await?;
    assert_eq!(refused.status, 400, "an excluded chat cannot be granted");

    let granted = owner
        .post(
            &gw,
            "/api/connections/send-permission",
            json!({"id": id, "revision": 0, "chats": [kept]}),
        )
        .await?;
    assert_eq!(granted.status, 200);
    let secret = "meet me at the usual place";
    let body =
        serde_json::to_vec(&json!({"chat_id": kept, "request_id": "owner-1", "text": secret}))?;
    let (status, _, sent) = post_raw(
        &gw.url("/api/send/message"),
        &[("authorization", &format!("Bearer {token}"))],
        body,
    )
    .await?;
    assert_eq!(status, 200, "{sent}");
    let sends = owner.get(&gw, "/api/sends").await?;
    let row = &sends.json["sends"][0];
    assert_eq!(row["request_id"], "owner-1");
    assert_eq!(row["chat_id"], kept.as_str());
    assert_eq!(row["chat_name"], "Kept");
    assert_eq!(row["connection_name"], "agent");
    assert_eq!(row["tool"], "send_message");
    assert_eq!(row["state"], sent["state"]);
    let page = owner.get(&gw, "/sends").await?;
    assert!(page.text.contains("owner-1"));
    assert!(
        !sends.text.contains(secret) && !page.text.contains(secret),
        "a body leaked"
    );
    Ok(())
}
