//! A minimal MCP client for measuring: one keep-alive HTTP connection posting stateless
//! JSON-RPC `tools/call` requests (protocol 2025-11-25 headers, no session), so the figures show
//! the server path rather than a client library's own overhead. Results are checked, not parsed
//! further than `isError`.

use serde_json::{Value, json};

/// A raw Streamable HTTP MCP client.
pub(crate) struct RawMcp {
    http: reqwest::Client,
    url: String,
    auth: String,
}

impl RawMcp {
    /// A client for `url` with bearer `token`.
    pub(crate) fn new(url: &str, token: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()?;
        Ok(Self {
            http,
            url: url.to_owned(),
            auth: format!("Bearer {token}"),
        })
    }

    /// Call `tool`; fails on an HTTP error, a JSON-RPC error or an `isError` result.
    pub(crate) async fn call(&self, tool: &str, args: &Value) -> anyhow::Result<()> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        });
        let resp = self
            .http
            .post(&self.url)
            .header("authorization", &self.auth)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
            .await?;
        anyhow::ensure!(resp.status().is_success(), "{tool}: HTTP {}", resp.status());
        let v: Value = resp.json().await?;
        anyhow::ensure!(v.get("error").is_none(), "{tool}: {}", v["error"]);
        anyhow::ensure!(
            v["result"]["isError"] != true,
            "{tool} failed: {}",
            v["result"]["content"]
        );
        Ok(())
    }
}
