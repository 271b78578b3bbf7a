//! The one place where an error becomes an HTTP response: status from [`ErrorCode::http_status`]
//! (or an explicit override, e.g. 403 for a refused `Host`), body
//! `{"error":{"code","message"}}`, plus the headers some codes require.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use wazap_shared::{ErrorCode, RpcError};

/// An error answered over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    error: RpcError,
    status: Option<StatusCode>,
}

/// The JSON body of an error answer.
#[derive(serde::Serialize)]
struct ErrorBody<'a> {
    error: &'a RpcError,
}

impl ApiError {
    /// An error with `code` and a safe `message`.
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error: RpcError::new(code, message),
            status: None,
        }
    }

    /// Answer with `status` instead of the code's usual one.
    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status);
        self
    }
}

/// `internal`: logs `cause` once under a fresh trace id; the error carries only the id.
pub(crate) fn internal_error(cause: &dyn std::fmt::Display) -> RpcError {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    tracing::error!(trace.id = %trace_id, error = %cause, "internal error");
    RpcError::internal(trace_id)
}

impl From<RpcError> for ApiError {
    fn from(error: RpcError) -> Self {
        Self {
            error,
            status: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status.unwrap_or_else(|| {
            StatusCode::from_u16(self.error.code.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        });
        let mut response = (status, Json(ErrorBody { error: &self.error })).into_response();
        let headers = response.headers_mut();
        match self.error.code {
            ErrorCode::Unauthenticated => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(r#"Bearer error="invalid_token""#),
                );
            }
            ErrorCode::Busy | ErrorCode::RateLimited | ErrorCode::WorkerUnavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_json(r: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn maps_codes_to_status_body_and_headers() {
        let r = ApiError::new(ErrorCode::Busy, "too many requests in flight").into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let v = body_json(r).await;
        assert_eq!(v["error"]["code"], "busy");
        assert_eq!(v["error"]["message"], "too many requests in flight");

        let r = ApiError::new(ErrorCode::Unauthenticated, "x").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            r#"Bearer error="invalid_token""#
        );

        let r = ApiError::new(ErrorCode::InvalidArgument, "host")
            .with_status(StatusCode::FORBIDDEN)
            .into_response();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(body_json(r).await["error"]["code"], "invalid_argument");
    }

    #[tokio::test]
    async fn internal_errors_carry_only_a_trace_id() {
        let e = internal_error(&"secret cause +972501234567");
        assert_eq!(e.code, ErrorCode::Internal);
        let v = body_json(ApiError::from(e).into_response()).await;
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.starts_with("internal error (trace "));
        assert!(!msg.contains("secret") && !msg.contains("+972"));
    }
}
