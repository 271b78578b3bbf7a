//! Client ID Metadata Documents (#28): a client whose `client_id` is the URL of its metadata
//! document, fetched by the gateway when it asks for authorization — approved and redeemed like
//! any client; refused (an error page, never a redirect) when the document names another
//! `client_id`, takes too long, is too large, or sits on a private address while the gateway
//! runs with the production default.

use std::time::Duration;

use axum::Router;
use axum::routing::get as route_get;
use serde_json::json;

use super::*;

/// A document server on loopback: `/good.json`, `/mismatch.json`, `/slow.json`, `/large.json`.
async fn documents() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let doc = |path: &str, client_id: String| {
        let body = json!({"client_id": client_id, "client_name": "Doc Agent",
            "redirect_uris": [REDIRECT], "logo_uri": "https://logo.example/l.png"})
        .to_string();
        (path.to_owned(), body)
    };
    let (good, good_body) = doc("/good.json", format!("{base}/good.json"));
    let (mismatch, mismatch_body) = doc("/mismatch.json", format!("{base}/other.json"));
    let large_body = json!({"client_id": format!("{base}/large.json"),
        "redirect_uris": [REDIRECT], "client_name": "x".repeat(6 * 1024)})
    .to_string();
    let slow_body = good_body.replace("good.json", "slow.json");
    let app = Router::new()
        .route(&good, route_get(move || async move { good_body }))
        .route(&mismatch, route_get(move || async move { mismatch_body }))
        .route("/large.json", route_get(move || async move { large_body }))
        .route(
            "/slow.json",
            route_get(move || async move {
                tokio::time::sleep(Duration::from_secs(8)).await;
                slow_body
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

#[tokio::test]
async fn a_client_registered_by_its_metadata_document_is_approved_and_redeems() -> anyhow::Result<()>
{
    let base = documents().await?;
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack
        .gateway(&[("WAZAP_OAUTH_PRIVATE_DOCUMENTS", "on")])
        .await?;
    let ep = discover(&gw).await?;
    let asm = get(&gw.owner_url("/.well-known/oauth-authorization-server")).await?;
    assert_eq!(asm.json["client_id_metadata_document_supported"], true);
    let owner = Owner::login(&stack, &gw).await?;
    let (verifier, challenge) = pkce();
    let client = format!("{base}/good.json");
    let url = authorize_url(&ep, &client, REDIRECT, &challenge, &gw.mcp_url(), |_| {});
    let r = get(&url).await?;
    assert_eq!(r.status, 303, "{}", r.text);
    let consent_path = r.location.unwrap_or_default();
    let page = owner.get(&gw, &consent_path).await?;
    for claim in [
        "Doc Agent",
        "metadata document",
        client.as_str(),
        "logo.example",
    ] {
        assert!(page.text.contains(claim), "the consent page names {claim}");
    }
    assert!(
        !page.text.contains("https://logo.example/l.png"),
        "never loads the logo"
    );
    let back = consent(&gw, &owner, &url, approve_all()).await?;
    let code = param(&back, "code").unwrap_or_default();
    leak::record_secret(leak::kind::BEARER, &code);
    let tokens = exchange(&ep, &client, &code, &verifier, REDIRECT).await?;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    let access = tokens.json["access_token"].as_str().unwrap_or_default();
    assert_eq!(read_outcome(&gw.mcp_url(), access).await?, "ok");
    let kept: Option<chrono::DateTime<chrono::Utc>> = stack
        .pool
        .get()
        .await?
        .query_one(
            "select expires_at from oauth_clients where client_id = $1 and registration = 'cimd'",
            &[&client],
        )
        .await?
        .get(0);
    assert_eq!(kept, None, "an approved client no longer lapses");

    // Documents that must not register a client: an error page each, never a redirect.
    for (doc, why) in [
        ("mismatch.json", "names another client_id"),
        ("large.json", "larger than 5 KiB"),
        ("slow.json", "took too long"),
        ("missing.json", "could not be fetched"),
    ] {
        let id = format!("{base}/{doc}");
        let r = get(&authorize_url(
            &ep,
            &id,
            REDIRECT,
            &challenge,
            &gw.mcp_url(),
            |_| {},
        ))
        .await?;
        assert_eq!(r.status, 400, "{doc}: {}", r.text);
        assert_eq!(r.location, None, "{doc}");
        assert!(r.text.contains(why), "{doc}: {}", r.text);
    }
    gw.stop().await?;

    // The production default: no fetch from a private or loopback address (SSRF), https only.
    let strict = stack.gateway(&[]).await?;
    let ep = discover(&strict).await?;
    let port = base.rsplit(':').next().unwrap_or_default();
    for (id, why) in [
        (
            format!("https://127.0.0.1:{port}/good.json"),
            "private or local address",
        ),
        (
            format!("https://localhost:{port}/good.json"),
            "private or local address",
        ),
        (client.clone(), "must be an https URL"),
    ] {
        let r = get(&authorize_url(
            &ep,
            &id,
            REDIRECT,
            &challenge,
            &strict.mcp_url(),
            |_| {},
        ))
        .await?;
        assert_eq!(r.status, 400, "{id}: {}", r.text);
        assert!(r.text.contains(why), "{id}: {}", r.text);
    }
    strict.stop().await
}
