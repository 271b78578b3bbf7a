//! wazap's OAuth 2.1 authorization server over NATS (#28): what the owner listener's
//! `/oauth/*` endpoints and consent page ask the worker, which keeps the clients, the pending
//! authorization requests, the codes and the refresh tokens, and decides.
//!
//! The client-facing ops (`oauth_*`) carry no session and no grant: a public client proves
//! itself with PKCE and the tokens it holds. Their answers are [`OAuthAnswer`]: the value, or a
//! refusal in OAuth's own terms, which the gateway writes as the RFC's JSON error. The owner's
//! side (the consent page's view and decision) is two owner ops, under the owner's session and
//! CSRF token like every other ([`super::owner`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::grants::{ReadScope, SendMode};
use super::owner::{Empty, OwnerAnswer, OwnerCall};
use crate::bus::Rpc;
use crate::oauth::{ClientMetadata, OAuthError};
use crate::subjects::op;

/// How long the gateway waits for an OAuth op.
const OAUTH_DEADLINE: Duration = Duration::from_secs(10);

/// A refusal in OAuth's terms: `error` and `error_description` of RFC 6749 §5.2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthRefusal {
    /// The RFC's error code.
    pub error: String,
    /// One fixed wording; never echoes what was sent.
    pub error_description: String,
}

impl From<OAuthError> for OAuthRefusal {
    fn from(e: OAuthError) -> Self {
        Self {
            error: e.code.to_owned(),
            error_description: e.description.to_owned(),
        }
    }
}

/// A client-facing OAuth op's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthAnswer<T> {
    /// Done.
    Done(T),
    /// Refused (HTTP 400, or 401 for `invalid_client`).
    Refused(OAuthRefusal),
}

impl<T> From<OAuthError> for OAuthAnswer<T> {
    fn from(e: OAuthError) -> Self {
        Self::Refused(e.into())
    }
}

/// A client registered by Dynamic Client Registration (RFC 7591 §3.2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The new client id.
    pub client_id: String,
    /// When it was issued, seconds since the epoch.
    pub client_id_issued_at: i64,
    /// The metadata as kept (defaults filled in).
    #[serde(flatten)]
    pub metadata: ClientMetadata,
}

/// An authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707) as the query
/// carried them, unchecked, and the resource URLs this deployment serves (which only the
/// gateway knows: its listeners' hosts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizeRequest {
    /// `client_id`.
    pub client_id: Option<String>,
    /// When `client_id` is a URL: the metadata document the gateway fetched from it (checked:
    /// its `client_id` is that URL, its metadata pass the registration rules).
    #[serde(default)]
    pub client_document: Option<ClientMetadata>,
    /// `redirect_uri` (may be left out by a client with exactly one registered).
    pub redirect_uri: Option<String>,
    /// `response_type`: `code`.
    pub response_type: Option<String>,
    /// `code_challenge`.
    pub code_challenge: Option<String>,
    /// `code_challenge_method`: `S256`.
    pub code_challenge_method: Option<String>,
    /// `state`, returned as given.
    pub state: Option<String>,
    /// `resource`: the `/mcp` URL the token is for (required).
    pub resource: Option<String>,
    /// The canonical `/mcp` URLs of this deployment, any of which `resource` may name.
    pub resources: Vec<String>,
}

/// Where an authorization request goes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizeNext {
    /// Stored for the owner's decision: the consent page of `request`.
    Consent {
        /// The pending request's id.
        request: String,
    },
    /// Back to the client's redirect URI with an error (the URI was verified).
    Redirect {
        /// The full URL.
        url: String,
    },
    /// An error page: the client or its redirect URI could not be verified, so nothing may
    /// be sent there (no open redirect).
    ErrorPage {
        /// What is wrong, in one fixed wording.
        description: String,
    },
}

/// The token endpoint's form (RFC 6749 §4.1.3 and §6), unchecked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRequest {
    /// `authorization_code` or `refresh_token`.
    pub grant_type: Option<String>,
    /// The code, for `authorization_code`.
    pub code: Option<String>,
    /// The redirect URI the code was sent to.
    pub redirect_uri: Option<String>,
    /// The client.
    pub client_id: Option<String>,
    /// The PKCE verifier.
    pub code_verifier: Option<String>,
    /// The refresh token, for `refresh_token`.
    pub refresh_token: Option<String>,
    /// `resource`, when given: must be the one the grant was for.
    pub resource: Option<String>,
}

