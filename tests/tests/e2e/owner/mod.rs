//! The owner dashboard and API on listener B (DESIGN §6): sessions and CSRF, exact Origin,
//! bearer tokens refused, send permissions with revisions, read scopes of several accounts,
//! GETs that change nothing, the account controls, sends and refused send attempts, and the
//! whole dashboard in real headless Chromium.

mod account;
mod browser;
mod edge;
mod login;
mod oauth;
mod permissions;
mod policy;
mod sends;
mod throttle;

use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::sim::UpsertContact;
use wazap_tests::{Gateway, Stack};

/// The owner password the tests set.
pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// A logged-in owner talking raw HTTP to listener B: its cookie and CSRF token.
pub(crate) struct Owner {
    /// `http://127.0.0.1:<port>` (also the configured origin).
    pub(crate) origin: String,
    /// `name=value` of the session cookie.
    pub(crate) cookie: String,
    /// The session's CSRF token.
    pub(crate) csrf: String,
    http: reqwest::Client,
}

/// An HTTP answer: status, `Set-Cookie` values, JSON body (`Null` when not JSON) and raw text.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) cookies: Vec<String>,
    pub(crate) json: Value,
    pub(crate) text: String,
}

/// A client that never follows redirects (a page's 303 to `/login` is the answer).
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Send `method path` to listener B with exactly `headers` (and `body` as JSON when given).
pub(crate) async fn send(
    gw: &Gateway,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> anyhow::Result<Answer> {
    use wazap_tests::leak;
    let mut req = http().request(method, gw.owner_url(path));
    for (k, v) in headers {
        match k.to_ascii_lowercase().as_str() {
            "cookie" => leak::cookies(v),
            "x-csrf-token" => leak::record_secret(leak::kind::CSRF, v),
            "authorization" => leak::authorization(v),
            _ => {}
        }
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(serde_json::to_vec(b)?);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let cookies: Vec<String> = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let text = resp.text().await?;
    for c in &cookies {
        leak::set_cookie(c);
    }
    leak::answer("owner api", status, &text);
    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    for (field, kind) in [("csrf", leak::kind::CSRF), ("token", leak::kind::BEARER)] {
        if let Some(v) = json[field].as_str() {
            leak::record_token(kind, v);
        }
    }
    // The account's pairing QR (`ref,noise key,identity key,adv secret`) and pairing code.
    if let Some(qr) = json["qr"].as_str() {
        leak::record_secret(leak::kind::WHATSAPP_KEY, qr);
        if let Some(adv_secret) = qr.split(',').nth(3) {
            leak::record_secret(leak::kind::WHATSAPP_KEY, adv_secret);
        }
    }
    if let Some(code) = json["pairing_code"].as_str() {
        leak::record_secret(leak::kind::WHATSAPP_KEY, code);
    }
    Ok(Answer {
        status,
        cookies,
        json,
        text,
    })
}

/// Log in with `password`, presenting `old_cookie` (if any); the raw answer.
pub(crate) async fn login_raw(
    gw: &Gateway,
    password: &str,
    old_cookie: Option<&str>,
) -> anyhow::Result<Answer> {
    wazap_tests::leak::record_secret(wazap_tests::leak::kind::OWNER_PASSWORD, password);
    let origin = format!("http://{}", gw.owner_addr);
    let mut headers = vec![
        ("origin", origin.as_str()),
        ("content-type", "application/json"),
    ];
    if let Some(c) = old_cookie {
        headers.push(("cookie", c));
    }
    send(
        gw,
        reqwest::Method::POST,
        "/api/login",
        &headers,
        Some(&json!({ "password": password })),
    )
    .await
}

impl Owner {
    /// Set the owner password (first time) and log in.
    pub(crate) async fn login(stack: &Stack, gw: &Gateway) -> anyhow::Result<Self> {
        let has_password = stack
            .pool
            .get()
            .await?
            .query_opt("select 1 from owner_credentials", &[])
            .await?
            .is_some();
        if !has_password {
            wazap_worker::owner::set_password(&stack.pool, PASSWORD).await?;
        }
        let a = login_raw(gw, PASSWORD, None).await?;
        anyhow::ensure!(a.status == 200, "login: {} {}", a.status, a.text);
        let cookie = a
            .cookies
            .first()
            .and_then(|c| c.split(';').next())
            .ok_or_else(|| anyhow::anyhow!("no session cookie"))?
            .to_owned();
        Ok(Self {
            origin: format!("http://{}", gw.owner_addr),
            cookie,
            csrf: a.json["csrf"].as_str().unwrap_or_default().to_owned(),
            http: http(),
        })
    }

    /// A write as the dashboard's script makes it: cookie, exact Origin, CSRF header, JSON.
    pub(crate) async fn post(
        &self,
        gw: &Gateway,
        path: &str,
        body: Value,
    ) -> anyhow::Result<Answer> {
        send(
            gw,
            reqwest::Method::POST,
            path,
            &[
                ("cookie", &self.cookie),
                ("origin", &self.origin),
                ("x-csrf-token", &self.csrf),
                ("content-type", "application/json"),
            ],
            Some(&body),
        )
        .await
    }

    /// A read with the session cookie.
    pub(crate) async fn get(&self, gw: &Gateway, path: &str) -> anyhow::Result<Answer> {
        let _ = &self.http;
        send(
            gw,
            reqwest::Method::GET,
            path,
            &[("cookie", &self.cookie)],
            None,
        )
        .await
    }

    /// Create a connection through the owner API; `(id, token)`.
    pub(crate) async fn create(
        &self,
        gw: &Gateway,
        name: &str,
        read_scope: Value,
    ) -> anyhow::Result<(String, String)> {
        let expires = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
        let a = self
            .post(
                gw,
                "/api/connections",
                json!({"name": name, "kind": "local", "expires_at": expires, "read_scope": read_scope}),
            )
            .await?;
        anyhow::ensure!(a.status == 200, "create: {} {}", a.status, a.text);
        Ok((
            a.json["connection"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            a.json["token"].as_str().unwrap_or_default().to_owned(),
        ))
    }
}

/// Add a contact through the sim; its opaque chat id.
pub(crate) async fn chat(stack: &Stack, n: u32, name: &str) -> anyhow::Result<String> {
    let ack = stack
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: format!("97250{:07}@s.whatsapp.net", n),
                lid: None,
                name: name.into(),
            },
        )
        .await?;
    ack.ids
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no chat id"))
}

/// A JSON-RPC `tools/list` against `/mcp` at `url` with `token`: the HTTP status. The
/// gateway answers it alone (signature and expiry only); see [`read_outcome`] for the worker.
pub(crate) async fn tools_list_status(url: &str, token: &str) -> anyhow::Result<u16> {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))?;
    let (status, _, _) =
        wazap_tests::post_raw(url, &[("authorization", &format!("Bearer {token}"))], body).await?;
    Ok(status)
}

/// `list_chats` through `/mcp` at `url` with `token`, which the worker authorises (revocation,
/// current revision): `"ok"`, `"tool:<code>"` or `"http:<status>"`.
pub(crate) async fn read_outcome(url: &str, token: &str) -> anyhow::Result<String> {
    let body = wazap_tests::tools_call_body("list_chats", json!({}));
    let (status, _, b) =
        wazap_tests::post_raw(url, &[("authorization", &format!("Bearer {token}"))], body).await?;
    if status != 200 {
        return Ok(format!("http:{status}"));
    }
    if b["result"]["isError"].as_bool() != Some(true) {
        return Ok("ok".into());
    }
    let text = b["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let inner: Value = serde_json::from_str(text).unwrap_or_default();
    Ok(format!(
        "tool:{}",
        inner["error"]["code"].as_str().unwrap_or("none")
    ))
}
