//! Failed owner logins through the owner listener: counted per source — the peer address the
//! gateway's socket saw, never a forwarded header unless that peer is a trusted proxy
//! (`WAZAP_TRUSTED_PROXIES`) — so a locked stranger does not lock out the
//! owner from another address; the right password refused while locked; a burst counted attempt
//! by attempt; a huge body refused before the worker, an over-long password before any hash.

use std::net::IpAddr;

use serde_json::json;
use wazap_tests::{Gateway, Stack};
use wazap_worker::config::ConnectorKind;
use wazap_worker::owner::password::hashes_started;
use wazap_worker::owner::throttle::FREE_FAILURES;

use super::{Answer, PASSWORD, login_raw};

/// A wrong password distinctive enough for the leak scan (the answer says "wrong password", so
/// that one would match the server's own words).
const WRONG_PASSWORD: &str = "Tr0ub4dor&3 guessed";

/// The loopback address the default client connects from.
const HERE: &str = "127.0.0.1";
/// Another loopback address (Linux routes all of 127/8 to lo): another source.
const ELSEWHERE: &str = "127.0.0.2";

/// Log in with `password` from local address `from`, adding `headers`.
async fn login_from(
    gw: &Gateway,
    from: &str,
    password: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Answer> {
    let http = reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>()?)
        .build()?;
    let mut req = http
        .post(gw.owner_url("/api/login"))
        .header("origin", format!("http://{}", gw.owner_addr))
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req
        .body(serde_json::to_vec(&json!({ "password": password }))?)
        .send()
        .await?;
    let status = resp.status().as_u16();
    let text = resp.text().await?;
    Ok(Answer {
        status,
        cookies: Vec::new(),
        json: serde_json::from_str(&text).unwrap_or_default(),
        text,
    })
}

/// Every source's failure count, `source=failures` in key order.
async fn sources(stack: &Stack) -> anyhow::Result<Vec<String>> {
    let rows = stack
        .pool
        .get()
        .await?
        .query(
            "select source, failures from owner_login_sources order by source",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| format!("{}={}", r.get::<_, String>(0), r.get::<_, i32>(1)))
        .collect())
}

/// The global failure count.
async fn global(stack: &Stack) -> anyhow::Result<i32> {
    let row = stack
        .pool
        .get()
        .await?
        .query_one("select failures from owner_login_throttle", &[])
        .await?;
    Ok(row.get(0))
}

/// Stretch the lock the last failure set to a minute, so the next call lands inside it however
/// slowly a loaded machine runs the test (the worker chose to lock, not the test): how many
/// sources were locked.
async fn stretch(stack: &Stack) -> anyhow::Result<u64> {
    Ok(stack
        .pool
        .get()
        .await?
        .execute(
            "update owner_login_sources set locked_until = now() + interval '1 minute'
              where locked_until > now() - interval '1 minute'",
            &[],
        )
        .await?)
}

async fn unlock(stack: &Stack) -> anyhow::Result<()> {
    stack
        .sql("update owner_login_sources set locked_until = now() - interval '1 second'")
        .await
}

#[tokio::test]
async fn the_socket_peer_is_the_source_and_forwarded_headers_change_nothing() -> anyhow::Result<()>
{
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    wazap_worker::owner::set_password(&stack.pool, PASSWORD).await?;
    for i in 0..=FREE_FAILURES {
        // Each forged header names a different client; none of them is believed.
        let forged = format!("203.0.113.{}", i + 1);
        let a = login_from(
            &gw,
            ELSEWHERE,
            WRONG_PASSWORD,
            &[
                ("x-forwarded-for", &forged),
                ("forwarded", &format!("for={forged}")),
                ("x-real-ip", &forged),
            ],
        )
        .await?;
        assert_eq!(a.status, 401, "attempt {i}: {}", a.text);
    }
    assert_eq!(sources(&stack).await?, ["127.0.0.2=6"]);
    assert_eq!(stretch(&stack).await?, 1, "the failures locked that source");
    // The stranger is refused even with the right password, whatever it claims to be.
    for forged in [HERE, "198.51.100.7"] {
        let a = login_from(&gw, ELSEWHERE, PASSWORD, &[("x-forwarded-for", forged)]).await?;
        assert_eq!(a.status, 429, "{}", a.text);
        assert_eq!(a.json["error"]["code"], "rate_limited");
    }
    // The owner, from another address, is not locked out.
    let owner = login_from(&gw, HERE, PASSWORD, &[]).await?;
    assert_eq!(owner.status, 200, "{}", owner.text);
    assert_eq!(sources(&stack).await?, ["127.0.0.2=6"], "nothing counted");
    // Once the lock has passed, the right password works and clears that source.
    unlock(&stack).await?;
    let back = login_from(&gw, ELSEWHERE, PASSWORD, &[]).await?;
    assert_eq!(back.status, 200, "{}", back.text);
    assert!(sources(&stack).await?.is_empty());
    assert_eq!(
        global(&stack).await?,
        6,
        "the stranger's failures, counted globally"
    );
    Ok(())
}

