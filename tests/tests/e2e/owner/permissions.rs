//! `GET /api/connections` and `POST /api/connections/send-permission` exactly as DESIGN §6,
//! plus rotate and read-scope edits (new credential revision, send permission reset), and the
//! read-scope editor's chat list per account with a scope of two accounts.

use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::sim::{InjectMessage, UpsertContact};
use wazap_tests::fixtures;
use wazap_tests::{Gateway, Stack};
use wazap_worker::config::ConnectorKind;

use super::{Owner, chat, read_outcome};

async fn stored(stack: &Stack, id: &str) -> anyhow::Result<(String, Vec<String>, i32, i32)> {
    let row = stack
        .pool
        .get()
        .await?
        .query_one(
            "select send_mode, send_chats, send_revision, revision from connections where connection_id = $1",
            &[&id],
        )
        .await?;
    Ok((row.get(0), row.get(1), row.get(2), row.get(3)))
}

#[tokio::test]
async fn send_permission_edits_follow_design_6() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let mut chats = Vec::new();
    for i in 0..4 {
        chats.push(chat(&stack, i, &format!("Person {i}")).await?);
    }
    let (c1, c2, c3, outside) = (&chats[0], &chats[1], &chats[2], &chats[3]);
    let scope = json!({"chats": {"mode": "selected", "chats": [c1, c2, c3]}});
    let (id, token) = owner.create(&gw, "agent", scope).await?;
    let path = "/api/connections/send-permission";
    let edit = |mode: &str, chats: Value, rev: u32, send_rev: u32| json!({"id": id, "revision": rev, "mode": mode, "chats": chats, "expected_send_revision": send_rev});

    let many: Vec<String> = (0..101).map(|i| format!("c_{i:016x}")).collect();
    for (what, body) in [
        ("0 chats", edit("selected", json!([]), 0, 0)),
        ("101 chats", edit("selected", json!(many), 0, 0)),
        ("duplicate", edit("selected", json!([c1, c1]), 0, 0)),
        (
            "outside the read scope",
            edit("selected", json!([c1, outside]), 0, 0),
        ),
        (
            "unknown chat",
            edit("selected", json!(["c_0000000000000000"]), 0, 0),
        ),
        (
            "phone number",
            edit("selected", json!(["+972501234567"]), 0, 0),
        ),
        ("chats with all", edit("all", json!([c1]), 0, 0)),
        (
            "mode without expected_send_revision",
            json!({"id": id, "revision": 0, "mode": "all", "chats": []}),
        ),
    ] {
        let a = owner.post(&gw, path, body).await?;
        assert_eq!(a.status, 400, "{what}: {}", a.text);
        assert_eq!(a.json["error"]["code"], "invalid_argument", "{what}");
    }
    assert_eq!(
        stored(&stack, &id).await?,
        ("none".into(), vec![], 0, 0),
        "a refused edit changed something"
    );

    let a = owner
        .post(&gw, path, edit("selected", json!([c1, c2]), 0, 0))
        .await?;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(
        a.json,
        json!({"mode": "selected", "chats": [c1, c2], "revision": 1})
    );

    // Stale send revision or stale credential revision: 409, nothing changed.
    for (what, body) in [
        ("stale send revision", edit("all", json!([]), 0, 0)),
        ("stale credential revision", edit("all", json!([]), 7, 1)),
    ] {
        let a = owner.post(&gw, path, body).await?;
        assert_eq!(a.status, 409, "{what}: {}", a.text);
    }
    assert_eq!(
        stored(&stack, &id).await?,
        ("selected".into(), vec![c1.clone(), c2.clone()], 1, 0)
    );

    let a = owner.post(&gw, path, edit("all", json!([]), 0, 1)).await?;
    assert_eq!(a.json, json!({"mode": "all", "chats": [], "revision": 2}));
    // The older body: non-empty = selected, empty = none, no send-revision check.
    let a = owner
        .post(&gw, path, json!({"id": id, "revision": 0, "chats": [c3]}))
        .await?;
    assert_eq!(
        a.json,
        json!({"mode": "selected", "chats": [c3], "revision": 3}),
        "{}",
        a.text
    );
    let a = owner
        .post(&gw, path, json!({"id": id, "revision": 0, "chats": [c1]}))
        .await?;
    assert_eq!(a.json["revision"], 4);
    let listed = owner.get(&gw, "/api/connections").await?;
    let conn = &listed.json["connections"][0];
    assert_eq!(conn["id"], id.as_str());
    assert_eq!(conn["revision"], 0);
    assert_eq!(
        conn["send_permission"],
        json!({"mode": "selected", "chats": [c1], "revision": 4})
    );
    for field in ["name", "kind", "expires_at", "read_scope"] {
        assert!(!conn[field].is_null(), "{field}");
    }
    let a = owner
        .post(&gw, path, json!({"id": id, "revision": 0, "chats": []}))
        .await?;
    assert_eq!(a.json, json!({"mode": "none", "chats": [], "revision": 5}));
    // Edits kept the token.
    assert_eq!(read_outcome(&gw.mcp_url(), &token).await?, "ok");
    Ok(())
}

