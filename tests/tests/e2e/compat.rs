//! MCP client compatibility (issue 9): the official MCP Python SDK drives the gateway's `/mcp`
//! and `wazap-stdio` (initialize, tools with annotations and output schemas, a read and a send
//! on the sim), the MCP Inspector CLI lists a running gateway's tools, and `wazap-stdio`
//! refuses an upstream whose send tool claims to be read-only.
//!
//! Needs `pip install -r tests/compat/requirements.txt` and `(cd tests/compat && npm ci)`
//! (`.ci/run` does both); a missing one fails the test with that instruction, never a skip.
//! `wazap-stdio` is the one `cargo nextest run --workspace` builds beside the test binaries (the
//! `wazap-stdio` crate's integration tests make cargo build its binary); when absent it is built
//! here.

mod oauth;
mod refusal;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::sim::{Transmissions, UpsertContact};
use wazap_tests::fixtures::{minutes_ago, person, text};
use wazap_tests::{Gateway, Stack};
use wazap_worker::config::ConnectorKind;

/// The text of the message every client must read back.
const HELLO: &str = "hello from the compat check";

/// `tests/compat/`.
fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("compat")
}

/// The Python interpreter with the MCP SDK (`WAZAP_TEST_PYTHON`, default `python3`); panics
/// with the install command when the SDK is missing.
fn python() -> String {
    let python = std::env::var("WAZAP_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import mcp, httpx2"])
        .output();
    match probe {
        Ok(out) if out.status.success() => python,
        Ok(out) => panic!(
            "the MCP Python SDK is missing for {python}: run `pip install -r tests/compat/requirements.txt` ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!(
            "cannot run {python} ({e}); install Python 3 and the MCP SDK (tests/compat/requirements.txt)"
        ),
    }
}

/// The MCP Inspector CLI from `tests/compat/node_modules`; panics with the install command
/// when it is missing.
fn inspector() -> PathBuf {
    let bin = compat_dir().join("node_modules/.bin/inspector");
    assert!(
        bin.exists(),
        "the MCP Inspector is missing: run `(cd tests/compat && npm ci)` ({} not found)",
        bin.display()
    );
    bin
}

/// The `wazap-stdio` executable in this build's target directory, built when absent.
pub(crate) fn stdio_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // <target>/<profile>/deps/e2e-<hash> → <target>/<profile>/wazap-stdio
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable inside <target>/<profile>/deps");
    let bin = profile_dir.join(format!("wazap-stdio{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "wazap-stdio", "--bin", "wazap-stdio"])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .status()
            .expect("run cargo build for wazap-stdio");
        assert!(status.success(), "building wazap-stdio failed");
    }
    assert!(bin.exists(), "wazap-stdio not found at {}", bin.display());
    bin
}

/// Run `command` off the async runtime, bounded by `limit`.
pub(crate) async fn run_bounded(mut command: Command, limit: Duration) -> Output {
    command.stdin(Stdio::null());
    let child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(limit, child)
        .await
        .expect("the command did not finish in time")
        .expect("the command could not be started")
}

/// A sim stack with one contact who wrote [`HELLO`], a connection allowed to send to every
/// chat, and a gateway with `vars`.
struct Fixture {
    stack: Stack,
    gateway: Gateway,
    token: String,
    chat: String,
}

impl Fixture {
    async fn start(vars: &[(&str, &str)]) -> anyhow::Result<Self> {
        let stack = Stack::start(ConnectorKind::Sim).await?;
        let ack = stack
            .sim(
                sim_op::UPSERT_CONTACT,
                &UpsertContact {
                    jid: person("972509990001"),
                    lid: None,
                    name: "Compat".into(),
                },
            )
            .await?;
        let chat = ack.ids.into_iter().next().expect("chat id");
        stack
            .inject(text(
                &person("972509990001"),
                "compat-1",
                minutes_ago(1),
                HELLO,
            ))
            .await?;
        let (_, token) = stack.sending_connection(SendMode::All, vec![]).await?;
        let gateway = stack.gateway(vars).await?;
        Ok(Self {
            stack,
            gateway,
            token,
            chat,
        })
    }

