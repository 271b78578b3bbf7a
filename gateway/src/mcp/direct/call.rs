//! The tools' side of the direct route: each tool file names its shared `<tool>_call` in its
//! [`ToolEntry`] (`direct`), so the direct route runs the very code the tool's `#[tool]` method
//! runs; this module adds what rmcp's tool router does around a call (the argument-error
//! conversion) and the `mcp_call` span and metrics of
//! [`McpServer::call_tool`](rmcp::ServerHandler::call_tool), so both routes observe and answer
//! a call the same way.

use std::future::Future;
use std::pin::Pin;

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorCode, JsonObject};
use wazap_shared::grant::VerifiedGrant;

use crate::mcp::{CallContext, McpServer, ToolEntry};
use crate::media::Base64;
use crate::metrics::mcp_call;

/// A tool's future on the direct route.
pub(crate) type DirectFuture<'a> =
    Pin<Box<dyn Future<Output = Result<CallToolResult, ErrorData>> + Send + 'a>>;

/// A tool's shared call (`<tool>_call(&self, grant, args)`), boxed so every tool fits one
/// table entry. The media tools also get their `data_base64` when it was left in the body
/// ([`super::arguments`]); the others never get one.
pub(crate) type DirectFn = for<'a> fn(
    &'a McpServer,
    &'a VerifiedGrant,
    JsonObject,
    Option<Base64<'static>>,
) -> DirectFuture<'a>;

/// rmcp's tool router turns an invalid-params error whose message starts with this into an
/// `isError` result (`into_tool_argument_error` in rmcp's `handler/server/router/tool.rs`);
/// the direct route does the same. The gateway's own argument errors never start with it.
const ARGUMENT_ERROR_PREFIX: &str = "failed to deserialize parameters:";

/// One enabled tool the direct route may call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DirectTool {
    entry: &'static ToolEntry,
}

impl DirectTool {
    /// The tool's entry (only [`crate::mcp::ToolSet`] makes these, for enabled tools).
    pub(in crate::mcp) fn new(entry: &'static ToolEntry) -> Self {
        Self { entry }
    }

    /// The tool's name.
    pub(crate) fn name(self) -> &'static str {
        self.entry.name
    }

    /// Whether a client that goes away ends the call. Only the long poll stops (rmcp's route
    /// answers it at once when its cancellation token fires); every other tool runs to its end
    /// whether anyone reads the answer, as under rmcp, whose handler task is never aborted.
    pub(crate) fn cancel_on_disconnect(self) -> bool {
        self.entry.cancel_on_disconnect
    }

    /// Whether the tool takes a `data_base64` left in the request body (the media tools).
    pub(crate) fn takes_base64(self) -> bool {
        self.entry.takes_base64
    }
}

impl McpServer {
    /// The enabled tool `name`, if the direct route may answer it.
    pub(crate) fn direct_tool(&self, name: &str) -> Option<DirectTool> {
        self.tools.direct(name)
    }

    /// Call `tool` for the caller of `call`, inside the same span and metrics as rmcp's route
    /// ([`mcp_call`]) and with the router's argument-error conversion. `data` is a media tool's
    /// base64 when `args` holds an empty `data_base64` in its place.
    pub(crate) async fn call_direct(
        &self,
        tool: DirectTool,
        call: CallContext,
        args: JsonObject,
        data: Option<Base64<'static>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let CallContext { grant, trace } = call;
        mcp_call(tool.name(), trace, async move {
            match (tool.entry.direct)(self, &grant, args, data).await {
                Ok(result) => Ok(CallToolResponse::from(result)),
                Err(error) => argument_error(error),
            }
        })
        .await
    }
}

/// What rmcp's tool router answers for a tool's `Err`.
fn argument_error(error: ErrorData) -> Result<CallToolResponse, ErrorData> {
    if error.code == ErrorCode::INVALID_PARAMS && error.message.starts_with(ARGUMENT_ERROR_PREFIX) {
        return Ok(CallToolResult::error(vec![ContentBlock::text(error.message)]).into());
    }
    Err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_pass_through_as_rmcps_router_passes_them() {
        let ours = ErrorData::invalid_params("invalid arguments: limit: expected u32", None);
        assert_eq!(argument_error(ours.clone()).unwrap_err(), ours);
        let internal = ErrorData::internal_error("failed to deserialize parameters: x", None);
        assert_eq!(argument_error(internal.clone()).unwrap_err(), internal);
        let serde = ErrorData::invalid_params("failed to deserialize parameters: bad", None);
        let Ok(CallToolResponse::Complete(result)) = argument_error(serde) else {
            panic!("a tool result");
        };
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            result.content[0].as_text().expect("text").text,
            "failed to deserialize parameters: bad"
        );
    }
}
