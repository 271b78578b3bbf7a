//! wazap as an OAuth 2.1 authorization server (#28), driven over HTTP as a remote MCP client
//! and the owner's browser would: discovery from `/mcp`'s 401, Dynamic Client Registration,
//! the authorization request, the consent page and the owner's decision, the code exchange
//! with PKCE, reads with the access token, refresh-token rotation, and every way a flow must
//! fail (no PKCE, `plain`, a wrong verifier, a replayed code, another client's code, an
//! unregistered redirect URI, another server's resource, an expired or reused refresh token,
//! a rotated or revoked connection).

mod cimd;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use wazap_tests::leak;
use wazap_tests::{Gateway, Stack};
use wazap_worker::config::ConnectorKind;

use super::{Owner, http, read_outcome};

/// The redirect URI the test client registers (a native client's loopback listener).
const REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// `application/x-www-form-urlencoded` of `pairs`.
fn form(pairs: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("url");
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_owned()
}

/// The query parameters of `url`.
fn query(url: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(url)
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

fn param(url: &str, name: &str) -> Option<String> {
    query(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// A PKCE verifier and its S256 challenge.
fn pkce() -> (String, String) {
    let verifier = format!("v{}", wazap_tests::random_hex(32));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// An HTTP answer: status, `Location`, body as JSON (`Null` when not) and text.
struct Reply {
    status: u16,
    location: Option<String>,
    json: Value,
    text: String,
}

async fn reply(resp: reqwest::Response) -> anyhow::Result<Reply> {
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await?;
    leak::answer("oauth", status, &text);
    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    for field in ["access_token", "refresh_token"] {
        if let Some(t) = json[field].as_str() {
            leak::record_token(leak::kind::BEARER, t);
        }
    }
    Ok(Reply {
        status,
        location,
        json,
        text,
    })
}

async fn get(url: &str) -> anyhow::Result<Reply> {
    reply(http().get(url).send().await?).await
}

async fn post_form(url: &str, pairs: &[(&str, &str)]) -> anyhow::Result<Reply> {
    let resp = http()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .await?;
    reply(resp).await
}

/// The authorization server's endpoints, found as a client finds them: from `/mcp`'s 401.
struct Endpoints {
    authorize: String,
    token: String,
    register: String,
    revoke: String,
}

async fn discover(gw: &Gateway) -> anyhow::Result<Endpoints> {
    let resp = http().post(gw.mcp_url()).body("{}").send().await?;
    assert_eq!(resp.status(), 401);
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let metadata_url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_default()
        .to_owned();
    let prm = get(&metadata_url).await?;
    assert_eq!(prm.json["resource"], gw.mcp_url().as_str());
    let issuer = prm.json["authorization_servers"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let asm = get(&format!("{issuer}/.well-known/oauth-authorization-server")).await?;
    assert_eq!(asm.status, 200, "{}", asm.text);
    assert_eq!(asm.json["issuer"], issuer.as_str());
    assert_eq!(
        asm.json["code_challenge_methods_supported"],
        json!(["S256"])
    );
    let at = |k: &str| asm.json[k].as_str().unwrap_or_default().to_owned();
    Ok(Endpoints {
        authorize: at("authorization_endpoint"),
        token: at("token_endpoint"),
        register: at("registration_endpoint"),
        revoke: at("revocation_endpoint"),
    })
}

/// Register a public client with [`REDIRECT`]; its id.
async fn register(ep: &Endpoints, name: &str) -> anyhow::Result<String> {
    let resp = http()
        .post(&ep.register)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(
            &json!({"client_name": name, "redirect_uris": [REDIRECT]}),
        )?)
        .send()
        .await?;
    let r = reply(resp).await?;
    assert_eq!(r.status, 201, "register: {}", r.text);
    assert_eq!(r.json["token_endpoint_auth_method"], "none");
    Ok(r.json["client_id"].as_str().unwrap_or_default().to_owned())
}

/// An authorization request's parameters, as [`authorize_url`] lets a test change them.
type Params = Vec<(&'static str, String)>;

/// An authorization request's URL; `tweak` may change or drop its parameters.
fn authorize_url(
    ep: &Endpoints,
    client: &str,
    redirect: &str,
    challenge: &str,
    resource: &str,
    tweak: impl FnOnce(&mut Params),
) -> String {
    let mut params: Params = vec![
        ("response_type", "code".into()),
        ("client_id", client.into()),
        ("redirect_uri", redirect.into()),
        ("code_challenge", challenge.into()),
        ("code_challenge_method", "S256".into()),
        ("state", "st-42".into()),
        ("resource", resource.into()),
    ];
    tweak(&mut params);
    let mut url = reqwest::Url::parse(&ep.authorize).expect("authorize endpoint");
    url.query_pairs_mut().extend_pairs(params);
    url.into()
}

/// Ask, have the owner decide with `decision` (merged into the request's id), and follow the
/// decision's redirect: the URL the client's redirect URI receives.
async fn consent(
    gw: &Gateway,
    owner: &Owner,
    authorize: &str,
    decision: Value,
) -> anyhow::Result<String> {
    let r = get(authorize).await?;
    assert_eq!(r.status, 303, "authorize: {}", r.text);
    let consent_path = r.location.unwrap_or_default();
    assert!(
        consent_path.starts_with("/oauth/consent?request="),
        "{consent_path}"
    );
    let request = consent_path
        .rsplit('=')
        .next()
        .unwrap_or_default()
        .to_owned();
    let page = owner.get(gw, &consent_path).await?;
    assert_eq!(page.status, 200, "consent page: {}", page.text);
    let mut body = json!({"request": request});
    if let (Some(b), Some(d)) = (body.as_object_mut(), decision.as_object()) {
        b.extend(d.clone());
    }
    let d = owner.post(gw, "/api/oauth/decide", body).await?;
    assert_eq!(d.status, 200, "decide: {}", d.text);
    Ok(d.json["redirect"].as_str().unwrap_or_default().to_owned())
}

fn approve_all() -> Value {
    let expires = (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    json!({"approve": true, "expires_at": expires, "read_scope": {"chats": {"mode": "all"}}})
}

/// Exchange `code` for tokens.
async fn exchange(
    ep: &Endpoints,
    client: &str,
    code: &str,
    verifier: &str,
    redirect: &str,
) -> anyhow::Result<Reply> {
    post_form(
        &ep.token,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client),
            ("code_verifier", verifier),
            ("redirect_uri", redirect),
        ],
    )
    .await
}

async fn refresh(ep: &Endpoints, client: &str, token: &str) -> anyhow::Result<Reply> {
    post_form(
        &ep.token,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", client),
        ],
    )
    .await
}

fn is_invalid_grant(r: &Reply) -> bool {
    r.status == 400 && r.json["error"] == "invalid_grant"
}

/// One client through a whole approved flow: its id, the first token answer.
async fn approved(
    gw: &Gateway,
    owner: &Owner,
    ep: &Endpoints,
    name: &str,
) -> anyhow::Result<(String, Reply)> {
    let client = register(ep, name).await?;
    let (verifier, challenge) = pkce();
    let url = authorize_url(ep, &client, REDIRECT, &challenge, &gw.mcp_url(), |_| {});
    let back = consent(gw, owner, &url, approve_all()).await?;
    let code = param(&back, "code").unwrap_or_default();
    leak::record_secret(leak::kind::BEARER, &code);
    let tokens = exchange(ep, &client, &code, &verifier, REDIRECT).await?;
    assert_eq!(tokens.status, 200, "exchange: {}", tokens.text);
    Ok((client, tokens))
}

#[tokio::test]
async fn a_client_finds_registers_is_approved_reads_refreshes_and_is_revoked() -> anyhow::Result<()>
{
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let ep = discover(&gw).await?;
    let client = register(&ep, "Test Agent").await?;
    let (verifier, challenge) = pkce();
    // A native client listens on any free port: the registered one's port may differ.
    let redirect = "http://127.0.0.1:40001/callback";
    let url = authorize_url(&ep, &client, redirect, &challenge, &gw.mcp_url(), |_| {});

    // Without a session, the consent page sends the owner to log in and back.
    let r = get(&url).await?;
    assert_eq!(r.status, 303, "{}", r.text);
    let consent_path = r.location.unwrap_or_default();
    let page = get(&gw.owner_url(&consent_path)).await?;
    assert_eq!(page.status, 303);
    let login = page.location.unwrap_or_default();
    assert!(login.starts_with("/login?next="), "{login}");
    assert_eq!(
        param(&format!("http://x{login}"), "next").as_deref(),
        Some(consent_path.as_str())
    );

    let owner = Owner::login(&stack, &gw).await?;
    let shown = owner.get(&gw, &consent_path).await?;
    assert_eq!(shown.status, 200);
    for claim in [
        "Test Agent",
        redirect,
        client.as_str(),
        gw.mcp_url().as_str(),
    ] {
        assert!(shown.text.contains(claim), "the consent page names {claim}");
    }
    // The consent page's own request: approve with the whole archive readable.
    let request = consent_path.rsplit('=').next().unwrap_or_default();
    let mut body = approve_all();
    body["request"] = json!(request);
    let d = owner.post(&gw, "/api/oauth/decide", body.clone()).await?;
    assert_eq!(d.status, 200, "{}", d.text);
    let back = d.json["redirect"].as_str().unwrap_or_default().to_owned();
    assert!(back.starts_with(redirect), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st-42"));
    // RFC 9207: the answer names its issuer, so a client of several servers cannot mix codes up.
    assert_eq!(param(&back, "iss"), Some(gw.owner_url("")));
    let code = param(&back, "code").unwrap_or_default();
    leak::record_secret(leak::kind::BEARER, &code);
    // A decided request cannot be decided again.
    let again = owner.post(&gw, "/api/oauth/decide", body).await?;
    assert_eq!(again.status, 404, "{}", again.text);

    let tokens = exchange(&ep, &client, &code, &verifier, redirect).await?;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    assert_eq!(tokens.json["token_type"], "Bearer");
    let expires_in = tokens.json["expires_in"].as_i64().unwrap_or_default();
    assert!((1..=3600).contains(&expires_in), "{expires_in}");
    let access = tokens.json["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let refresh1 = tokens.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // The access token reads through /mcp, as the connection the owner approved.
    assert_eq!(read_outcome(&gw.mcp_url(), &access).await?, "ok");
    let mcp = gw.mcp(&access).await?;
    assert_eq!(mcp.tools().await?.len(), 12);
    mcp.close().await;
    // Its audience is this resource: the owner listener's /mcp is another one.
    assert_eq!(
        read_outcome(&gw.owner_url("/mcp"), &access).await?,
        "http:401"
    );
    let list = owner.get(&gw, "/api/connections").await?;
    let conn = list.json["connections"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["oauth_client"] == client.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(conn["kind"], "remote");
    assert_eq!(conn["name"], "Test Agent");
    assert_eq!(conn["send_permission"]["mode"], "none");

    // Refresh rotates: the new pair works; the old refresh token, used again, revokes the
    // family, so the newer one dies with it.
    let r2 = refresh(&ep, &client, &refresh1).await?;
    assert_eq!(r2.status, 200, "{}", r2.text);
    let access2 = r2.json["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let refresh2 = r2.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_ne!(refresh2, refresh1);
    assert_eq!(read_outcome(&gw.mcp_url(), &access2).await?, "ok");
    assert!(is_invalid_grant(&refresh(&ep, &client, &refresh1).await?));
    assert!(is_invalid_grant(&refresh(&ep, &client, &refresh2).await?));

    // A second approval of the same client is its own connection; revoking it on the
    // dashboard ends its access token and its refresh token at once.
    let (_, t) = approved(&gw, &owner, &ep, "Test Agent").await?;
    let access3 = t.json["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let refresh3 = t.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(read_outcome(&gw.mcp_url(), &access3).await?, "ok");
    let id = connection_of(&stack, &refresh3).await?;
    let revoked = owner
        .post(&gw, "/api/connections/revoke", json!({"id": id}))
        .await?;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(
        read_outcome(&gw.mcp_url(), &access3).await?,
        "tool:unauthenticated"
    );
    assert!(is_invalid_grant(&refresh(&ep, &client, &refresh3).await?));
    gw.stop().await
}

/// The connection a refresh token belongs to.
async fn connection_of(stack: &Stack, refresh: &str) -> anyhow::Result<String> {
    let hash = Sha256::digest(refresh.as_bytes()).to_vec();
    let row = stack
        .pool
        .get()
        .await?
        .query_one(
            "select connection_id from oauth_refresh_tokens where token_hash = $1",
            &[&hash],
        )
        .await?;
    Ok(row.get(0))
}

#[tokio::test]
async fn bad_authorization_requests_never_redirect_unverified_and_tell_the_client_why()
-> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let ep = discover(&gw).await?;
    let client = register(&ep, "Probe").await?;
    let (_, challenge) = pkce();
    let resource = gw.mcp_url();
    let url = |tweak: &dyn Fn(&mut Params)| {
        authorize_url(&ep, &client, REDIRECT, &challenge, &resource, tweak)
    };
    let set = |k: &'static str, v: &'static str| {
        move |p: &mut Params| {
            p.retain(|(n, _)| *n != k);
            p.push((k, v.into()));
        }
    };
    let drop = |k: &'static str| move |p: &mut Params| p.retain(|(n, _)| *n != k);

    // Not verified: an error page, no redirect anywhere.
    for (what, u) in [
        (
            "unregistered redirect URI",
            url(&set("redirect_uri", "https://evil.example/cb")),
        ),
        (
            "another loopback path",
            url(&set("redirect_uri", "http://127.0.0.1:33418/other")),
        ),
        (
            "unknown client",
            url(&set("client_id", "wzcl_00000000000000000000000000000000")),
        ),
        ("no client", url(&drop("client_id"))),
    ] {
        let r = get(&u).await?;
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        assert_eq!(r.location, None, "{what}: never a redirect");
    }
    // Verified: back to the client with the error and the state.
    for (what, u, error) in [
        (
            "no PKCE",
            url(&|p| p.retain(|(n, _)| !n.starts_with("code_challenge"))),
            "invalid_request",
        ),
        (
            "plain PKCE",
            url(&set("code_challenge_method", "plain")),
            "invalid_request",
        ),
        (
            "no method (plain)",
            url(&drop("code_challenge_method")),
            "invalid_request",
        ),
        (
            "another server's resource",
            url(&set("resource", "https://other.example/mcp")),
            "invalid_target",
        ),
        ("no resource", url(&drop("resource")), "invalid_target"),
        (
            "token response type",
            url(&set("response_type", "token")),
            "unsupported_response_type",
        ),
    ] {
        let r = get(&u).await?;
        assert_eq!(r.status, 303, "{what}: {}", r.text);
        let to = r.location.unwrap_or_default();
        assert!(to.starts_with(REDIRECT), "{what}: {to}");
        assert_eq!(param(&to, "error").as_deref(), Some(error), "{what}");
        assert_eq!(param(&to, "state").as_deref(), Some("st-42"), "{what}");
        assert_eq!(param(&to, "iss"), Some(gw.owner_url("")), "{what}");
        assert_eq!(param(&to, "code"), None, "{what}");
    }

    // The owner denies: the client hears access_denied with its state, and no connection.
    let owner = Owner::login(&stack, &gw).await?;
    let back = consent(&gw, &owner, &url(&|_| {}), json!({"approve": false})).await?;
    assert_eq!(param(&back, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&back, "state").as_deref(), Some("st-42"));
    assert_eq!(owner_oauth_connections(&stack).await?, 0);

    // Approved too late (the page stayed open past the request's ten minutes): the client
    // hears access_denied, and nothing is created.
    let r = get(&url(&|_| {})).await?;
    let consent_path = r.location.unwrap_or_default();
    let request = consent_path.rsplit('=').next().unwrap_or_default();
    let db = stack.pool.get().await?;
    db.execute(
        "update oauth_requests set expires_at = now() - interval '1 second' where request_id = $1",
        &[&request],
    )
    .await?;
    let mut late = approve_all();
    late["request"] = json!(request);
    let d = owner.post(&gw, "/api/oauth/decide", late).await?;
    assert_eq!(d.status, 200, "{}", d.text);
    let back = d.json["redirect"].as_str().unwrap_or_default();
    assert_eq!(param(back, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(back, "code"), None);
    assert_eq!(owner_oauth_connections(&stack).await?, 0);

    // A registration the owner never approved lapses: then it is unknown, and the next
    // registration clears it away.
    db.execute(
        "update oauth_clients set expires_at = now() - interval '1 second' where client_id = $1",
        &[&client],
    )
    .await?;
    let r = get(&url(&|_| {})).await?;
    assert_eq!((r.status, r.location), (400, None), "{}", r.text);
    register(&ep, "Another").await?;
    let left = db
        .query_one(
            "select count(*) from oauth_clients where client_id = $1",
            &[&client],
        )
        .await?
        .get::<_, i64>(0);
    assert_eq!(left, 0);

    // Registration refuses what a public client may not ask for.
    for bad in [
        json!({"redirect_uris": ["http://evil.example/cb"]}),
        json!({"redirect_uris": []}),
        json!({"redirect_uris": ["javascript:alert(1)"]}),
        json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
    ] {
        let resp = http()
            .post(&ep.register)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&bad)?)
            .send()
            .await?;
        let r = reply(resp).await?;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert!(
            r.json["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("invalid_")),
            "{}",
            r.text
        );
    }
    // What Claude and Cursor are reported to send: a secret-based auth method (registered as
    // public, and told so) and a native app's own scheme.
    let resp = http()
        .post(&ep.register)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&json!({
            "client_name": "Like Cursor",
            "redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback"],
            "token_endpoint_auth_method": "client_secret_post",
        }))?)
        .send()
        .await?;
    let r = reply(resp).await?;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["token_endpoint_auth_method"], "none");
    assert!(r.json.get("client_secret").is_none(), "no secret is issued");
    let native = r.json["client_id"].as_str().unwrap_or_default().to_owned();
    let cursor = "cursor://anysphere.cursor-mcp/oauth/callback";
    let (verifier, challenge) = pkce();
    let u = authorize_url(&ep, &native, cursor, &challenge, &resource, |_| {});
    let back = consent(&gw, &owner, &u, approve_all()).await?;
    assert!(back.starts_with(cursor), "{back}");
    let code = param(&back, "code").unwrap_or_default();
    leak::record_secret(leak::kind::BEARER, &code);
    let t = exchange(&ep, &native, &code, &verifier, cursor).await?;
    assert_eq!(t.status, 200, "{}", t.text);
    gw.stop().await
}

async fn owner_oauth_connections(stack: &Stack) -> anyhow::Result<i64> {
    let row = stack
        .pool
        .get()
        .await?
        .query_one(
            "select count(*) from connections where oauth_client_id is not null",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

#[tokio::test]
async fn codes_and_refresh_tokens_are_single_use_bound_and_end_with_the_connection()
-> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let ep = discover(&gw).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let client = register(&ep, "Agent").await?;
    let other = register(&ep, "Other").await?;
    let code_for = async |challenge: &str| -> anyhow::Result<String> {
        let url = authorize_url(&ep, &client, REDIRECT, challenge, &gw.mcp_url(), |_| {});
        let back = consent(&gw, &owner, &url, approve_all()).await?;
        let code = param(&back, "code").unwrap_or_default();
        leak::record_secret(leak::kind::BEARER, &code);
        Ok(code)
    };

    // A wrong verifier uses the code up: the right one cannot follow.
    let (verifier, challenge) = pkce();
    let code = code_for(&challenge).await?;
    let (wrong, _) = pkce();
    assert!(is_invalid_grant(
        &exchange(&ep, &client, &code, &wrong, REDIRECT).await?
    ));
    assert!(is_invalid_grant(
        &exchange(&ep, &client, &code, &verifier, REDIRECT).await?
    ));

    // Another client cannot redeem it, nor with another redirect URI.
    let code = code_for(&challenge).await?;
    assert!(is_invalid_grant(
        &exchange(&ep, &other, &code, &verifier, REDIRECT).await?
    ));
    let code = code_for(&challenge).await?;
    let elsewhere = "http://127.0.0.1:9/callback";
    assert!(is_invalid_grant(
        &exchange(&ep, &client, &code, &verifier, elsewhere).await?
    ));
    // A code lives 60 s.
    let code = code_for(&challenge).await?;
    stack
        .pool
        .get()
        .await?
        .execute(
            "update oauth_codes set expires_at = now() - interval '1 second' where code_hash = $1",
            &[&Sha256::digest(code.as_bytes()).to_vec()],
        )
        .await?;
    assert!(is_invalid_grant(
        &exchange(&ep, &client, &code, &verifier, REDIRECT).await?
    ));
    // Missing PKCE at the token endpoint is a malformed request.
    let code = code_for(&challenge).await?;
    let r = post_form(
        &ep.token,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
        ],
    )
    .await?;
    assert_eq!(
        (r.status, r.json["error"].as_str()),
        (400, Some("invalid_request"))
    );

    // A replayed code fails and revokes what it was redeemed into.
    let code = code_for(&challenge).await?;
    let first = exchange(&ep, &client, &code, &verifier, REDIRECT).await?;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(is_invalid_grant(
        &exchange(&ep, &client, &code, &verifier, REDIRECT).await?
    ));
    let rt = first.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        is_invalid_grant(&refresh(&ep, &client, &rt).await?),
        "the family is revoked"
    );

    // A refresh token only serves its own client, and not once expired.
    let (c2, t) = approved(&gw, &owner, &ep, "Agent 2").await?;
    let rt = t.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(is_invalid_grant(&refresh(&ep, &other, &rt).await?));
    stack
        .pool
        .get()
        .await?
        .execute(
            "update oauth_refresh_tokens set expires_at = now() - interval '1 second' where token_hash = $1",
            &[&Sha256::digest(rt.as_bytes()).to_vec()],
        )
        .await?;
    assert!(is_invalid_grant(&refresh(&ep, &c2, &rt).await?), "expired");

    // The owner rotates the connection: its refresh tokens die with the old revision.
    let (c3, t) = approved(&gw, &owner, &ep, "Agent 3").await?;
    let rt = t.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let id = connection_of(&stack, &rt).await?;
    let rotated = owner
        .post(
            &gw,
            "/api/connections/rotate",
            json!({"id": id, "revision": 0}),
        )
        .await?;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    if let Some(t) = rotated.json["token"].as_str() {
        leak::record_token(leak::kind::BEARER, t);
    }
    assert!(is_invalid_grant(&refresh(&ep, &c3, &rt).await?));
    let access = t.json["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        read_outcome(&gw.mcp_url(), &access).await?,
        "tool:unauthenticated"
    );

    // The client revokes its own grant (RFC 7009): the connection is revoked.
    let (c4, t) = approved(&gw, &owner, &ep, "Agent 4").await?;
    let rt = t.json["refresh_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let access = t.json["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let id = connection_of(&stack, &rt).await?;
    let by_other = post_form(&ep.revoke, &[("token", &rt), ("client_id", &other)]).await?;
    assert_eq!(by_other.status, 200);
    assert_eq!(
        read_outcome(&gw.mcp_url(), &access).await?,
        "ok",
        "another client revokes nothing"
    );
    let r = post_form(&ep.revoke, &[("token", &rt), ("client_id", &c4)]).await?;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        read_outcome(&gw.mcp_url(), &access).await?,
        "tool:unauthenticated"
    );
    let revoked: Option<chrono::DateTime<chrono::Utc>> = stack
        .pool
        .get()
        .await?
        .query_one(
            "select revoked_at from connections where connection_id = $1",
            &[&id],
        )
        .await?
        .get(0);
    assert!(revoked.is_some());
    gw.stop().await
}