    /// Run `check_clients.py` with `args`; the token travels in the environment.
    async fn python_sdk(&self, python: &str, args: &[&str]) -> Value {
        let mut command = Command::new(python);
        command
            .arg(compat_dir().join("check_clients.py"))
            .args(["--url", &self.gateway.mcp_url(), "--chat", &self.chat])
            .args(["--expect-text", HELLO])
            .args(args)
            .env("WAZAP_TOKEN", &self.token);
        let out = run_bounded(command, Duration::from_secs(120)).await;
        assert!(
            out.status.success(),
            "check_clients.py {args:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(line).unwrap_or_else(|e| panic!("summary {line:?}: {e}"))
    }

    async fn transmissions(&self) -> usize {
        self.stack
            .sim_raw::<_, Transmissions>(sim_op::TRANSMISSIONS, &json!({}))
            .await
            .expect("transmissions")
            .transmissions
            .len()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_drives_the_gateway_and_wazap_stdio() -> anyhow::Result<()> {
    let python = python();
    let bin = stdio_bin();
    let bin = bin.to_str().expect("utf-8 path");
    let f = Fixture::start(&[]).await?;

    // Straight at /mcp: the 2026-07-28 stateless protocol, then the legacy handshake that
    // clients built before it use.
    let http = f
        .python_sdk(
            &python,
            &["--target", "http", "--request-id", "compat-http"],
        )
        .await;
    assert_eq!(http["protocol"], "2026-07-28", "{http}");
    assert_eq!(http["tools"].as_array().map(Vec::len), Some(12), "{http}");
    let legacy = f
        .python_sdk(&python, &["--target", "http", "--mode", "legacy"])
        .await;
    assert_ne!(legacy["protocol"], "2026-07-28", "{legacy}");

    // Through wazap-stdio, both ways too.
    let stdio = f
        .python_sdk(
            &python,
            &[
                "--target",
                "stdio",
                "--stdio-bin",
                bin,
                "--request-id",
                "compat-stdio",
            ],
        )
        .await;
    assert_eq!(stdio["server"], "wazap-stdio", "{stdio}");
    assert_eq!(stdio["tools"], http["tools"]);
    f.python_sdk(
        &python,
        &["--target", "stdio", "--stdio-bin", bin, "--mode", "legacy"],
    )
    .await;

    // The two sends were transmitted once each.
    assert_eq!(f.transmissions().await, 2);
    assert_ne!(http["sent"], stdio["sent"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn wazap_stdio_serves_a_deployment_with_fewer_tools() -> anyhow::Result<()> {
    let python = python();
    let bin = stdio_bin();
    let f = Fixture::start(&[("WAZAP_OUTBOUND", "off"), ("WAZAP_ATTACHMENTS", "off")]).await?;
    let stdio = f
        .python_sdk(
            &python,
            &[
                "--target",
                "stdio",
                "--stdio-bin",
                bin.to_str().expect("utf-8 path"),
                "--expect-tools",
                "6",
            ],
        )
        .await;
    assert_eq!(stdio["tools"].as_array().map(Vec::len), Some(6), "{stdio}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_inspector_cli_lists_the_gateway_tools() -> anyhow::Result<()> {
    let inspector = inspector();
    let f = Fixture::start(&[]).await?;
    let mut command = Command::new(&inspector);
    command
        .args(["--cli", &f.gateway.mcp_url(), "--transport", "http"])
        .args(["--method", "tools/list", "--header"])
        .arg(format!("Authorization: Bearer {}", f.token))
        .current_dir(compat_dir());
    let out = run_bounded(command, Duration::from_secs(120)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inspector --cli failed ({}):\n{}\n{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("inspector output is not JSON ({e}):\n{stdout}"));
    let tools = listed["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 12, "{listed}");
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let read_only = !matches!(name, "send_message" | "send_media" | "send_voice_note");
        assert_eq!(tool["annotations"]["readOnlyHint"], read_only, "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
    Ok(())
}
