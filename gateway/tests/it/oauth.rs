//! The OAuth authorization server on the owner listener (#28): its public endpoints (metadata,
//! registration, token, revocation) behind the Host rule alone, and the authorization endpoint
//! and consent page behind the owner guard, against a fake worker (`oauth_support`).

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::oauth_support::*;
use crate::support::*;

struct Setup {
    worker: FakeWorker,
    gw: Gateway,
    /// `http://127.0.0.1:<owner port>`: the owner listener's origin.
    origin: String,
    http: reqwest::Client,
}

async fn setup() -> Setup {
    let prefix = prefix();
    let worker = FakeWorker::start(&prefix, vec![Signer::generate().jwk]).await;
    let gw = Gateway::start_with_owner(&prefix, &[]).await;
    gw.wait_ready().await;
    let origin = format!("http://{}", gw.owner.expect("owner listener"));
    Setup {
        worker,
        gw,
        origin,
        http: client(),
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Status, headers and body text of an answer (error bodies recorded for the leak scan).
async fn answer(resp: reqwest::Response) -> (u16, HeaderMap, String) {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    record_error_body(status, &text);
    (status, headers, text)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

impl Setup {
    fn calls(&self, op: &str) -> Vec<Value> {
        let calls = self.worker.state.oauth.lock().unwrap();
        calls
            .iter()
            .filter(|(o, _)| o == op)
            .map(|(_, b)| b.clone())
            .collect()
    }

    async fn form(&self, path: &str, body: &str) -> (u16, HeaderMap, String) {
        let resp = self
            .http
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        answer(resp).await
    }

    async fn get(&self, path: &str, cookie: Option<&str>) -> (u16, HeaderMap, String) {
        let mut req = self.http.get(format!("{}{path}", self.origin));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        answer(req.send().await.unwrap()).await
    }
}

fn no_store(headers: &HeaderMap) -> bool {
    headers.get("cache-control") == Some(&HeaderValue::from_static("no-store"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metadata_names_the_owner_origin_on_its_host_only() {
    let s = setup().await;
    let (status, headers, text) = s.get("/.well-known/oauth-authorization-server", None).await;
    assert_eq!(status, 200, "{text}");
    assert!(no_store(&headers));
    let doc = json_of(&text);
    assert_eq!(doc["issuer"], s.origin);
    assert_eq!(doc["token_endpoint"], format!("{}/oauth/token", s.origin));
    assert_eq!(
        doc["authorization_endpoint"],
        format!("{}/oauth/authorize", s.origin)
    );
    assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(doc["client_id_metadata_document_supported"], true);

    // Another Host is refused (DNS rebinding), in OAuth's terms.
    let resp = s
        .http
        .get(format!(
            "{}/.well-known/oauth-authorization-server",
            s.origin
        ))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    let (status, headers, text) = answer(resp).await;
    assert_eq!(status, 403);
    assert!(no_store(&headers));
    assert_eq!(json_of(&text)["error"], "invalid_request");

    // The MCP listener is a resource, not the authorization server.
    let resp = s
        .http
        .get(format!(
            "http://{}/.well-known/oauth-authorization-server",
            s.gw.addr
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn registration_checks_the_metadata_before_the_worker() {
    let s = setup().await;
    let register = |content_type: &'static str, body: String| {
        let req = s
            .http
            .post(format!("{}/oauth/register", s.origin))
            .header("content-type", content_type)
            // No owner guard here: a client's Origin (or none) and no CSRF token are fine.
            .header("origin", "https://claude.ai")
            .body(body);
        async move { answer(req.send().await.unwrap()).await }
    };
    let metadata = json!({
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
    });
    let (status, headers, text) = register("application/json", metadata.to_string()).await;
    assert_eq!(status, 201, "{text}");
    assert!(no_store(&headers));
    let client = json_of(&text);
    assert_eq!(client["client_id"], CLIENT_ID);
    assert_eq!(client["token_endpoint_auth_method"], "none");
    // The worker got the metadata with the defaults filled in.
    let sent = s.calls("oauth_register");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0]["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );

    let secret = "https://x.example/<script>never-echoed";
    for (content_type, body, code, status_wanted) in [
        (
            "text/plain",
            metadata.to_string(),
            "invalid_client_metadata",
            400,
        ),
        (
            "application/json",
            format!(r#"{{"redirect_uris": "{secret}""#),
            "invalid_client_metadata",
            400,
        ),
        (
            "application/json",
            json!({"redirect_uris": ["http://example.com/cb"]}).to_string(),
            "invalid_redirect_uri",
            400,
        ),
        (
            "application/json",
            json!({"redirect_uris": ["https://a.example/cb"], "pad": "x".repeat(17 * 1024)})
                .to_string(),
            "invalid_client_metadata",
            413,
        ),
    ] {
        let (status, _, text) = register(content_type, body).await;
        assert_eq!(status, status_wanted, "{content_type}: {text}");
        assert_eq!(json_of(&text)["error"], code, "{text}");
        assert!(!text.contains("never-echoed"), "{text}");
    }
    assert_eq!(
        s.calls("oauth_register").len(),
        1,
        "refused before the worker"
    );

    // The worker's own refusal.
    let refused = json!({"client_name": "refuse", "redirect_uris": ["http://127.0.0.1/cb"]});
    let (status, _, text) = register("application/json", refused.to_string()).await;
    assert_eq!(status, 400);
    assert_eq!(json_of(&text)["error"], "invalid_client_metadata");
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_endpoint_takes_a_form_once_per_parameter() {
    let s = setup().await;
    wazap_shared::leak::record_token("oauth access token", ACCESS_TOKEN);
    wazap_shared::leak::record_token("oauth refresh token", REFRESH_TOKEN);
    wazap_shared::leak::record_secret("oauth code", GOOD_CODE);
    let good = format!(
        "grant_type=authorization_code&code={GOOD_CODE}&client_id=cl_1\
         &redirect_uri=https%3A%2F%2Fclaude.ai%2Fcb&code_verifier=v&resource=http%3A%2F%2F127.0.0.1%2Fmcp"
    );
    let (status, headers, text) = s.form("/oauth/token", &good).await;
    assert_eq!(status, 200, "{text}");
    assert!(no_store(&headers));
    assert_eq!(headers["pragma"], "no-cache");
    let tokens = json_of(&text);
    assert_eq!(tokens["access_token"], ACCESS_TOKEN);
    assert_eq!(tokens["token_type"], "Bearer");
    let sent = s.calls("oauth_token");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["redirect_uri"], "https://claude.ai/cb");
    assert_eq!(sent[0]["resource"], "http://127.0.0.1/mcp");
    assert_eq!(sent[0]["refresh_token"], Value::Null);

    let (status, _, text) = s
        .form("/oauth/token", "grant_type=authorization_code&code=other")
        .await;
    assert_eq!(
        (status, json_of(&text)["error"].clone()),
        (400, json!("invalid_grant"))
    );
    let (status, _, text) = s.form("/oauth/token", "client_id=bad").await;
    assert_eq!(
        (status, json_of(&text)["error"].clone()),
        (401, json!("invalid_client"))
    );

    // Refused here, before the worker: a repeated parameter, a broken escape, not a form.
    let before = s.calls("oauth_token").len();
    for body in [
        format!("code={GOOD_CODE}&code=other"),
        "code=%zz".to_owned(),
    ] {
        let (status, _, text) = s.form("/oauth/token", &body).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(json_of(&text)["error"], "invalid_request");
    }
    let resp = s
        .http
        .post(format!("{}/oauth/token", s.origin))
        .header("content-type", "application/json")
        .body(json!({"code": GOOD_CODE}).to_string())
        .send()
        .await
        .unwrap();
    let (status, _, text) = answer(resp).await;
    assert_eq!(
        (status, json_of(&text)["error"].clone()),
        (400, json!("invalid_request"))
    );
    assert_eq!(s.calls("oauth_token").len(), before);

    // Revocation: 200, empty.
    let (status, headers, text) = s
        .form(
            "/oauth/revoke",
            &format!("token={REFRESH_TOKEN}&token_type_hint=refresh_token"),
        )
        .await;
    assert_eq!((status, text.as_str()), (200, ""));
    assert!(no_store(&headers));
    assert_eq!(
        s.calls("oauth_revoke")[0]["token_type_hint"],
        "refresh_token"
    );
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_worker_the_endpoints_are_temporarily_unavailable() {
    let prefix = prefix();
    let gw = Gateway::start_with_owner(&prefix, &[]).await;
    // Let NATS connect so "no responders" (not a connect race) is what is measured.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let origin = format!("http://{}", gw.owner.unwrap());
    let http = client();
    let resp = http
        .post(format!("{origin}/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=refresh_token&refresh_token=x")
        .send()
        .await
        .unwrap();
    let (status, headers, text) = answer(resp).await;
    assert_eq!(status, 503, "{text}");
    assert!(no_store(&headers));
    assert_eq!(json_of(&text)["error"], "temporarily_unavailable");
    let resp = http
        .get(format!("{origin}/oauth/authorize?client_id=consent"))
        .send()
        .await
        .unwrap();
    let (status, _, text) = answer(resp).await;
    assert_eq!(status, 503);
    assert!(
        text.contains("Authorization temporarily unavailable"),
        "{text}"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn authorization_goes_to_consent_with_every_resource_of_the_deployment() {
    let s = setup().await;
    let query = "response_type=code&client_id=consent&state=s1&code_challenge_method=S256\
                 &code_challenge=abc&redirect_uri=https%3A%2F%2Fclaude.ai%2Fcb\
                 &resource=http%3A%2F%2F127.0.0.1%2Fmcp";
    let (status, headers, _) = s.get(&format!("/oauth/authorize?{query}"), None).await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "/oauth/consent?request=r_1");
    let sent = s.calls("oauth_authorize");
    assert_eq!(sent[0]["client_id"], "consent");
    assert_eq!(sent[0]["redirect_uri"], "https://claude.ai/cb");
    let (mcp, owner) = (s.gw.addr.port(), s.gw.owner.unwrap().port());
    assert_eq!(
        sent[0]["resources"],
        json!([
            "http://localhost/mcp",
            format!("http://localhost:{mcp}/mcp"),
            "http://127.0.0.1/mcp",
            format!("http://127.0.0.1:{mcp}/mcp"),
            format!("http://127.0.0.1:{owner}/mcp"),
        ])
    );

    // Back to the client with an error, or an error page when nothing could be verified.
    let (status, headers, _) = s.get("/oauth/authorize?client_id=redirect", None).await;
    assert_eq!(
        (status, headers["location"].to_str().unwrap()),
        (303, with_iss(CLIENT_ERROR_REDIRECT, owner).as_str())
    );
    let (status, _, text) = s.get("/oauth/authorize?client_id=who", None).await;
    assert_eq!(status, 400);
    assert!(text.contains("Authorization request refused") && text.contains(UNKNOWN_CLIENT));
    let (status, _, _) = s.get("/oauth/authorize?client_id=bad-id", None).await;
    assert_eq!(status, 503);

    // A repeated parameter never reaches the worker.
    let before = s.calls("oauth_authorize").len();
    let (status, _, text) = s
        .get("/oauth/authorize?client_id=consent&client_id=other", None)
        .await;
    assert_eq!(status, 400);
    assert!(
        text.contains("a parameter was given more than once"),
        "{text}"
    );
    assert_eq!(s.calls("oauth_authorize").len(), before);
    s.gw.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_consent_page_needs_the_owner_and_the_decision_a_csrf_token() {
    let s = setup().await;
    let cookie = format!("wazap_owner={SESSION}");
    // No session: to login, and back here afterwards.
    let (status, headers, _) = s.get("/oauth/consent?request=r_1", None).await;
    assert_eq!(status, 303);
    assert_eq!(
        headers["location"],
        "/login?next=%2Foauth%2Fconsent%3Frequest%3Dr_1"
    );
    let (status, _, text) = s.get("/oauth/consent?request=r_1", Some(&cookie)).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Connect an AI client?"));
    assert!(text.contains("Claude &lt;b&gt;") && !text.contains("Claude <b>"));
    assert!(text.contains(r#""kind":"consent""#));
    assert!(!text.contains("<img"), "the logo is never loaded");
    for bad in ["r%2F1", "", &"a".repeat(65)] {
        let (status, _, _) = s
            .get(&format!("/oauth/consent?request={bad}"), Some(&cookie))
            .await;
        assert_eq!(status, 400, "{bad}");
    }
    let (status, _, text) = s.get("/oauth/consent?request=r_gone", Some(&cookie)).await;
    assert_eq!(status, 404);
    assert!(text.contains("This request has expired or was already decided"));

    let decide = |csrf: Option<&'static str>| {
        let mut req = s
            .http
            .post(format!("{}/api/oauth/decide", s.origin))
            .header("content-type", "application/json")
            .header("origin", s.origin.as_str())
            .header("cookie", cookie.as_str())
            .body(
                json!({
                    "request": "r_1", "approve": true, "name": "Claude",
                    "expires_at": "2030-01-01T00:00:00Z",
                    "read_scope": {"chats": {"mode": "all"}},
                    "send_mode": "selected", "send_chats": ["c_1"],
                })
                .to_string(),
            );
        if let Some(c) = csrf {
            req = req.header("x-csrf-token", c);
        }
        async move { answer(req.send().await.unwrap()).await }
    };
    let (status, _, text) = decide(Some(CSRF)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        json_of(&text),
        json!({"redirect": with_iss(CONSENT_REDIRECT, s.gw.owner.unwrap().port()), "connection_id": "conn_new"})
    );
    let sent = s.calls("owner_oauth_decide");
    assert_eq!(sent[0]["body"]["send_mode"], "selected");
    assert_eq!(
        sent[0]["body"]["read_scope"],
        json!({"chats": {"mode": "all"}})
    );
    let (status, _, _) = decide(None).await;
    assert_eq!(status, 403);
    s.gw.stop().await;
}

/// `redirect` as the gateway passes it on: with this server's issuer (RFC 9207).
fn with_iss(redirect: &str, owner_port: u16) -> String {
    format!("{redirect}&iss=http%3A%2F%2F127.0.0.1%3A{owner_port}")
}
