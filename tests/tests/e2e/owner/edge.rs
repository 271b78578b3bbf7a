//! Listener B's edge: CSRF token, exact Origin, cross-site fetches, bearer tokens refused on
//! owner routes (and the owner cookie never standing in for a grant on `/mcp`), exact Host, and
//! GETs that change nothing.

use reqwest::Method;
use serde_json::json;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;

use super::{Owner, send, tools_list_status};

/// A refused write: what it lacks, its headers, the expected status.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);

async fn count_connections(stack: &Stack) -> anyhow::Result<i64> {
    Ok(stack
        .pool
        .get()
        .await?
        .query_one("select count(*) from connections", &[])
        .await?
        .get(0))
}

#[tokio::test]
async fn writes_need_the_sessions_csrf_token_and_the_exact_origin() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let other = Owner::login(&stack, &gw).await?;
    let expires = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let body = json!({"name": "x", "kind": "local", "expires_at": expires, "read_scope": {"chats": {"mode": "all"}}});
    let port = gw.owner_addr.port();
    let json_ct = ("content-type", "application/json");
    let cookie = ("cookie", owner.cookie.as_str());
    let origin = ("origin", owner.origin.as_str());
    let csrf = ("x-csrf-token", owner.csrf.as_str());
    let wrong_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    let https = format!("https://127.0.0.1:{port}");
    let suffixed = format!("http://127.0.0.1:{port}.evil.test");
    let cases: Vec<Case<'_>> = vec![
        ("no csrf", vec![cookie, origin, json_ct], 403),
        (
            "wrong csrf",
            vec![cookie, origin, json_ct, ("x-csrf-token", "0000")],
            403,
        ),
        (
            "another session's csrf",
            vec![
                cookie,
                origin,
                json_ct,
                ("x-csrf-token", other.csrf.as_str()),
            ],
            403,
        ),
        ("no origin", vec![cookie, csrf, json_ct], 403),
        (
            "null origin",
            vec![cookie, csrf, json_ct, ("origin", "null")],
            403,
        ),
        (
            "other port",
            vec![cookie, csrf, json_ct, ("origin", &wrong_port)],
            403,
        ),
        (
            "https instead of http",
            vec![cookie, csrf, json_ct, ("origin", &https)],
            403,
        ),
        (
            "suffixed origin",
            vec![cookie, csrf, json_ct, ("origin", &suffixed)],
            403,
        ),
        (
            "cross-site fetch",
            vec![
                cookie,
                origin,
                csrf,
                json_ct,
                ("sec-fetch-site", "cross-site"),
            ],
            403,
        ),
        (
            "form post",
            vec![cookie, origin, csrf, ("content-type", "text/plain")],
            415,
        ),
        ("no cookie", vec![origin, csrf, json_ct], 401),
    ];
    for (what, headers, want) in cases {
        let a = send(&gw, Method::POST, "/api/connections", &headers, Some(&body)).await?;
        assert_eq!(a.status, want, "{what}: {}", a.text);
    }
    assert_eq!(
        count_connections(&stack).await?,
        0,
        "a refused write created something"
    );
    let a = owner.post(&gw, "/api/connections", body.clone()).await?;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(count_connections(&stack).await?, 1);
    // The CSRF token is never echoed in an error.
    let a = send(
        &gw,
        Method::POST,
        "/api/connections",
        &[cookie, origin, json_ct, ("x-csrf-token", "0000")],
        Some(&body),
    )
    .await?;
    assert!(!a.text.contains(&owner.csrf) && !a.text.contains("0000"));
    Ok(())
}

