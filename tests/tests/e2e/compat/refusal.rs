//! `wazap-stdio` against a fake upstream (an rmcp server on port 0): wazap's annotations are
//! accepted, a send tool announced as read-only makes the adapter refuse the server.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::model::{
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use tokio_util::sync::CancellationToken;

use super::{run_bounded, stdio_bin};

/// A server that lists `tools` (which a test may swap) and nothing else.
#[derive(Clone)]
struct FakeUpstream {
    tools: Arc<Mutex<Vec<Tool>>>,
}

impl ServerHandler for FakeUpstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.lock().expect("tools").clone();
        Ok(ListToolsResult::with_all_items(tools))
    }
}

/// `name` with the four hints.
fn tool(name: &str, read_only: bool, open_world: bool) -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    Tool::new(name.to_owned(), "fake", Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(false)
            .idempotent(true)
            .open_world(open_world),
    )
}

/// Serve `tools` at `http://127.0.0.1:<port>/mcp` until the token is cancelled.
async fn serve(tools: Vec<Tool>) -> anyhow::Result<(String, CancellationToken)> {
    serve_shared(Arc::new(Mutex::new(tools))).await
}

/// Like [`serve`], listing whatever `tools` holds at the time.
async fn serve_shared(tools: Arc<Mutex<Vec<Tool>>>) -> anyhow::Result<(String, CancellationToken)> {
    let fake = FakeUpstream { tools };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(fake.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let stop = CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
    });
    Ok((url, stop))
}

fn adapter(url: &str) -> Command {
    let mut command = Command::new(stdio_bin());
    command
        .env("WAZAP_URL", url)
        .env("WAZAP_TOKEN", "not-checked-by-the-fake")
        .env("WAZAP_STDIO_CONFIG", "")
        .env("RUST_LOG", "info");
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn wazap_stdio_refuses_a_send_tool_announced_read_only() -> anyhow::Result<()> {
    let (url, stop) = serve(vec![
        tool("list_chats", true, false),
        tool("send_message", true, true),
    ])
    .await?;
    let out = run_bounded(adapter(&url), Duration::from_secs(60)).await;
    stop.cancel();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("send_message") && stderr.contains("readOnlyHint = true"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn wazap_stdio_accepts_wazap_annotations_and_serves() -> anyhow::Result<()> {
    // The control for the refusal above: the same fake with wazap's hints is served.
    let (url, stop) = serve(vec![
        tool("list_chats", true, false),
        tool("send_message", false, true),
    ])
    .await?;
    let mut command = adapter(&url);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let stderr = child.stderr.take().expect("stderr");
    let (served_tx, served_rx) = tokio::sync::oneshot::channel();
    let log = tokio::task::spawn_blocking(move || {
        let mut served_tx = Some(served_tx);
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("serving MCP on stdio")
                && let Some(tx) = served_tx.take()
            {
                let _ = tx.send(line.clone());
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    let served = tokio::time::timeout(Duration::from_secs(60), served_rx).await;
    // Closing stdin ends the session; the adapter exits cleanly.
    drop(child.stdin.take());
    let status = tokio::task::spawn_blocking(move || child.wait()).await??;
    let log = log.await?;
    stop.cancel();
    let line = served
        .expect("the adapter did not log that it serves")
        .unwrap_or_else(|_| panic!("the adapter stopped before serving:\n{log}"));
    assert!(line.contains("\"tools\":2"), "{line}");
    assert!(status.success(), "{status}:\n{log}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn wazap_stdio_stops_forwarding_when_a_relisting_disagrees() -> anyhow::Result<()> {
    let tools = Arc::new(Mutex::new(vec![
        tool("list_chats", true, false),
        tool("send_message", false, true),
    ]));
    let (url, stop) = serve_shared(Arc::clone(&tools)).await?;
    let mut command = tokio::process::Command::from(adapter(&url));
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let io = (
        child.stdout.take().expect("stdout"),
        child.stdin.take().expect("stdin"),
    );
    let client = tokio::time::timeout(Duration::from_secs(60), ().serve(io)).await??;
    assert_eq!(client.list_all_tools().await?.len(), 2);

    // The server is redeployed and now announces send_message as read-only.
    tools.lock().expect("tools")[1] = tool("send_message", true, true);
    let refused = client
        .list_all_tools()
        .await
        .expect_err("a disagreeing listing");
    assert!(
        refused.to_string().contains("send_message")
            && refused.to_string().contains("readOnlyHint"),
        "{refused}"
    );
    let call = client
        .call_tool(CallToolRequestParams::new("send_message"))
        .await
        .expect_err("nothing is forwarded after a refusal");
    assert!(call.to_string().contains("readOnlyHint"), "{call}");
    let _ = client.cancel().await;
    stop.cancel();
    Ok(())
}
