//! The stable error codes of DESIGN §7, shared by every boundary (NATS replies, MCP results, HTTP).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stable, snake_case error code. Codes are append-only: clients match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Missing, malformed, expired, revoked or stale token.
    Unauthenticated,
    /// A schema or format violation; the message names the field, never its value.
    InvalidArgument,
    /// Media bytes are not standard padded base64.
    InvalidBase64,
    /// Media bytes do not match the declared kind and mime type, or a bad file name.
    InvalidMedia,
    /// Media over 8 MiB decoded.
    MediaTooLarge,
    /// The request envelope is over its limit.
    RequestTooLarge,
    /// Unknown account, or one outside the read scope.
    AccountNotFound,
    /// Unknown chat, or one outside the read scope (the same answer either way).
    ChatNotFound,
    /// Anything else that does not exist or is outside the read scope.
    NotFound,
    /// The chat is not covered by the connection's send permission.
    SendNotPermitted,
    /// The session's state forbids sending.
    SessionCannotSend,
    /// A `request_id` reused with other content or another chat.
    SendRequestConflict,
    /// The credential has 100,000 journal keys.
    SendJournalFull,
    /// Too many requests in flight.
    Busy,
    /// Too many requests over time.
    RateLimited,
    /// No worker answered on NATS.
    WorkerUnavailable,
    /// The request's deadline passed.
    DeadlineExceeded,
    /// A send tool could not learn what became of its send (its deadline passed, or the worker
    /// or NATS went away while it was in flight): it may have gone out.
    SendOutcomeUnknown,
    /// Anything else; logged with a trace id.
    Internal,
}

impl ErrorCode {
    /// Every code, for tests and documentation.
    pub const ALL: [ErrorCode; 19] = [
        Self::Unauthenticated,
        Self::InvalidArgument,
        Self::InvalidBase64,
        Self::InvalidMedia,
        Self::MediaTooLarge,
        Self::RequestTooLarge,
        Self::AccountNotFound,
        Self::ChatNotFound,
        Self::NotFound,
        Self::SendNotPermitted,
        Self::SessionCannotSend,
        Self::SendRequestConflict,
        Self::SendJournalFull,
        Self::Busy,
        Self::RateLimited,
        Self::WorkerUnavailable,
        Self::DeadlineExceeded,
        Self::SendOutcomeUnknown,
        Self::Internal,
    ];

    /// The wire string, e.g. `chat_not_found`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::InvalidArgument => "invalid_argument",
            Self::InvalidBase64 => "invalid_base64",
            Self::InvalidMedia => "invalid_media",
            Self::MediaTooLarge => "media_too_large",
            Self::RequestTooLarge => "request_too_large",
            Self::AccountNotFound => "account_not_found",
            Self::ChatNotFound => "chat_not_found",
            Self::NotFound => "not_found",
            Self::SendNotPermitted => "send_not_permitted",
            Self::SessionCannotSend => "session_cannot_send",
            Self::SendRequestConflict => "send_request_conflict",
            Self::SendJournalFull => "send_journal_full",
            Self::Busy => "busy",
            Self::RateLimited => "rate_limited",
            Self::WorkerUnavailable => "worker_unavailable",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::SendOutcomeUnknown => "send_outcome_unknown",
            Self::Internal => "internal",
        }
    }

    /// The HTTP status DESIGN §7 gives this code.
    pub fn http_status(self) -> u16 {
        match self {
            Self::Unauthenticated => 401,
            Self::InvalidArgument | Self::InvalidBase64 | Self::InvalidMedia => 400,
            Self::MediaTooLarge | Self::RequestTooLarge => 413,
            Self::AccountNotFound | Self::ChatNotFound | Self::NotFound => 404,
            Self::SendNotPermitted => 403,
            Self::SessionCannotSend | Self::SendRequestConflict => 409,
            Self::SendJournalFull => 507,
            Self::Busy | Self::RateLimited => 429,
            Self::WorkerUnavailable => 503,
            Self::DeadlineExceeded | Self::SendOutcomeUnknown => 504,
            Self::Internal => 500,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as it crosses a boundary: a code and a short, safe message.
///
/// The message never carries message text, media, credentials or provider diagnostics; it names
/// fields, not their values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    /// The stable code.
    pub code: ErrorCode,
    /// A human-readable explanation, safe to show to an agent.
    pub message: String,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `invalid_argument` naming the offending field.
    pub fn invalid(field: &str, why: &str) -> Self {
        Self::new(ErrorCode::InvalidArgument, format!("{field}: {why}"))
    }

    /// `send_outcome_unknown`, in its one wording: what the agent must do to learn the outcome
    /// without sending twice.
    pub fn send_outcome_unknown() -> Self {
        Self::new(
            ErrorCode::SendOutcomeUnknown,
            "the outcome of this send is unknown: it may have gone out. Repeat the call with the \
             same request_id (it never sends twice) or call get_send_status to learn it; use a \
             new request_id only once it reports failed",
        )
    }

    /// `internal`, carrying only a trace id so the operator can find the logged cause.
    pub fn internal(trace_id: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::Internal,
            format!("internal error (trace {trace_id})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_as_their_wire_strings() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn statuses_follow_the_design_table() {
        assert_eq!(ErrorCode::Busy.http_status(), 429);
        assert_eq!(ErrorCode::SendJournalFull.http_status(), 507);
        assert_eq!(ErrorCode::ChatNotFound.http_status(), 404);
        assert_eq!(ErrorCode::WorkerUnavailable.http_status(), 503);
        assert_eq!(ErrorCode::SendOutcomeUnknown.http_status(), 504);
        assert_eq!(
            ErrorCode::SendOutcomeUnknown.as_str(),
            "send_outcome_unknown"
        );
    }
}