/// With `WAZAP_TRUSTED_PROXIES` naming the proxy's address, a login through it counts against
/// the right-most `X-Forwarded-For` address not itself trusted: one client locked behind the
/// proxy does not lock out another; a peer not listed is still its own source, whatever it
/// forwards.
#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_is_its_own_source() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack
        .gateway(&[("WAZAP_TRUSTED_PROXIES", "127.0.0.2/32, 10.0.0.0/8")])
        .await?;
    wazap_worker::owner::set_password(&stack.pool, PASSWORD).await?;
    // The stranger writes its own X-Forwarded-For; the proxy (127.0.0.2) and a trusted inner
    // hop appended theirs.
    let stranger = [("x-forwarded-for", "198.51.100.9, 203.0.113.7, 10.1.1.1")];
    for i in 0..=FREE_FAILURES {
        let a = login_from(&gw, ELSEWHERE, WRONG_PASSWORD, &stranger).await?;
        assert_eq!(a.status, 401, "attempt {i}: {}", a.text);
    }
    assert_eq!(sources(&stack).await?, ["203.0.113.7=6"]);
    assert_eq!(stretch(&stack).await?, 1, "the failures locked that client");
    let locked = login_from(&gw, ELSEWHERE, PASSWORD, &stranger).await?;
    assert_eq!(locked.status, 429, "{}", locked.text);
    // The owner, through the same proxy from another address, is not locked out.
    let owner = login_from(
        &gw,
        ELSEWHERE,
        PASSWORD,
        &[("x-forwarded-for", "192.0.2.44")],
    )
    .await?;
    assert_eq!(owner.status, 200, "{}", owner.text);
    // A peer that is not a trusted proxy is its own source, whatever it forwards.
    let direct = login_from(&gw, HERE, WRONG_PASSWORD, &stranger).await?;
    assert_eq!(direct.status, 401, "{}", direct.text);
    assert_eq!(sources(&stack).await?, ["127.0.0.1=1", "203.0.113.7=6"]);
    Ok(())
}

#[tokio::test]
async fn an_over_long_password_runs_no_hash_and_a_huge_body_never_reaches_the_worker()
-> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    wazap_worker::owner::set_password(&stack.pool, PASSWORD).await?;
    let hashes = hashes_started();
    // 1 MB, and 100 kB (within other owner routes' limit): over the login route's body limit,
    // answered by the gateway.
    for bytes in [1 << 20, 100_000] {
        let huge = login_raw(&gw, &"x".repeat(bytes), None).await?;
        assert_eq!(huge.status, 413, "{bytes}: {}", huge.text);
        assert_eq!(huge.json["error"]["code"], "request_too_large");
    }
    assert!(sources(&stack).await?.is_empty(), "it reached the worker");
    // 5,000 bytes: within the body limit, over the worker's 1,024; counted, never hashed.
    let long = login_raw(&gw, &"x".repeat(5000), None).await?;
    assert_eq!(long.status, 401, "{}", long.text);
    assert_eq!(sources(&stack).await?, ["127.0.0.1=1"]);
    assert_eq!(hashes_started(), hashes, "an over-long password was hashed");
    // The right password is hashed (the counter does count).
    assert_eq!(login_raw(&gw, PASSWORD, None).await?.status, 200);
    assert_eq!(hashes_started(), hashes + 1);
    Ok(())
}

/// 50 wrong passwords at once from one address: the worker counts each one it lets through
/// before its hash, in the statement that checks the lock, so the burst cannot slip past a lock
/// one of them sets — a handful are checked, the rest refused before hashing — and the right
/// password works again once the lock passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_wrong_passwords_is_throttled_as_a_sequence() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = std::sync::Arc::new(stack.gateway(&[]).await?);
    wazap_worker::owner::set_password(&stack.pool, PASSWORD).await?;
    let started = std::time::Instant::now();
    let burst = (0..50).map(|_| {
        let gw = gw.clone();
        tokio::spawn(async move { login_raw(&gw, WRONG_PASSWORD, None).await })
    });
    let (mut checked, mut busy, mut refused) = (0, 0, 0);
    for answer in futures::future::join_all(burst).await {
        let answer = answer??;
        match answer.status {
            401 => checked += 1,
            429 if answer.text.contains("at once") => busy += 1,
            429 => refused += 1,
            other => panic!("a wrong password answered {other}: {}", answer.text),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{checked} checked, {busy} counted but not checked, {refused} refused in {secs:.1} s");
    let counted = checked + busy;
    assert_eq!(sources(&stack).await?, [format!("127.0.0.1={counted}")]);
    assert_eq!(global(&stack).await?, counted, "an attempt went uncounted");
    // The free allowance and the one that locked, plus one more each time a lock lapsed while
    // the burst ran (1 s, 2 s, 4 s …: n lapses take 2ⁿ − 1 s) — never the burst.
    let lapses = (secs + 1.0).log2().floor() as i32;
    assert!(
        counted > FREE_FAILURES && counted <= FREE_FAILURES + 1 + lapses,
        "{counted} of 50 counted in {secs:.1} s"
    );
    unlock(&stack).await?;
    assert_eq!(login_raw(&gw, PASSWORD, None).await?.status, 200);
    Ok(())
}
