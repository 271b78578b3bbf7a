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
        self.call_result(tool, args).await.map(drop)
    }

    /// Call `tool` as [`RawMcp::call`] does, and return its result (`structuredContent`,
    /// `content`), for the checks of what a case finds.
    pub(crate) async fn call_result(&self, tool: &str, args: &Value) -> anyhow::Result<Value> {
        self.request("tools/call", json!({"name": tool, "arguments": args}), tool)
            .await
    }

    /// `tools/list`: everything the gateway does for a request (HTTP, guards, bearer check,
    /// rmcp) without a NATS hop, for attribution.
    pub(crate) async fn list_tools(&self) -> anyhow::Result<()> {
        self.request("tools/list", json!({}), "tools/list")
            .await
            .map(drop)
    }

    /// `tools/call` of `tool` with an argument it does not know: the gateway refuses it with a
    /// JSON-RPC invalid-params error before any NATS request, so this is the gateway's own cost
    /// of a tool call. `via_rmcp` adds an empty `_meta`, which the direct route of `/mcp` leaves
    /// to rmcp: the two routes side by side in one binary.
    pub(crate) async fn refused_call(&self, tool: &str, via_rmcp: bool) -> anyhow::Result<()> {
        let mut params = json!({"name": tool, "arguments": {"no_such_argument": 1}});
        if via_rmcp {
            params["_meta"] = json!({});
        }
        let v = self.post("tools/call", params, tool).await?;
        anyhow::ensure!(
            v["error"]["code"] == -32602,
            "{tool}: expected invalid params, got {v}"
        );
        Ok(())
    }

    async fn request(&self, method: &str, params: Value, what: &str) -> anyhow::Result<Value> {
        let mut v = self.post(method, params, what).await?;
        anyhow::ensure!(v.get("error").is_none(), "{what}: {}", v["error"]);
        anyhow::ensure!(
            v["result"]["isError"] != true,
            "{what} failed: {}",
            v["result"]["content"]
        );
        Ok(v["result"].take())
    }

    /// POST one JSON-RPC request; its answer as JSON after an HTTP success.
    async fn post(&self, method: &str, params: Value, what: &str) -> anyhow::Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let resp = self
            .http
            .post(&self.url)
            .header("authorization", &self.auth)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
            .await?;
        anyhow::ensure!(resp.status().is_success(), "{what}: HTTP {}", resp.status());
        Ok(resp.json().await?)
    }
}
