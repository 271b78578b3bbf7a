//! A gateway running in this process, and raw HTTP helpers for tests of the HTTP layer itself.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Mcp, Stack};

/// A gateway running in this process.
pub struct Gateway {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Where listener B (owner dashboard and API) listens.
    pub owner_addr: SocketAddr,
    pub(crate) shutdown: CancellationToken,
    pub(crate) handle: JoinHandle<anyhow::Result<()>>,
}

impl Gateway {
    /// `http://127.0.0.1:<port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// A URL on this gateway.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A URL on listener B, e.g. `owner_url("/api/connections")`.
    pub fn owner_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.owner_addr)
    }

    /// Wait until `/readyz` answers 200.
    pub async fn wait_ready(&self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(r) = http.get(self.url("/readyz")).send().await
                && r.status() == 200
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("gateway not ready")
    }

    /// An MCP client with `token`.
    pub async fn mcp(&self, token: &str) -> anyhow::Result<Mcp> {
        Mcp::connect(&self.mcp_url(), token).await
    }

    /// Stop it and wait for it to exit.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let handle = std::mem::replace(&mut self.handle, tokio::spawn(async { Ok(()) }));
        tokio::time::timeout(Duration::from_secs(15), handle).await???;
        Ok(())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Stack {
    /// Start a gateway on port 0 with extra configuration `vars` (e.g. the concurrency limit);
    /// listener B (owner dashboard) also binds port 0, with `WAZAP_OWNER_ORIGIN` set to
    /// `http://127.0.0.1:<its port>` unless `vars` says otherwise.
    pub async fn gateway(&self, vars: &[(&str, &str)]) -> anyhow::Result<Gateway> {
        self.gateway_with(vars, |_| {}).await
    }

    /// [`Stack::gateway`], with `adjust` applied to the configuration read from `vars` (for
    /// what the environment does not set, e.g. a shorter send deadline).
    pub async fn gateway_with(
        &self,
        vars: &[(&str, &str)],
        adjust: impl FnOnce(&mut wazap_gateway::Config),
    ) -> anyhow::Result<Gateway> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let owner = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let owner_addr = owner.local_addr()?;
        let mut env: HashMap<String, String> = HashMap::new();
        env.insert("WAZAP_NATS_URL".into(), self.nats_url.clone());
        env.insert("WAZAP_NATS_PREFIX".into(), self.prefix.clone());
        env.insert("WAZAP_MCP_ADDR".into(), addr.to_string());
        env.insert("WAZAP_OWNER_ORIGIN".into(), format!("http://{owner_addr}"));
        for (k, v) in vars {
            env.insert((*k).into(), (*v).into());
        }
        let mut config = wazap_gateway::Config::from_source(&env)?;
        adjust(&mut config);
        let shutdown = CancellationToken::new();
        let listeners = wazap_gateway::Listeners {
            mcp: listener,
            owner: Some(owner),
        };
        let handle = tokio::spawn(wazap_gateway::run(config, listeners, shutdown.clone()));
        let gw = Gateway {
            addr,
            owner_addr,
            shutdown,
            handle,
        };
        gw.wait_ready().await?;
        Ok(gw)
    }
}

/// The `wazap-gateway` binary as a child process of a [`Stack`], listening on a free loopback port
/// of its own (listener B on an ephemeral one) and logging warnings only, so its RSS and
/// descriptors are its own. Dropping it kills the process.
pub struct ChildGateway {
    /// `127.0.0.1:<port>` of its MCP listener.
    pub addr: String,
    /// Its process id, for `/proc`.
    pub pid: u32,
    _child: tokio::process::Child,
}

impl ChildGateway {
    /// Start `binary` as `stack`'s gateway (it may not answer yet: each caller polls it in its
    /// own way).
    pub fn spawn(stack: &Stack, binary: &Path) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = tokio::process::Command::new(binary)
            .env("WAZAP_NATS_URL", &stack.nats_url)
            .env("WAZAP_NATS_PREFIX", &stack.prefix)
            .env("WAZAP_MCP_ADDR", &addr)
            .env("WAZAP_OWNER_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| anyhow::anyhow!("the gateway exited at once"))?;
        Ok(Self {
            addr,
            pid,
            _child: child,
        })
    }
}

/// POST `body` to `url` with `headers`; returns the status, headers and body as JSON (or
/// `Value::Null` when the body is not JSON).
pub async fn post_raw(
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> anyhow::Result<(u16, reqwest::header::HeaderMap, serde_json::Value)> {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            crate::leak::authorization(v);
        }
        req = req.header(*k, *v);
    }
    let resp = req.body(body).send().await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await?;
    crate::leak::answer("http", status, &String::from_utf8_lossy(&bytes));
    Ok((
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    ))
}

/// A JSON-RPC `tools/call` body.
pub fn tools_call_body(name: &str, args: serde_json::Value) -> Vec<u8> {
    crate::leak::tool_arguments(&args);
    serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": args}
    }))
    .expect("json")
}
