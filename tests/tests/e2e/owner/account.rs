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
