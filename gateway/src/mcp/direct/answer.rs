//! The direct route's answer, shaped and sent as rmcp 3.11 shapes and sends a `tools/call`
//! answer in JSON-response mode: the tool's result or error wrapped in rmcp's own JSON-RPC
//! message type, adjusted per protocol generation as rmcp's `ServerHandler` adjusts it
//! (legacy peers: `resultType` and non-object output stripped; 2026-07-28 peers: cache hints,
//! `RESOURCE_NOT_FOUND` as invalid params), with the HTTP status rmcp gives that message.
//!
//! The direct route's tools only return `CallToolResult`, never a task or an input request,
//! so rmcp's rules for those cannot apply here.

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, ErrorCode, RequestId, ServerJsonRpcMessage, ServerResult};

use super::request::Peer;
use crate::error::{ApiError, internal_error};

/// The HTTP response for a direct call's `result`.
pub(super) fn respond(
    peer: Peer,
    id: RequestId,
    result: Result<CallToolResponse, ErrorData>,
) -> Response {
    let message = shape(peer, id, result);
    match serde_json::to_vec(&message) {
        Ok(body) => (
            status(peer, &message),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => ApiError::from(internal_error(&e)).into_response(),
    }
}

/// The JSON-RPC message rmcp's handler and serve loop make of `result`.
fn shape(
    peer: Peer,
    id: RequestId,
    result: Result<CallToolResponse, ErrorData>,
) -> ServerJsonRpcMessage {
    match (peer, result) {
        (Peer::Legacy, Ok(response)) => {
            let mut result = ServerResult::from(response);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id)
        }
        (Peer::Standard, Ok(response)) => {
            let mut result = ServerResult::from(response);
            result.fill_missing_cache_hints();
            ServerJsonRpcMessage::response(result, id)
        }
        (Peer::Legacy, Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
        (Peer::Standard, Err(mut error)) => {
            if error.code == ErrorCode::RESOURCE_NOT_FOUND {
                error.code = ErrorCode::INVALID_PARAMS;
            }
            ServerJsonRpcMessage::error(error, Some(id))
        }
    }
}

/// The status rmcp sends `message` with: always 200 on its legacy path; on the 2026-07-28
/// path its `jsonrpc_http_status` (the direct route only takes well-formed `_meta`).
fn status(peer: Peer, message: &ServerJsonRpcMessage) -> StatusCode {
    let (Peer::Standard, ServerJsonRpcMessage::Error(error)) = (peer, message) else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::{Value, json};

    fn json_of(message: &ServerJsonRpcMessage) -> Value {
        serde_json::to_value(message).unwrap()
    }

    fn ok(value: Value) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::structured(value).into())
    }

    #[test]
    fn legacy_results_lose_the_result_type_and_standard_ones_keep_it() {
        let legacy = json_of(&shape(
            Peer::Legacy,
            RequestId::Number(3),
            ok(json!({"a": 1})),
        ));
        let standard = json_of(&shape(
            Peer::Standard,
            RequestId::Number(3),
            ok(json!({"a": 1})),
        ));
        assert_eq!(legacy["id"], 3);
        assert_eq!(legacy["result"]["structuredContent"]["a"], 1);
        assert!(legacy["result"].get("resultType").is_none(), "{legacy}");
        assert_eq!(standard["result"]["resultType"], "complete", "{standard}");
        assert_eq!(standard["result"]["structuredContent"]["a"], 1);
    }

    #[test]
    fn legacy_results_lose_non_object_output() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("[1]")]);
        result.structured_content = Some(json!([1]));
        let legacy = json_of(&shape(
            Peer::Legacy,
            RequestId::Number(1),
            Ok(result.clone().into()),
        ));
        assert!(
            legacy["result"].get("structuredContent").is_none(),
            "{legacy}"
        );
        let standard = json_of(&shape(
            Peer::Standard,
            RequestId::Number(1),
            Ok(result.into()),
        ));
        assert_eq!(standard["result"]["structuredContent"], json!([1]));
    }

    #[test]
    fn errors_keep_their_id_and_standard_peers_get_invalid_params_for_not_found() {
        let id = RequestId::String("x".into());
        let not_found = || Err(ErrorData::resource_not_found("gone", None));
        let legacy = json_of(&shape(Peer::Legacy, id.clone(), not_found()));
        assert_eq!(legacy["id"], "x");
        assert_eq!(legacy["error"]["code"], -32002);
        let standard = json_of(&shape(Peer::Standard, id, not_found()));
        assert_eq!(standard["error"]["code"], -32602);
    }

    #[test]
    fn statuses_follow_rmcps_mapping_on_the_standard_path_only() {
        let error = |code| {
            ServerJsonRpcMessage::error(ErrorData::new(code, "e", None), Some(RequestId::Number(1)))
        };
        for (code, standard) in [
            (ErrorCode::INVALID_PARAMS, StatusCode::OK),
            (ErrorCode::INTERNAL_ERROR, StatusCode::OK),
            (ErrorCode::HEADER_MISMATCH, StatusCode::BAD_REQUEST),
            (
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                StatusCode::BAD_REQUEST,
            ),
            (
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                StatusCode::BAD_REQUEST,
            ),
            (ErrorCode::METHOD_NOT_FOUND, StatusCode::NOT_FOUND),
        ] {
            assert_eq!(status(Peer::Standard, &error(code)), standard, "{code:?}");
            assert_eq!(
                status(Peer::Legacy, &error(code)),
                StatusCode::OK,
                "{code:?}"
            );
        }
        let result = shape(Peer::Standard, RequestId::Number(1), ok(json!({})));
        assert_eq!(status(Peer::Standard, &result), StatusCode::OK);
    }
}
