//! Real OAuth clients against a running gateway and worker (#28 item 5): the official MCP SDKs'
//! clients — TypeScript (`tests/compat/oauth_client.mjs`, `@modelcontextprotocol/client` with an
//! `OAuthClientProvider`) and Python (`tests/compat/oauth_client.py`,
//! `mcp.client.auth.OAuthClientProvider`) — find the authorization server from `/mcp`'s 401,
//! register (Dynamic Client Registration) and send the owner to the authorization URL. The
//! owner approves on the consent page in headless Chromium (`tests/browser/consent.mjs`: login
//! first, the client's claims read, the defaults kept). The clients exchange the code, list
//! tools and read, and refresh when their access token is no good — the TypeScript SDK on the
//! 401, the Python SDK before the request once the token has expired by its clock (a 401 sends
//! it to the owner again), so its script makes the token both invalid and expired. Once the
//! owner revokes the connection, the next call and the next refresh both fail.
//!
//! Needs the SDKs (`(cd tests/compat && npm ci)`, `pip install -r tests/compat/requirements.txt`),
//! `chromium` (apt) and `npm ci` in `tests/browser`; a missing one fails the test with that
//! instruction, never a skip.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};
use wazap_tests::{Stack, leak};
use wazap_worker::config::ConnectorKind;

mod document;

use super::{compat_dir, python};
use crate::owner::{Owner, PASSWORD};
use document::Document;

/// The clients' redirect URI: nothing listens there; the browser's navigation to it is
/// answered by `consent.mjs`.
const REDIRECT: &str = "http://127.0.0.1:47123/callback";

const CHROMIUM: &str = "/usr/bin/chromium";

/// One step of the script: its next JSON line.
async fn next(out: &mut Lines<BufReader<ChildStdout>>) -> anyhow::Result<Value> {
    let line = tokio::time::timeout(Duration::from_secs(60), out.next_line())
        .await??
        .ok_or_else(|| anyhow::anyhow!("the client script ended early"))?;
    let v: Value = serde_json::from_str(&line)?;
    anyhow::ensure!(v.get("error").is_none(), "the client script failed: {v}");
    Ok(v)
}

async fn tell(input: &mut ChildStdin, line: &str) -> anyhow::Result<()> {
    input.write_all(format!("{line}\n").as_bytes()).await?;
    input.flush().await?;
    Ok(())
}

/// `tests/browser/`, with playwright-core installed and Chromium present.
fn browser_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run `apt-get install -y chromium` (see .ci/run)"
    );
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "tests/browser/node_modules is missing: run `npm ci` in tests/browser (see .ci/run)"
    );
    dir
}

/// The owner opens `authorize` in a fresh headless Chromium, logs in, and approves on the
/// consent page with its defaults (`consent.mjs`); the page's screenshot is `<shot>.png` in
/// `target/browser-artifacts/`. Returns the URL the browser was sent back to (its code is
/// recorded for the leak scan) and what the page showed.
async fn approve_in_chromium(authorize: &str, shot: &str) -> anyhow::Result<(String, Value)> {
    let dir = browser_dir();
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/browser-artifacts");
    let screenshot = artifacts.join(format!("{shot}.png"));
    // An earlier run's screenshot must not count as this one's.
    let _ = std::fs::remove_file(&screenshot);
    let run = Command::new("node")
        .arg("consent.mjs")
        .current_dir(&dir)
        .env("WAZAP_AUTHORIZE", authorize)
        .env("WAZAP_CALLBACK", REDIRECT)
        .env("WAZAP_PASSWORD", PASSWORD)
        .env("WAZAP_ARTIFACTS", &artifacts)
        .env("WAZAP_SHOT", shot)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .map_err(|_| anyhow::anyhow!("consent.mjs did not finish in 120 s"))??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let page: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    let callback = page["callback"].as_str().unwrap_or_default().to_owned();
    let url = reqwest::Url::parse(&callback).ok();
    let code = url.as_ref().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == "code")
            .map(|(_, v)| v.into_owned())
    });
    if let Some(code) = &code {
        leak::record_secret(leak::kind::BEARER, code);
    }
    anyhow::ensure!(
        out.status.success(),
        "consent.mjs failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    anyhow::ensure!(screenshot.exists(), "no screenshot {shot}.png");
    // Sent back to the client with a code: what an approval does (a denial carries
    // error=access_denied instead).
    let back_to_client = url.as_ref().is_some_and(|u| {
        u.as_str().starts_with(&format!("{REDIRECT}?"))
            && u.query_pairs().any(|(k, _)| k == "state")
    });
    anyhow::ensure!(
        back_to_client && code.is_some(),
        "the consent page did not send the browser back with a code: {}",
        if code.is_some() {
            "(a code)"
        } else {
            &callback
        }
    );
    Ok((callback, page))
}

