//! The OAuth 2.1 rules of wazap's authorization server (#28), one checker per rule, for the
//! gateway's pre-checks and the worker's decisions alike:
//! - a redirect URI's form ([`check_redirect_uri`]): `https`, or `http` on a loopback host for
//!   a native client; no fragment, no user info; and how one given is matched against one
//!   registered ([`redirect_matches`]): exactly, except a loopback one's port (RFC 8252 §7.3);
//! - PKCE, `S256` only ([`check_code_challenge`], [`pkce_verifies`]): `plain` would hand the
//!   code's secret to whoever sees the authorization request;
//! - a public client's registration metadata (RFC 7591, [`ClientMetadata::checked`]).
//!
//! Refusals are [`OAuthError`]s: an RFC error code and one fixed description each, which never
//! echo what was sent.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Redirect URIs one client may register.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest URI accepted anywhere in a registration.
pub const MAX_URI_LEN: usize = 2_000;
/// The longest client name; the consent page shows it as what the client claims.
pub const MAX_CLIENT_NAME_LEN: usize = 100;

/// A refusal in OAuth's terms: `error` and `error_description` of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct OAuthError {
    /// The RFC's error code (`invalid_request`, `invalid_redirect_uri`, …).
    pub code: &'static str,
    /// What is wrong, in one fixed wording.
    pub description: &'static str,
}

const fn refused(code: &'static str, description: &'static str) -> OAuthError {
    OAuthError { code, description }
}

const BAD_REDIRECT: OAuthError = refused(
    "invalid_redirect_uri",
    "a redirect URI must be an absolute https URI, http on localhost, 127.0.0.1 or [::1], or a \
     native app's own scheme, without a fragment or user info",
);

/// Schemes a redirect URI may never use: they run or read something in the browser itself,
/// or are not redirects at all. Any other non-http scheme is a native app's own (RFC 8252
/// §7.1: `cursor://…`, `com.example.app:/cb`); PKCE keeps a code caught by another app useless.
const FORBIDDEN_SCHEMES: [&str; 13] = [
    "javascript",
    "data",
    "vbscript",
    "file",
    "about",
    "blob",
    "filesystem",
    "view-source",
    "ws",
    "wss",
    "ftp",
    "mailto",
    "tel",
];

/// A redirect URI's form: `https` anywhere, `http` only on a loopback host (any port), or a
/// native app's private-use scheme (not one of [`FORBIDDEN_SCHEMES`]); no fragment, no user
/// info, at most [`MAX_URI_LEN`] bytes.
pub fn check_redirect_uri(uri: &str) -> Result<(), OAuthError> {
    let parsed = parse(uri).ok_or(BAD_REDIRECT)?;
    let ok = parsed.fragment().is_none()
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && match parsed.scheme() {
            "https" => parsed.host_str().is_some(),
            "http" => is_loopback(&parsed),
            other => !FORBIDDEN_SCHEMES.contains(&other),
        };
    ok.then_some(()).ok_or(BAD_REDIRECT)
}

/// Whether `given` is the registered redirect URI `registered`: the same string, except that
/// for a loopback `http` one the port may differ (a native client listens on any free port).
pub fn redirect_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Some(r), Some(g)) = (parse(registered), parse(given)) else {
        return false;
    };
    let loopback = r.scheme() == "http" && is_loopback(&r);
    loopback
        && g.scheme() == "http"
        && g.host() == r.host()
        && g.path() == r.path()
        && g.query() == r.query()
        && g.fragment().is_none()
        && g.username().is_empty()
        && g.password().is_none()
}

fn parse(uri: &str) -> Option<url::Url> {
    (uri.len() <= MAX_URI_LEN)
        .then(|| url::Url::parse(uri).ok())
        .flatten()
}

/// Whether `url`'s host is a loopback one ([`crate::grant::is_loopback_host`]).
fn is_loopback(url: &url::Url) -> bool {
    url.host_str().is_some_and(crate::grant::is_loopback_host)
}

