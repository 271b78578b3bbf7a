//! Owner login: cookie attributes, a new session id at every login (no fixation), logout ends
//! the session server-side, the stored hash's parameters. Failed logins: `throttle`.

use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

use super::{Owner, PASSWORD, login_raw};

#[tokio::test]
async fn login_issues_a_fresh_session_and_logout_ends_it() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let first = Owner::login(&stack, &gw).await?;
    let phc: String = stack
        .pool
        .get()
        .await?
        .query_one("select password_hash from owner_credentials", &[])
        .await?
        .get(0);
    assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));

    // A cookie planted before login (fixation) is replaced, and is no session.
    let planted = "wazap_owner=attacker-chosen-value";
    let a = login_raw(&gw, PASSWORD, Some(planted)).await?;
    assert_eq!(a.status, 200);
    let set = &a.cookies[0];
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attr), "{attr} missing");
    }
    assert!(!set.contains("Secure"), "plain http origin: no Secure");
    let fresh = set.split(';').next().unwrap().to_owned();
    assert_ne!(fresh, planted);
    assert_ne!(fresh, first.cookie);
    assert!(
        fresh.len() > "wazap_owner=".len() + 32,
        "at least 128 random bits"
    );
    let planted_get = super::send(
        &gw,
        reqwest::Method::GET,
        "/api/connections",
        &[("cookie", planted)],
        None,
    )
    .await?;
    assert_eq!(planted_get.status, 401);

    // Logging in again from a session replaces that session.
    let again = login_raw(&gw, PASSWORD, Some(&first.cookie)).await?;
    assert_eq!(again.status, 200);
    assert_eq!(first.get(&gw, "/api/connections").await?.status, 401);

    // Logout ends the session in the worker, not just in the browser.
    let owner = Owner::login(&stack, &gw).await?;
    assert_eq!(owner.get(&gw, "/api/connections").await?.status, 200);
    let out = owner
        .post(&gw, "/api/logout", serde_json::json!({}))
        .await?;
    assert_eq!(out.status, 200);
    assert!(out.cookies[0].contains("Max-Age=0"));
    assert_eq!(owner.get(&gw, "/api/connections").await?.status, 401);
    Ok(())
}