/// One official SDK's OAuth client (`client`: its script, run with the MCP URL and the redirect
/// URI in its environment), registered as `name`, driven through the whole flow: the owner
/// approves in Chromium, the client reads, refreshes, and is shut out by the revocation.
async fn connects_with_oauth_refreshes_and_is_revoked(
    mut client: Command,
    name: &str,
    shot: &str,
    document: Option<&Document>,
) -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = match document {
        // The document is on loopback under the test's own CA: the test switch and that root.
        Some(d) => {
            let root = d.root.clone();
            let vars = [("WAZAP_OAUTH_PRIVATE_DOCUMENTS", "on")];
            stack
                .gateway_with(&vars, |c| c.oauth_document_roots = vec![root])
                .await?
        }
        None => stack.gateway(&[]).await?,
    };
    let owner = Owner::login(&stack, &gw).await?;
    if let Some(d) = document {
        client.env("OAUTH_CLIENT_METADATA_URL", &d.url);
    }
    let mut child = client
        .current_dir(compat_dir())
        .env("WAZAP_MCP_URL", gw.mcp_url())
        .env("OAUTH_REDIRECT", REDIRECT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut input = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();

    // Discovery from the 401, registration, and the authorization URL for the owner.
    let asked = next(&mut out).await?;
    let authorize = asked["authorize"].as_str().unwrap_or_default().to_owned();
    let client_id = asked["client_id"].as_str().unwrap_or_default().to_owned();
    match document {
        Some(d) => assert_eq!(client_id, d.url, "known by its document: {asked}"),
        None => assert!(client_id.starts_with("wzcl_"), "registered by DCR: {asked}"),
    }
    let url = reqwest::Url::parse(&authorize)?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let has = |k: &str, v: &str| pairs.iter().any(|(a, b)| a == k && b == v);
    assert!(has("code_challenge_method", "S256"), "{authorize}");
    assert!(
        has("resource", &gw.mcp_url()),
        "the SDK names the resource: {authorize}"
    );

    // The owner approves in the browser, having seen what the client claims.
    let (callback, page) = approve_in_chromium(&authorize, shot).await?;
    let claims = &page["claims"];
    assert_eq!(claims["Name (claimed)"], name, "{claims}");
    assert_eq!(claims["Client id"], client_id.as_str(), "{claims}");
    assert_eq!(claims["The approval code goes to"], REDIRECT, "{claims}");
    assert_eq!(claims["Access to"], gw.mcp_url().as_str(), "{claims}");
    let how = if document.is_some() {
        "metadata document"
    } else {
        "dynamic client registration"
    };
    assert!(
        claims["How it registered"]
            .as_str()
            .is_some_and(|h| h.contains(how)),
        "{claims}"
    );
    assert_eq!(
        page["defaults"],
        json!({"days": "30", "read": "all", "send": "none", "name": name})
    );
    tell(&mut input, &callback).await?;
    let first = next(&mut out).await?;
    assert_eq!(first, json!({"tools": 12, "read": "ok"}));

    // The connection the approval made has the page's defaults.
    let list = owner.get(&gw, "/api/connections").await?;
    let conn = list.json["connections"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["oauth_client"] == client_id.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(conn["kind"], "remote", "{conn}");
    assert_eq!(conn["name"], name, "{conn}");
    assert_eq!(
        conn["read_scope"]["chats"],
        json!({"mode": "all"}),
        "{conn}"
    );
    assert_eq!(conn["send_permission"]["mode"], "none", "{conn}");
    let expires: chrono::DateTime<chrono::Utc> =
        conn["expires_at"].as_str().unwrap_or_default().parse()?;
    let days = (expires - chrono::Utc::now()).num_hours() as f64 / 24.0;
    assert!((29.9..=30.0).contains(&days), "expires in {days} days");

    let refreshed = next(&mut out).await?;
    assert_eq!(refreshed, json!({"refreshed": true}));

    // The owner revokes it on the dashboard.
    assert_eq!(next(&mut out).await?, json!({"ready_for_revoke": true}));
    let revoked = owner
        .post(&gw, "/api/connections/revoke", json!({"id": conn["id"]}))
        .await?;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    tell(&mut input, "revoked").await?;
    let after = next(&mut out).await?;
    // The access token is refused (by the worker: the connection is revoked), and so is the
    // refresh token, which died with it: the SDK can only ask the owner again.
    let after = &after["after_revoke"];
    assert_eq!(after["call"], "unauthenticated", "{after}");
    assert_eq!(after["refresh"], "http 400", "{after}");
    assert_eq!(after["asked_owner_again"], true, "{after}");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    assert!(status.success(), "the client script exited with {status}");
    gw.stop().await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_connects_with_oauth_refreshes_and_is_revoked() -> anyhow::Result<()> {
    let dir = compat_dir();
    assert!(
        dir.join("node_modules/@modelcontextprotocol/client")
            .exists(),
        "the TypeScript MCP SDK is missing: run `(cd tests/compat && npm ci)`"
    );
    let mut client = Command::new("node");
    client.arg(dir.join("oauth_client.mjs"));
    connects_with_oauth_refreshes_and_is_revoked(
        client,
        "wazap SDK check (TypeScript)",
        "21-oauth-consent-typescript",
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_connects_by_its_client_id_metadata_document() -> anyhow::Result<()> {
    let dir = compat_dir();
    let name = "wazap SDK check (TypeScript, metadata document)";
    let document = Document::serve(name).await?;
    let mut client = Command::new("node");
    client.arg(dir.join("oauth_client.mjs"));
    connects_with_oauth_refreshes_and_is_revoked(
        client,
        name,
        "23-oauth-consent-document",
        Some(&document),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_connects_with_oauth_refreshes_and_is_revoked() -> anyhow::Result<()> {
    let mut client = Command::new(python());
    client.arg(compat_dir().join("oauth_client.py"));
    connects_with_oauth_refreshes_and_is_revoked(
        client,
        "wazap SDK check (Python)",
        "22-oauth-consent-python",
        None,
    )
    .await
}