/// An authorization request's PKCE: `code_challenge_method` must be `S256` (absent means
/// `plain`, refused too) and the challenge a SHA-256 in base64url (43 characters).
pub fn check_code_challenge(
    method: Option<&str>,
    challenge: Option<&str>,
) -> Result<(), OAuthError> {
    if method != Some("S256") {
        return Err(refused(
            "invalid_request",
            "PKCE is required with code_challenge_method S256",
        ));
    }
    let ok = challenge
        .is_some_and(|c| c.len() == 43 && URL_SAFE_NO_PAD.decode(c).is_ok_and(|d| d.len() == 32));
    ok.then_some(()).ok_or(refused(
        "invalid_request",
        "code_challenge must be the base64url SHA-256 of the code verifier",
    ))
}

/// Whether `verifier` (43–128 unreserved characters, RFC 7636 §4.1) hashes to `challenge`.
pub fn pkce_verifies(verifier: &str, challenge: &str) -> bool {
    let formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    if !formed {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    // Both are public once the code is redeemed; equal length, compared whole.
    computed.len() == challenge.len()
        && computed
            .bytes()
            .zip(challenge.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// How long an access token lives at most (the connection's own expiry may end it sooner).
pub const ACCESS_TOKEN_SECS: i64 = 3_600;
/// How long an authorization code may be redeemed.
pub const CODE_SECS: i64 = 60;
/// How long an authorization request waits for the owner's decision.
pub const REQUEST_SECS: i64 = 600;
/// How long a refresh token lives at most (the connection's own expiry may end it sooner).
pub const REFRESH_SECS: i64 = 30 * 24 * 3_600;
/// How long a dynamically registered client that the owner never approved is kept.
pub const UNAPPROVED_CLIENT_SECS: i64 = 24 * 3_600;

/// `uri` (a verified redirect URI) with `params` added to its query: where a code, a state or
/// an error is sent back (RFC 6749 §4.1.2).
pub fn redirect_to(uri: &str, params: &[(&str, &str)]) -> Option<String> {
    let mut url = parse(uri)?;
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in params {
            query.append_pair(k, v);
        }
    }
    Some(url.into())
}

/// The host of `uri`, if it parses (the consent page names a logo's host, never loads it).
pub fn uri_host(uri: &str) -> Option<String> {
    parse(uri)?.host_str().map(str::to_owned)
}

/// Whether a token audience names a resource (RFC 8707): an absolute `http(s)` URL of a
/// `/mcp` endpoint, without query, fragment or user info. Which resource a request reached is
/// for the gateway to compare; this only tells such an audience from a malformed one.
pub fn is_resource_audience(aud: &str) -> bool {
    parse(aud).is_some_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.path() == "/mcp"
            && u.query().is_none()
            && u.fragment().is_none()
            && u.username().is_empty()
            && u.password().is_none()
    })
}

/// A public client's registration (RFC 7591 §2), the fields wazap reads; others are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientMetadata {
    /// What the client calls itself (shown on the consent page as its claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// Where codes may be sent: at least one, each [`check_redirect_uri`].
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// `authorization_code` and optionally `refresh_token` (default: both).
    #[serde(default)]
    pub grant_types: Vec<String>,
    /// `code` (the default).
    #[serde(default)]
    pub response_types: Vec<String>,
    /// `none` only: a public client, proven by PKCE, not a secret (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// Its home page, https.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// Its logo, https (the consent page names only its host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
}

