//! Real OAuth clients against a running gateway and worker (#28 item 5): the official
//! TypeScript MCP SDK's client (`tests/compat/oauth_client.mjs`, `@modelcontextprotocol/client`
//! with an `OAuthClientProvider`) finds the authorization server from `/mcp`'s 401, registers,
//! sends the owner to the consent page, exchanges the code, lists tools and reads, refreshes
//! when its access token is refused, and fails once the owner revokes the connection.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

use super::compat_dir;
use crate::owner::Owner;
use crate::owner::oauth::approve_on_the_consent_page;

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

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_connects_with_oauth_refreshes_and_is_revoked() -> anyhow::Result<()> {
    let dir = compat_dir();
    assert!(
        dir.join("node_modules/@modelcontextprotocol/client")
            .exists(),
        "the TypeScript MCP SDK is missing: run `(cd tests/compat && npm ci)`"
    );
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let mut child = tokio::process::Command::new("node")
        .arg(dir.join("oauth_client.mjs"))
        .current_dir(&dir)
        .env("WAZAP_MCP_URL", gw.mcp_url())
        .env("OAUTH_REDIRECT", "http://127.0.0.1:47123/callback")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut input = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();

    let asked = next(&mut out).await?;
    let authorize = asked["authorize"].as_str().unwrap_or_default().to_owned();
    let client_id = asked["client_id"].as_str().unwrap_or_default().to_owned();
    assert!(client_id.starts_with("wzcl_"), "registered by DCR: {asked}");
    let url = reqwest::Url::parse(&authorize)?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let has = |k: &str, v: &str| pairs.iter().any(|(a, b)| a == k && b == v);
    assert!(has("code_challenge_method", "S256"), "{authorize}");
    assert!(
        has("resource", &gw.mcp_url()),
        "the SDK names the resource: {authorize}"
    );

    let callback = approve_on_the_consent_page(&gw, &owner, &authorize).await?;
    tell(&mut input, &callback).await?;
    let first = next(&mut out).await?;
    assert_eq!(first, json!({"tools": 12, "read": "ok"}));
    let refreshed = next(&mut out).await?;
    assert_eq!(refreshed, json!({"refreshed": true}));

    assert_eq!(next(&mut out).await?, json!({"ready_for_revoke": true}));
    let list = owner.get(&gw, "/api/connections").await?;
    let id = list.json["connections"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["oauth_client"] == client_id.as_str()))
        .and_then(|c| c["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    let revoked = owner
        .post(&gw, "/api/connections/revoke", json!({"id": id}))
        .await?;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    tell(&mut input, "revoked").await?;
    let after = next(&mut out).await?;
    assert_ne!(after["after_revoke"]["call"], "ok", "{after}");
    // The refresh token died with the connection: the SDK can only ask the owner again.
    assert_eq!(after["after_revoke"]["asked_owner_again"], true, "{after}");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    assert!(status.success(), "the client script exited with {status}");
    gw.stop().await
}