/// A successful token answer (RFC 6749 §5.1). `Debug` never shows the tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenResponse {
    /// The access token: a wazap grant JWT whose audience is the resource.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// The next refresh token (single use).
    pub refresh_token: String,
    /// `mcp`.
    pub scope: String,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// The revocation endpoint's form (RFC 7009 §2.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeTokenRequest {
    /// An access or refresh token.
    pub token: Option<String>,
    /// `access_token` or `refresh_token` (a hint only).
    pub token_type_hint: Option<String>,
    /// The client.
    pub client_id: Option<String>,
}

/// The consent page's question: which pending request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentRequest {
    /// The pending request's id.
    pub request: String,
}

/// What the consent page shows: everything about the client is what it *claims*.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentView {
    /// The pending request's id.
    pub request: String,
    /// The client id (an https URL for a metadata document).
    pub client_id: String,
    /// How the client registered: `dcr` or `cimd`.
    pub registration: String,
    /// The name it gave, if any.
    pub client_name: Option<String>,
    /// Its home page, if given.
    pub client_uri: Option<String>,
    /// The host of its logo, if given (the logo itself is not loaded).
    pub logo_host: Option<String>,
    /// Where the code will be sent.
    pub redirect_uri: String,
    /// The `/mcp` URL the token will be for.
    pub resource: String,
    /// When the request lapses unless decided.
    pub expires_at: DateTime<Utc>,
}

/// The owner's decision on a pending request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentDecision {
    /// The pending request's id.
    pub request: String,
    /// Approve (create the connection) or deny.
    pub approve: bool,
    /// The new connection's name (default: the client's name); approval only.
    #[serde(default)]
    pub name: Option<String>,
    /// When the connection and its tokens stop working; approval only.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// What it may read; approval only.
    #[serde(default)]
    pub read_scope: Option<ReadScope>,
    /// Where it may send from the start (default `none`).
    #[serde(default)]
    pub send_mode: Option<SendMode>,
    /// The chats for `selected`.
    #[serde(default)]
    pub send_chats: Vec<String>,
}

/// Where the owner's browser goes after deciding: the client's redirect URI with the code (or
/// `access_denied`) and the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentOutcome {
    /// The full URL.
    pub redirect: String,
    /// The connection created, on approval.
    pub connection_id: Option<String>,
}

macro_rules! oauth_op {
    ($(#[$doc:meta])* $name:ident, $op:expr, $req:ty, $resp:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
        impl Rpc for $name {
            const OP: &'static str = $op;
            const DEADLINE: Duration = OAUTH_DEADLINE;
            type Request = $req;
            type Response = OAuthAnswer<$resp>;
        }
    };
}

oauth_op!(
    /// RPC `oauth_register`: Dynamic Client Registration of a public client.
    OAuthRegister, op::OAUTH_REGISTER, ClientMetadata, RegisteredClient
);
oauth_op!(
    /// RPC `oauth_authorize`: check an authorization request and keep it for the owner.
    OAuthAuthorize, op::OAUTH_AUTHORIZE, AuthorizeRequest, AuthorizeNext
);
oauth_op!(
    /// RPC `oauth_token`: redeem a code or a refresh token.
    OAuthToken, op::OAUTH_TOKEN, TokenRequest, TokenResponse
);
oauth_op!(
    /// RPC `oauth_revoke`: revoke the grant a token belongs to (always `Done`, RFC 7009).
    OAuthRevoke, op::OAUTH_REVOKE, RevokeTokenRequest, Empty
);

/// RPC `owner_oauth_request`: a pending request, for the consent page.
#[derive(Debug)]
pub struct OwnerOAuthRequest;
impl Rpc for OwnerOAuthRequest {
    const OP: &'static str = op::OWNER_OAUTH_REQUEST;
    const DEADLINE: Duration = OAUTH_DEADLINE;
    type Request = OwnerCall<ConsentRequest>;
    type Response = OwnerAnswer<ConsentView>;
}

/// RPC `owner_oauth_decide`: approve or deny a pending request.
#[derive(Debug)]
pub struct OwnerOAuthDecide;
impl Rpc for OwnerOAuthDecide {
    const OP: &'static str = op::OWNER_OAUTH_DECIDE;
    const DEADLINE: Duration = OAUTH_DEADLINE;
    type Request = OwnerCall<ConsentDecision>;
    type Response = OwnerAnswer<ConsentOutcome>;
}
