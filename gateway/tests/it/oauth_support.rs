//! The fake worker's OAuth ops and the owner ops the consent page uses. Every call is recorded
//! (op, JSON body). How it answers is chosen by what the test sends:
//! - `oauth_register`: a client named `refuse` is refused, any other gets [`CLIENT_ID`];
//! - `oauth_authorize`: client `consent` waits for consent as `r_1`, `redirect` is sent back to
//!   [`CLIENT_ERROR_REDIRECT`], `bad-id` names a malformed request id, any other is an error
//!   page saying [`UNKNOWN_CLIENT`];
//! - `oauth_token`: code [`GOOD_CODE`] gets [`ACCESS_TOKEN`] and [`REFRESH_TOKEN`], client `bad`
//!   is `invalid_client`, anything else `invalid_grant`; `oauth_revoke` is always done;
//! - owner ops: session [`SESSION`] with [`CSRF`]; request `r_gone` is `not_found`.

use chrono::Utc;
use serde_json::Value;
use wazap_shared::bus::{Reply, encode_reply};
use wazap_shared::oauth::ClientMetadata;
use wazap_shared::subjects::op;
use wazap_shared::wire::oauth::{
    AuthorizeNext, AuthorizeRequest, ConsentDecision, ConsentOutcome, ConsentRequest, ConsentView,
    OAuthAnswer, OAuthRefusal, RegisteredClient, TokenRequest, TokenResponse,
};
use wazap_shared::wire::owner::{Empty, OwnerAnswer, OwnerCall, SessionInfo};
use wazap_shared::{ErrorCode, RpcError};

use crate::support::FakeState;

pub(crate) const CLIENT_ID: &str = "cl_registered_1";
pub(crate) const GOOD_CODE: &str = "code_good_7f3a9c";
pub(crate) const ACCESS_TOKEN: &str = "at_fake_9d8c7b6a5f4e";
pub(crate) const REFRESH_TOKEN: &str = "rt_fake_1a2b3c4d5e6f";
pub(crate) const UNKNOWN_CLIENT: &str = "the client is not registered here";
pub(crate) const CLIENT_ERROR_REDIRECT: &str =
    "https://client.example/cb?error=invalid_request&state=s1";
pub(crate) const CONSENT_REDIRECT: &str = "https://client.example/cb?code=c1&state=s1";
pub(crate) const SESSION: &str = "sess_fake_1";
pub(crate) const CSRF: &str = "csrf_fake_1";

fn ok<T: serde::Serialize>(v: T) -> bytes::Bytes {
    encode_reply(&Reply::Ok(v))
}

fn err(code: ErrorCode, message: &str) -> bytes::Bytes {
    encode_reply::<()>(&Reply::Error(RpcError::new(code, message)))
}

fn refusal<T: serde::Serialize>(error: &str, description: &str) -> bytes::Bytes {
    ok(OAuthAnswer::<T>::Refused(OAuthRefusal {
        error: error.into(),
        error_description: description.into(),
    }))
}

/// The fake worker's answer to an OAuth op or an owner op of the consent page.
pub(crate) fn answer(op_name: &str, payload: &[u8], st: &FakeState) -> bytes::Bytes {
    let body: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    st.oauth.lock().unwrap().push((op_name.to_owned(), body));
    match op_name {
        op::OAUTH_REGISTER => {
            let metadata: ClientMetadata = serde_json::from_slice(payload).unwrap();
            if metadata.client_name.as_deref() == Some("refuse") {
                return refusal::<RegisteredClient>("invalid_client_metadata", "refused here");
            }
            ok(OAuthAnswer::Done(RegisteredClient {
                client_id: CLIENT_ID.into(),
                client_id_issued_at: Utc::now().timestamp(),
                metadata,
            }))
        }
        op::OAUTH_AUTHORIZE => {
            let req: AuthorizeRequest = serde_json::from_slice(payload).unwrap();
            let next = match req.client_id.as_deref() {
                Some("consent") => AuthorizeNext::Consent {
                    request: "r_1".into(),
                },
                Some("bad-id") => AuthorizeNext::Consent {
                    request: "../r 1".into(),
                },
                Some("redirect") => AuthorizeNext::Redirect {
                    url: CLIENT_ERROR_REDIRECT.into(),
                },
                _ => AuthorizeNext::ErrorPage {
                    description: UNKNOWN_CLIENT.into(),
                },
            };
            ok(OAuthAnswer::Done(next))
        }
        op::OAUTH_TOKEN => {
            let req: TokenRequest = serde_json::from_slice(payload).unwrap();
            if req.client_id.as_deref() == Some("bad") {
                return refusal::<TokenResponse>("invalid_client", "the client is unknown");
            }
            if req.code.as_deref() != Some(GOOD_CODE) {
                return refusal::<TokenResponse>("invalid_grant", "the code is not valid");
            }
            ok(OAuthAnswer::Done(TokenResponse {
                access_token: ACCESS_TOKEN.into(),
                token_type: "Bearer".into(),
                expires_in: 3600,
                refresh_token: REFRESH_TOKEN.into(),
                scope: "mcp".into(),
            }))
        }
        op::OAUTH_REVOKE => ok(OAuthAnswer::Done(Empty {})),
        op::OWNER_SESSION => {
            let call: OwnerCall<Empty> = serde_json::from_slice(payload).unwrap();
            if call.session.as_deref() != Some(SESSION) {
                return err(ErrorCode::Unauthenticated, "log in first");
            }
            ok(OwnerAnswer::Done(SessionInfo {
                session: None,
                csrf: CSRF.into(),
                expires_at: Utc::now(),
            }))
        }
        op::OWNER_OAUTH_REQUEST => {
            let call: OwnerCall<ConsentRequest> = serde_json::from_slice(payload).unwrap();
            if call.session.as_deref() != Some(SESSION) {
                return err(ErrorCode::Unauthenticated, "log in first");
            }
            if call.body.request == "r_gone" {
                return err(ErrorCode::NotFound, "request: not found");
            }
            ok(OwnerAnswer::Done(ConsentView {
                request: call.body.request,
                client_id: CLIENT_ID.into(),
                registration: "dcr".into(),
                client_name: Some("Claude <b>".into()),
                client_uri: Some("https://claude.ai".into()),
                logo_host: Some("claude.ai".into()),
                redirect_uri: "https://claude.ai/api/mcp/auth_callback".into(),
                resource: "http://127.0.0.1/mcp".into(),
                expires_at: Utc::now(),
            }))
        }
        op::OWNER_OAUTH_DECIDE => {
            let call: OwnerCall<ConsentDecision> = serde_json::from_slice(payload).unwrap();
            if call.session.as_deref() != Some(SESSION) {
                return err(ErrorCode::Unauthenticated, "log in first");
            }
            if call.csrf.as_deref() != Some(CSRF) {
                return ok(OwnerAnswer::<ConsentOutcome>::CsrfRejected);
            }
            ok(OwnerAnswer::Done(ConsentOutcome {
                redirect: CONSENT_REDIRECT.into(),
                connection_id: call.body.approve.then(|| "conn_new".into()),
            }))
        }
        _ => err(ErrorCode::NotFound, "unknown op"),
    }
}