#[tokio::test]
async fn rotation_and_scope_edits_make_a_new_credential() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let c1 = chat(&stack, 1, "One").await?;
    let (id, token0) = owner
        .create(&gw, "agent", json!({"chats": {"mode": "all"}}))
        .await?;
    let path = "/api/connections/send-permission";
    let a = owner.post(&gw, path, json!({"id": id, "revision": 0, "mode": "selected", "chats": [c1], "expected_send_revision": 0})).await?;
    assert_eq!(a.status, 200);

    let stale = owner
        .post(
            &gw,
            "/api/connections/rotate",
            json!({"id": id, "revision": 3}),
        )
        .await?;
    assert_eq!(stale.status, 409);
    let r = owner
        .post(
            &gw,
            "/api/connections/rotate",
            json!({"id": id, "revision": 0}),
        )
        .await?;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["connection"]["revision"], 1);
    assert_eq!(r.json["connection"]["send_permission"]["mode"], "none");
    let token1 = r.json["token"].as_str().unwrap().to_owned();
    assert_eq!(
        read_outcome(&gw.mcp_url(), &token0).await?,
        "tool:unauthenticated",
        "the old token still works"
    );
    assert_eq!(read_outcome(&gw.mcp_url(), &token1).await?, "ok");

    let s = owner
        .post(&gw, "/api/connections/read-scope", json!({"id": id, "revision": 1, "read_scope": {"chats": {"mode": "selected", "chats": [c1]}}}))
        .await?;
    assert_eq!(s.status, 200, "{}", s.text);
    assert_eq!(s.json["connection"]["revision"], 2);
    assert_eq!(
        s.json["connection"]["read_scope"]["chats"]["mode"],
        "selected"
    );
    let token2 = s.json["token"].as_str().unwrap().to_owned();
    assert_eq!(
        read_outcome(&gw.mcp_url(), &token1).await?,
        "tool:unauthenticated"
    );
    assert_eq!(read_outcome(&gw.mcp_url(), &token2).await?, "ok");

    let v = owner
        .post(&gw, "/api/connections/revoke", json!({"id": id}))
        .await?;
    assert_eq!(v.status, 200);
    assert_eq!(
        read_outcome(&gw.owner_url("/mcp"), &token2).await?,
        "tool:unauthenticated"
    );
    let after = owner
        .post(&gw, path, json!({"id": id, "revision": 2, "chats": [c1]}))
        .await?;
    assert_eq!(after.status, 400, "a revoked connection gets no permission");
    Ok(())
}

/// Account `work` added through the owner API (on the sim), with contacts named `names` as its
/// chats, each with a message, put in by its sim once a worker serves it; their chat ids, in
/// order.
pub(super) async fn work_account(
    stack: &mut Stack,
    gw: &Gateway,
    owner: &Owner,
    names: &[&str],
) -> anyhow::Result<Vec<String>> {
    let added = owner
        .post(
            gw,
            "/api/accounts",
            json!({"account_id": "work", "display_name": "Work phone", "connector": "sim"}),
        )
        .await?;
    anyhow::ensure!(added.status == 200, "add account: {}", added.text);
    let mut ids = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let contact = UpsertContact {
            jid: format!("97254{i:07}@s.whatsapp.net"),
            lid: None,
            name: (*name).to_owned(),
        };
        let jid = contact.jid.clone();
        // The first op waits for a worker to take the account (a poll or two).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let ack = loop {
            match stack.sim_of("work", sim_op::UPSERT_CONTACT, &contact).await {
                Ok(ack) => break ack,
                Err(e) if std::time::Instant::now() < deadline => {
                    tracing::debug!(error = ?e, "work not served yet");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => anyhow::bail!("no worker serves work: {e:?}"),
            }
        };
        ids.push(ack.ids.into_iter().next().expect("a chat id"));
        // A message too: `list_chats` lists chats that have one.
        let hello = fixtures::text(
            &jid,
            &format!("w{i}"),
            fixtures::minutes_ago(5),
            "hello from work",
        );
        let message = InjectMessage { message: hello };
        stack
            .sim_of("work", sim_op::INJECT_MESSAGE, &message)
            .await?;
    }
    Ok(ids)
}