#[tokio::test]
async fn bearer_tokens_never_reach_owner_routes_and_cookies_never_reach_mcp() -> anyhow::Result<()>
{
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let (_, token) = owner
        .create(&gw, "agent", json!({"chats": {"mode": "all"}}))
        .await?;
    let bearer = format!("Bearer {token}");
    for (method, path) in [
        (Method::GET, "/api/connections"),
        (Method::GET, "/connections"),
        (Method::POST, "/api/connections/revoke"),
    ] {
        for with_cookie in [false, true] {
            let mut h = vec![
                ("authorization", bearer.as_str()),
                ("origin", owner.origin.as_str()),
                ("x-csrf-token", owner.csrf.as_str()),
                ("content-type", "application/json"),
            ];
            if with_cookie {
                h.push(("cookie", owner.cookie.as_str()));
            }
            let a = send(
                &gw,
                method.clone(),
                path,
                &h,
                Some(&json!({"id": "conn_x"})),
            )
            .await?;
            assert_eq!(
                a.status, 401,
                "{method} {path} cookie={with_cookie}: {}",
                a.text
            );
            assert_eq!(a.json["error"]["code"], "unauthenticated");
        }
    }
    // Listener B's /mcp takes the bearer grant exactly as listener A's …
    let mcp_b = gw.owner_url("/mcp");
    assert_eq!(tools_list_status(&mcp_b, &token).await?, 200);
    assert_eq!(tools_list_status(&gw.mcp_url(), &token).await?, 200);
    // … and the owner cookie (no bearer) is no grant there.
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))?;
    let (s, _, _) =
        wazap_tests::post_raw(&mcp_b, &[("cookie", &owner.cookie)], body.clone()).await?;
    assert_eq!(s, 401);
    // Listener B's Host rule: only the origin's host:port.
    let a = send(
        &gw,
        Method::GET,
        "/api/connections",
        &[
            ("cookie", &owner.cookie),
            ("host", &format!("localhost:{}", gw.owner_addr.port())),
        ],
        None,
    )
    .await?;
    assert_eq!(a.status, 403);
    let (s, _, _) = wazap_tests::post_raw(
        &mcp_b,
        &[("authorization", &bearer), ("host", "evil.example:80")],
        body,
    )
    .await?;
    assert_eq!(s, 403);
    Ok(())
}

/// Everything a GET could touch, minus the session's idle timer.
async fn snapshot(stack: &Stack) -> anyhow::Result<String> {
    let client = stack.pool.get().await?;
    let mut out = String::new();
    for q in [
        "select coalesce(json_agg(c order by connection_id)::text, '') from connections c",
        "select json_agg(p)::text from archive_policy p",
        "select json_agg(t)::text from owner_login_throttle t",
        "select coalesce(json_agg(s order by source)::text, '') from owner_login_sources s",
        "select coalesce(json_agg(j order by request_id)::text, '') from send_journal j",
        "select coalesce(json_agg(json_build_array(csrf, created_at, expires_at) order by csrf)::text, '') from owner_sessions",
        "select json_agg(o)::text from owner_credentials o",
    ] {
        let v: String = client.query_one(q, &[]).await?.get(0);
        out.push_str(&v);
        out.push('\n');
    }
    Ok(out)
}

#[tokio::test]
async fn pages_render_and_gets_change_nothing() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let c1 = super::chat(&stack, 1, "Alice <b>").await?;
    let (id, _) = owner
        .create(&gw, "agent <script>", json!({"chats": {"mode": "all"}}))
        .await?;
    let before = snapshot(&stack).await?;
    let pages = [
        "/account",
        "/connections",
        &format!("/connections/{id}"),
        "/policy",
        "/sends",
        "/login",
    ];
    for page in pages {
        let a = owner.get(&gw, page).await?;
        assert_eq!(a.status, 200, "{page}");
        assert!(a.text.starts_with("<!doctype html>"), "{page}");
        assert!(
            !a.text.contains("<script>") && !a.text.contains("Alice <b>"),
            "{page} is not escaped"
        );
        // Without a session every page but /login sends the browser to /login.
        let anon = send(&gw, Method::GET, page, &[], None).await?;
        if page != "/login" {
            assert_eq!(anon.status, 303, "{page}");
        }
    }
    for api in [
        "/api/connections",
        "/api/chats?q=ali",
        "/api/policy",
        "/api/account",
        "/api/accounts",
        "/api/sends",
        "/static/app.js",
        "/static/app.css",
    ] {
        let a = owner.get(&gw, api).await?;
        assert_eq!(a.status, 200, "{api}: {}", a.text);
    }
    let chats = owner
        .get(&gw, &format!("/api/chats?connection_id={id}&q=ALI"))
        .await?;
    assert_eq!(chats.json["chats"][0]["id"], c1.as_str());
    // GETs on write routes do not exist.
    for path in [
        "/api/logout",
        "/api/login",
        "/api/connections/revoke",
        "/api/connections/send-permission",
        "/api/accounts/remove",
    ] {
        let a = owner.get(&gw, path).await?;
        assert_eq!(a.status, 405, "{path}");
    }
    assert_eq!(snapshot(&stack).await?, before, "a GET changed state");
    Ok(())
}
