//! An MCP client for tests: rmcp's Streamable HTTP client (protocol 2026-07-28, stateless), with
//! results flattened to JSON so tests assert on what travels on the wire.

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

/// A connected MCP client.
pub struct Mcp {
    service: RunningService<RoleClient, ()>,
}

/// A tool result as the agent sees it.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    /// `isError`.
    pub is_error: bool,
    /// `structuredContent`, if any.
    pub structured: Option<Value>,
    /// The text blocks, joined.
    pub text: String,
    /// The image blocks as `(mime_type, base64 data)`.
    pub images: Vec<(String, String)>,
    /// The whole result as JSON.
    pub raw: Value,
}

impl ToolOutcome {
    /// The error code of an `isError` result (`{"error":{"code":…}}` in its text).
    pub fn error_code(&self) -> Option<String> {
        if !self.is_error {
            return None;
        }
        let v: Value = serde_json::from_str(&self.text).ok()?;
        v["error"]["code"].as_str().map(str::to_owned)
    }

    /// The structured content, panicking with the error when the call failed.
    pub fn ok(&self) -> &Value {
        assert!(!self.is_error, "tool failed: {}", self.text);
        self.structured.as_ref().expect("structuredContent")
    }
}

impl Mcp {
    /// Connect to `url` with bearer `token`.
    pub async fn connect(url: &str, token: &str) -> anyhow::Result<Self> {
        // rmcp's reqwest is built without a TLS provider of its own (wazap-stdio's features ask
        // for `reqwest-tls-no-provider`, unified in a workspace build): use ring's, as
        // wazap-stdio does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        crate::leak::record_token(crate::leak::kind::BEARER, token);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.to_owned())
                .auth_header(token.to_owned()),
        );
        let service = ()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await?;
        Ok(Self { service })
    }

    /// `tools/list`, as JSON tool objects.
    pub async fn tools(&self) -> anyhow::Result<Vec<Value>> {
        let tools = self.service.list_all_tools().await?;
        Ok(tools
            .into_iter()
            .map(|t| serde_json::to_value(t).expect("tool json"))
            .collect())
    }

    /// `tools/call` of `name` with JSON object `args`.
    pub async fn call(&self, name: &str, args: Value) -> anyhow::Result<ToolOutcome> {
        crate::leak::tool_arguments(&args);
        let Value::Object(args) = args else {
            anyhow::bail!("arguments must be an object")
        };
        let result = self
            .service
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await?;
        let raw = serde_json::to_value(&result)?;
        let mut text = String::new();
        let mut images = Vec::new();
        for block in raw["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
                Some("image") => images.push((
                    block["mimeType"].as_str().unwrap_or_default().to_owned(),
                    block["data"].as_str().unwrap_or_default().to_owned(),
                )),
                _ => {}
            }
        }
        let is_error = result.is_error.unwrap_or(false);
        if is_error {
            crate::leak::record_body("mcp tool result", 200, &raw.to_string());
        }
        Ok(ToolOutcome {
            is_error,
            structured: result.structured_content.clone(),
            text,
            images,
            raw,
        })
    }

    /// Close the client.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