/// The chat ids `list_chats` answers `mcp` in `account`, sorted.
async fn listed(mcp: &wazap_tests::Mcp, account: &str) -> anyhow::Result<Vec<String>> {
    let out = mcp
        .call("list_chats", json!({"account_id": account}))
        .await?;
    let mut ids: Vec<String> = out.ok()["chats"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no chats: {}", out.text))?
        .iter()
        .filter_map(|c| c["chat_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    Ok(ids)
}

fn sorted(mut ids: Vec<&String>) -> Vec<String> {
    ids.sort();
    ids.into_iter().cloned().collect()
}

/// The read-scope editor's chat list takes an account; a scope of two accounts, each with its
/// own rule as the editor writes it, reads exactly the chats it names, and the page shows the
/// editor with the chats by name.
#[tokio::test]
async fn a_scope_of_two_accounts_reads_exactly_its_chats() -> anyhow::Result<()> {
    let mut stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let ana = chat(&stack, 1, "Home Ana").await?;
    let ben = chat(&stack, 2, "Home Ben").await?;
    for n in [1, 2] {
        let jid = fixtures::person(&format!("97250{n:07}"));
        let hello = fixtures::text(
            &jid,
            &format!("h{n}"),
            fixtures::minutes_ago(5),
            "hello from home",
        );
        stack.inject(hello).await?;
    }
    let work = work_account(
        &mut stack,
        &gw,
        &owner,
        &["Work Dana", "Work Eli", "Work Fay"],
    )
    .await?;
    let (dana, eli, fay) = (&work[0], &work[1], &work[2]);

    // The picker's list, one account at a time, by name.
    let found = owner.get(&gw, "/api/chats?account_id=work&q=eli").await?;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_eq!(found.json["total"], 1);
    assert_eq!(found.json["chats"][0]["id"], eli.as_str());
    assert_eq!(found.json["chats"][0]["name"], "Work Eli");
    let home = owner.get(&gw, "/api/chats?account_id=default").await?;
    assert_eq!(home.json["total"], 2, "{}", home.text);
    for (query, status, code) in [
        ("account_id=nowhere", 404, "account_not_found"),
        ("account_id=Not%20One", 400, "invalid_argument"),
    ] {
        let a = owner.get(&gw, &format!("/api/chats?{query}")).await?;
        assert_eq!(a.status, status, "{query}: {}", a.text);
        assert_eq!(a.json["error"]["code"], code, "{query}");
    }

    let (id, _) = owner
        .create(&gw, "two accounts", json!({"chats": {"mode": "all"}}))
        .await?;
    // What the editor sends for: default, only Ana; work, all but Eli, from a date on.
    let since = "2020-01-01T00:00:00Z";
    let scope = json!({
        "chats": {"mode": "all"},
        "accounts": {"mode": "only", "accounts": ["default", "work"]},
        "per_account": {
            "default": {"chats": {"mode": "selected", "chats": [ana]}},
            "work": {"chats": {"mode": "all_except", "chats": [eli]}, "since": since},
        },
    });
    let saved = owner
        .post(
            &gw,
            "/api/connections/read-scope",
            json!({"id": id, "revision": 0, "read_scope": scope}),
        )
        .await?;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.json["connection"]["read_scope"], scope);
    let token = saved.json["token"].as_str().unwrap_or_default();
    let mcp = gw.mcp(token).await?;
    assert_eq!(listed(&mcp, "default").await?, sorted(vec![&ana]));
    assert_eq!(listed(&mcp, "work").await?, sorted(vec![dana, fay]));
    assert_ne!(listed(&mcp, "default").await?, sorted(vec![&ana, &ben]));

    // The page: the editor's accounts, the scope, and the listed chats by name.
    let page = owner.get(&gw, &format!("/connections/{id}")).await?;
    assert_eq!(page.status, 200);
    for want in [
        r#"id="scope-accounts""#,
        r#"id="scope-rules""#,
        r#""name":"Work phone""#,
        r#""name":"Home Ana""#,
        r#""name":"Work Eli""#,
        "accounts default, work",
    ] {
        assert!(page.text.contains(want), "{want} not on the page");
    }
    assert!(
        !page.text.contains("scope-chats"),
        "the raw id textarea is gone"
    );

    // The worker still checks what the editor sends: a rule of an account it does not read.
    let wrong = json!({
        "chats": {"mode": "all"},
        "per_account": {"work": {"chats": {"mode": "all"}}},
    });
    let refused = owner
        .post(
            &gw,
            "/api/connections/read-scope",
            json!({"id": id, "revision": 1, "read_scope": wrong}),
        )
        .await?;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.json["error"]["code"], "invalid_argument");
    Ok(())
}
