//! The owner dashboard in real headless Chromium: `tests/browser/dashboard.mjs` (playwright-core
//! driving Debian's `/usr/bin/chromium`) against a sim stack and gateway started here. The
//! script logs in, creates a connection and reads its token once, uses it on `/mcp`, picks 3
//! chats by search and check boxes, meets "changed elsewhere — reopen" in a second tab, sees
//! an agent's send and refused attempt on the sends page (by chat name, no body), gives a
//! second connection a read scope of two accounts by picking a chat of each by name (saved,
//! reloaded, still picked), sees the banner an offline account puts on every page, and revokes; this test checks its exit code, what it printed, and
//! the database. Screenshots of each page go to `target/browser-artifacts/`.
//!
//! Needs `chromium` (apt) and `npm ci` in `tests/browser` (both done by `.ci/run`); without
//! them this test fails and says so: a test that cannot run must not pass.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use wazap_shared::wire::grants::SendMode;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

use super::permissions::work_account;
use super::{Owner, PASSWORD, chat};

/// What the agent sends, then tries to send where it may not.
const TEXTS: [&str; 2] = ["see you at the harbour", "the boss must not get this"];

const CHROMIUM: &str = "/usr/bin/chromium";

#[tokio::test]
async fn the_dashboard_works_in_headless_chromium() -> anyhow::Result<()> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser");
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run `apt-get install -y chromium` (see .ci/run)"
    );
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "tests/browser/node_modules is missing: run `npm ci` in tests/browser (see .ci/run)"
    );
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser-artifacts");

    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    // 3 chats to find by search, and enough others that they are not all on one page.
    let mut wanted = Vec::new();
    for (i, name) in ["Alpha One", "Alpha Two", "Beta Three"]
        .into_iter()
        .enumerate()
    {
        wanted.push(chat(&stack, i as u32, name).await?);
    }
    for i in 0..30 {
        chat(&stack, 100 + i, &format!("Filler {i}")).await?;
    }
    let work = work_account(&mut stack, &gw, &owner, &["Work Lead", "Work Wendy"]).await?;
    // The work phone is offline: every page carries a banner saying so.
    stack
        .sim_of(
            "work",
            wazap_shared::subjects::sim_op::SET_STATE,
            &wazap_shared::wire::sim::SetState {
                state: wazap_shared::wire::SyncState::Offline,
            },
        )
        .await?;
    // An agent that may send to "Alpha One" only: one send, one refused attempt.
    let (_, sender) = stack
        .sending_connection(SendMode::Selected, vec![wanted[0].clone()])
        .await?;
    let mcp = gw.mcp(&sender).await?;
    for (i, (to, text)) in [&wanted[0], &wanted[1]].into_iter().zip(TEXTS).enumerate() {
        let args = json!({"chat_id": to, "request_id": format!("b-{i}"), "text": text});
        let out = mcp.call("send_message", args).await?;
        assert_eq!(out.is_error, i == 1, "{}", out.text);
    }

    let run = tokio::process::Command::new("node")
        .arg("dashboard.mjs")
        .current_dir(&dir)
        .env("WAZAP_DASHBOARD", format!("http://{}", gw.owner_addr))
        .env("WAZAP_MCP_URL", gw.mcp_url())
        .env("WAZAP_PASSWORD", PASSWORD)
        .env("WAZAP_ARTIFACTS", &artifacts)
        .env("WAZAP_SENT_TEXTS", TEXTS.join("\n"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .map_err(|_| anyhow::anyhow!("the browser script did not finish in 180 s"))??;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dashboard.mjs failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(value("MCP_READ"), "ok");
    assert_eq!(value("SELECTED_COUNT"), "3");
    assert_eq!(value("PERMISSION"), "selected 3");
    assert!(
        value("CONFLICT")
            .to_lowercase()
            .contains("changed elsewhere")
    );
    assert_eq!(value("REVOKED_READ"), "unauthenticated");
    assert_eq!(value("RESULT"), "ok");
    let banner = value("BANNER");
    assert!(
        banner.contains("(work) is offline since") && !banner.contains("(default)"),
        "{banner}"
    );
    let work_row = value("WORK_ROW");
    assert!(
        work_row.contains("offline since") && work_row.contains("messages"),
        "{work_row}"
    );
    let sent = value("SENT_ROW");
    assert!(
        sent.contains("Alpha One") && sent.contains("accepted"),
        "{sent}"
    );
    let refused = value("REFUSED_ROW");
    for want in [
        "Alpha Two",
        "not allowed to send to this chat",
        "send_not_permitted",
    ] {
        assert!(refused.contains(want), "{want} not in {refused}");
    }
    assert!(!refused.contains(TEXTS[1]), "{refused}");

    // The read-scope editor: two accounts, the chats picked by name, still picked after reload.
    assert_eq!(value("SCOPED_READ"), "ok");
    let default_rule = value("SCOPE_DEFAULT");
    assert!(
        default_rule.starts_with("selected (Beta Three)"),
        "{default_rule}"
    );
    let work_rule = value("SCOPE_WORK");
    assert!(
        work_rule.starts_with("all_except (Work Lead) ") && work_rule.contains("Work Lead direct"),
        "{work_rule}"
    );
    let scoped = value("SCOPED");
    let stored: serde_json::Value = stack
        .pool
        .get()
        .await?
        .query_one(
            "select read_scope::text from connections where connection_id = $1",
            &[&scoped],
        )
        .await?
        .get::<_, String>(0)
        .parse()?;
    assert_eq!(
        stored,
        json!({
            "chats": {"mode": "all"},
            "accounts": {"mode": "only", "accounts": ["default", "work"]},
            "per_account": {
                "default": {"chats": {"mode": "selected", "chats": [wanted[2]]}},
                "work": {"chats": {"mode": "all_except", "chats": [work[0]]}},
            },
        })
    );

    // The database agrees: the 3 chats picked, and the connection revoked.
    let id = value("CONNECTION");
    let row = stack
        .pool
        .get()
        .await?
        .query_one(
            "select send_mode, send_chats, revoked_at is not null from connections where connection_id = $1",
            &[&id],
        )
        .await?;
    let mut chats: Vec<String> = row.get(1);
    chats.sort();
    wanted.sort();
    assert_eq!(row.get::<_, String>(0), "selected");
    assert_eq!(chats, wanted);
    assert!(row.get::<_, bool>(2));
    // And the token the page showed is refused here too.
    let token = value("TOKEN");
    assert_eq!(
        super::read_outcome(&gw.mcp_url(), &token).await?,
        "tool:unauthenticated"
    );
    for shot in [
        "01-login-refused",
        "02-connection-created",
        "04-permissions-saved",
        "05-permissions-conflict",
        "06-account",
        "08-sends",
        "10-read-scope-picked",
        "11-read-scope-reloaded",
        "09-revoked",
    ] {
        assert!(artifacts.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
    Ok(())
}