impl ClientMetadata {
    /// The registration as kept: every rule checked, defaults filled in (`grant_types`
    /// `authorization_code` + `refresh_token`, `response_types` `code`, auth method `none`).
    pub fn checked(mut self) -> Result<Self, OAuthError> {
        let bad = |description| refused("invalid_client_metadata", description);
        if self.redirect_uris.is_empty() || self.redirect_uris.len() > MAX_REDIRECT_URIS {
            return Err(refused(
                "invalid_redirect_uri",
                "give one to ten redirect_uris",
            ));
        }
        for uri in &self.redirect_uris {
            check_redirect_uri(uri)?;
        }
        if let Some(name) = &self.client_name {
            let name = name.trim();
            if name.is_empty()
                || name.chars().count() > MAX_CLIENT_NAME_LEN
                || name.chars().any(char::is_control)
            {
                return Err(bad("client_name must be 1–100 printable characters"));
            }
            self.client_name = Some(name.to_owned());
        }
        for uri in [&self.client_uri, &self.logo_uri].into_iter().flatten() {
            if !parse(uri).is_some_and(|u| u.scheme() == "https" && u.host_str().is_some()) {
                return Err(bad("client_uri and logo_uri must be https URIs"));
            }
        }
        // Only public clients are registered: a client that asked to authenticate with a
        // secret is registered as `none` and the answer says so (RFC 7591 §3.2.1 lets a server
        // replace a requested value). Claude asks for `client_secret_post` and reads the answer.
        self.token_endpoint_auth_method = Some("none".into());
        if self.grant_types.is_empty() {
            self.grant_types = vec!["authorization_code".into(), "refresh_token".into()];
        }
        let grants_ok = self.grant_types.iter().any(|g| g == "authorization_code")
            && (self.grant_types.iter()).all(|g| g == "authorization_code" || g == "refresh_token");
        if !grants_ok {
            return Err(bad(
                "grant_types must be authorization_code, optionally with refresh_token",
            ));
        }
        if self.response_types.is_empty() {
            self.response_types = vec!["code".into()];
        }
        if self.response_types.iter().any(|r| r != "code") {
            return Err(bad("response_types must be code"));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_loopback_http_or_a_native_apps_scheme() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "com.example.app:/oauth2redirect",
            "vscode://vscode.github-authentication/did-authenticate",
            "https://example.com:8443/cb?x=1",
            "http://localhost:33418/callback",
            "http://127.0.0.1/cb",
            "http://[::1]:9000/",
            "http://LOCALHOST:1/cb",
        ] {
            assert_eq!(check_redirect_uri(ok), Ok(()), "{ok}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URI_LEN));
        for bad in [
            "http://example.com/cb",
            "http://localhost.evil.com/cb",
            "http://10.0.0.1/cb",
            "https://example.com/cb#frag",
            "https://user:pw@example.com/cb",
            "https://user@example.com/cb",
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "cursor://anysphere.cursor-mcp/cb#frag",
            "/relative/cb",
            "",
            long.as_str(),
        ] {
            assert_eq!(check_redirect_uri(bad), Err(BAD_REDIRECT), "{bad}");
        }
    }

    #[test]
    fn a_redirect_matches_exactly_but_a_loopback_port_may_differ() {
        let native = "http://127.0.0.1:1234/callback";
        assert!(redirect_matches(native, native));
        assert!(redirect_matches(native, "http://127.0.0.1:55555/callback"));
        assert!(redirect_matches(native, "http://127.0.0.1/callback"));
        for other in [
            "http://127.0.0.1:1234/callback/",
            "http://127.0.0.1:1234/other",
            "http://localhost:1234/callback",
            "https://127.0.0.1:1234/callback",
            "http://127.0.0.1:1234/callback?x=1",
            "http://127.0.0.1:1234/callback#x",
        ] {
            assert!(!redirect_matches(native, other), "{other}");
        }
        let web = "https://claude.ai/api/mcp/auth_callback";
        assert!(redirect_matches(web, web));
        for other in [
            "https://claude.ai:444/api/mcp/auth_callback",
            "https://claude.ai/api/mcp/auth_callback/",
            "https://claude.ai/api/mcp/auth_callback?a=b",
            "https://CLAUDE.ai/api/mcp/auth_callback",
            "https://evil.example/api/mcp/auth_callback",
        ] {
            assert!(!redirect_matches(web, other), "{other}");
        }
    }

    #[test]
    fn pkce_is_s256_only_and_checks_the_rfc_7636_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(check_code_challenge(Some("S256"), Some(challenge)), Ok(()));
        assert!(pkce_verifies(verifier, challenge));
        for (method, c) in [
            (None, Some(challenge)),
            (Some("plain"), Some(challenge)),
            (Some("s256"), Some(challenge)),
            (Some("S256"), None),
            (Some("S256"), Some("short")),
            (Some("S256"), Some(&challenge[..42])),
            (
                Some("S256"),
                Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"),
            ),
        ] {
            assert_eq!(
                check_code_challenge(method, c).map_err(|e| e.code),
                Err("invalid_request"),
                "{method:?} {c:?}"
            );
        }
        // Another verifier, a verifier that is the challenge itself (`plain`), or one outside
        // RFC 7636's alphabet or lengths: no.
        let other = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj";
        assert!(!pkce_verifies(other, challenge));
        assert!(!pkce_verifies(challenge, challenge));
        assert!(!pkce_verifies("short", challenge));
        assert!(!pkce_verifies(&format!("{verifier}+"), challenge));
        assert!(!pkce_verifies(&"a".repeat(129), challenge));
    }

    fn metadata(json: serde_json::Value) -> Result<ClientMetadata, OAuthError> {
        serde_json::from_value::<ClientMetadata>(json)
            .expect("decodes")
            .checked()
    }

    #[test]
    fn a_public_client_registers_with_defaults_filled_in() {
        let m = metadata(serde_json::json!({
            "client_name": "  Claude  ",
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
            "logo_uri": "https://claude.ai/logo.png",
            "software_id": "ignored",
        }))
        .unwrap();
        assert_eq!(m.client_name.as_deref(), Some("Claude"));
        assert_eq!(m.grant_types, ["authorization_code", "refresh_token"]);
        assert_eq!(m.response_types, ["code"]);
        assert_eq!(m.token_endpoint_auth_method.as_deref(), Some("none"));
        // A client asking to use a secret is registered as public, and told so.
        for asked in ["client_secret_post", "client_secret_basic"] {
            let m = metadata(serde_json::json!({
                "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
                "token_endpoint_auth_method": asked,
            }))
            .unwrap();
            assert_eq!(
                m.token_endpoint_auth_method.as_deref(),
                Some("none"),
                "{asked}"
            );
        }
    }

    #[test]
    fn registrations_outside_the_rules_are_refused_with_their_code() {
        let ok_uri = serde_json::json!(["http://localhost:3000/cb"]);
        for (json, code) in [
            (serde_json::json!({}), "invalid_redirect_uri"),
            (
                serde_json::json!({"redirect_uris": []}),
                "invalid_redirect_uri",
            ),
            (
                serde_json::json!({"redirect_uris": ["http://example.com/cb"]}),
                "invalid_redirect_uri",
            ),
            (
                serde_json::json!({"redirect_uris": vec!["https://a.example/cb"; 11]}),
                "invalid_redirect_uri",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "grant_types": ["client_credentials"]}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "grant_types": ["refresh_token"]}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "response_types": ["token"]}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "client_name": " "}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "client_name": "a\u{7}b"}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "client_name": "x".repeat(101)}),
                "invalid_client_metadata",
            ),
            (
                serde_json::json!({"redirect_uris": ok_uri, "logo_uri": "http://a.example/l.png"}),
                "invalid_client_metadata",
            ),
        ] {
            assert_eq!(
                metadata(json.clone()).map_err(|e| e.code),
                Err(code),
                "{json}"
            );
        }
    }

    #[test]
    fn a_resource_audience_is_an_mcp_url() {
        for yes in [
            "https://wazap.example.com/mcp",
            "http://127.0.0.1:8080/mcp",
            "https://wazap.example.com:8443/mcp",
        ] {
            assert!(is_resource_audience(yes), "{yes}");
        }
        for no in [
            "wazap",
            "https://wazap.example.com/",
            "https://wazap.example.com/mcp/",
            "https://wazap.example.com/mcp?x=1",
            "https://wazap.example.com/mcp#f",
            "https://u@wazap.example.com/mcp",
            "ftp://wazap.example.com/mcp",
            "",
        ] {
            assert!(!is_resource_audience(no), "{no}");
        }
    }

    #[test]
    fn a_redirect_keeps_the_uris_query_and_adds_the_answer() {
        assert_eq!(
            redirect_to(
                "https://c.example/cb?x=1",
                &[("code", "a b"), ("state", "s&t")]
            )
            .as_deref(),
            Some("https://c.example/cb?x=1&code=a+b&state=s%26t")
        );
        assert_eq!(redirect_to("not a uri", &[("code", "c")]), None);
    }
}
