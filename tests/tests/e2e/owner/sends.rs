//! The owner's sends page and `GET /api/sends`: an agent's sends and its refused attempts
//! (`send_not_permitted`; a chat outside its read scope, which the agent is told does not
//! exist), per connection and chat, by chat name with the reason and the time, never with what
//! was to be sent; and the refusals kept are bounded.

use serde_json::json;
use wazap_shared::ErrorCode;
use wazap_tests::Stack;
use wazap_worker::config::ConnectorKind;
use wazap_worker::owner::sends::{MAX_REFUSALS, Refusal, record_refusal};

use super::{Owner, chat};

/// The texts the agent tries to send: none may reach the owner.
const BODIES: [&str; 4] = [
    "allowed text for the friend",
    "forbidden text for the boss",
    "text for a chat it cannot read",
    "text for a chat nobody has",
];

#[tokio::test]
async fn refused_sends_show_by_chat_name_with_their_reason_and_no_body() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let friend = chat(&stack, 1, "Friendly Fiona").await?;
    let boss = chat(&stack, 2, "Boss Bruno").await?;
    let hidden = chat(&stack, 3, "Hidden Hana").await?;
    let scope = json!({"chats": {"mode": "selected", "chats": [friend, boss]}});
    let (id, token) = owner.create(&gw, "eager agent", scope).await?;
    let (other, _) = owner
        .create(&gw, "quiet agent", json!({"chats": {"mode": "all"}}))
        .await?;
    let allow = owner
        .post(
            &gw,
            "/api/connections/send-permission",
            json!({"id": id, "revision": 0, "mode": "selected", "chats": [friend], "expected_send_revision": 0}),
        )
        .await?;
    assert_eq!(allow.status, 200, "{}", allow.text);

    let mcp = gw.mcp(&token).await?;
    let made_up = "c_00000000000000000000";
    let mut codes = Vec::new();
    for (i, (to, body)) in [&friend, &boss, &hidden, &made_up.to_owned()]
        .into_iter()
        .zip(BODIES)
        .enumerate()
    {
        let out = mcp
            .call(
                "send_message",
                json!({"chat_id": to, "request_id": format!("try-{i}"), "text": body}),
            )
            .await?;
        codes.push(out.error_code().unwrap_or_else(|| "ok".into()));
    }
    assert_eq!(
        codes,
        [
            "ok",
            "send_not_permitted",
            "chat_not_found",
            "chat_not_found"
        ]
    );

    let all = owner.get(&gw, "/api/sends").await?;
    assert_eq!(all.status, 200, "{}", all.text);
    let sends = all.json["sends"].as_array().cloned().unwrap_or_default();
    assert_eq!(sends.len(), 1, "{}", all.text);
    assert_eq!(sends[0]["chat_name"], "Friendly Fiona");
    let refused = all.json["refused"].as_array().cloned().unwrap_or_default();
    // Newest first; the made-up chat names nothing and is not recorded.
    let seen: Vec<(&str, &str, &str, &str)> = refused
        .iter()
        .map(|r| {
            (
                r["connection_name"].as_str().unwrap_or_default(),
                r["chat_name"].as_str().unwrap_or_default(),
                r["reason"].as_str().unwrap_or_default(),
                r["tool"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "eager agent",
                "Hidden Hana",
                "chat_out_of_scope",
                "send_message"
            ),
            (
                "eager agent",
                "Boss Bruno",
                "send_not_permitted",
                "send_message"
            ),
        ]
    );
    assert_eq!(refused[1]["chat_id"], boss.as_str());
    assert_eq!(refused[1]["connection_id"], id.as_str());
    assert!(
        refused[0]["at"]
            .as_str()
            .is_some_and(|t| t.starts_with("20"))
    );

    // Per connection and per chat.
    let quiet = owner
        .get(&gw, &format!("/api/sends?connection_id={other}"))
        .await?;
    assert_eq!(quiet.json, json!({"sends": [], "refused": []}));
    let at_boss = owner
        .get(&gw, &format!("/api/sends?chat_id={boss}"))
        .await?;
    assert_eq!(at_boss.json["sends"], json!([]));
    assert_eq!(at_boss.json["refused"].as_array().map(Vec::len), Some(1));
    assert_eq!(at_boss.json["refused"][0]["reason"], "send_not_permitted");

    // The page names them and what the refusal means; no body anywhere.
    let page = owner.get(&gw, "/sends").await?;
    assert_eq!(page.status, 200);
    for want in [
        "Boss Bruno",
        "Hidden Hana",
        "Friendly Fiona",
        "not allowed to send to this chat",
        "chat outside what it may read",
        "<code>send_not_permitted</code>",
        &format!("/sends?connection_id={id}"),
    ] {
        assert!(page.text.contains(want), "{want} not on the page");
    }
    let one = owner.get(&gw, &format!("/sends?chat_id={boss}")).await?;
    assert!(one.text.contains("Boss Bruno") && !one.text.contains("Hidden Hana"));
    for body in BODIES {
        for text in [&all.text, &page.text] {
            assert!(!text.contains(body), "a body reached the owner");
        }
    }
    let stored = stack
        .pool
        .get()
        .await?
        .query_one("select count(*) from send_refusals", &[])
        .await?
        .get::<_, i64>(0);
    assert_eq!(stored, 2);
    Ok(())
}

/// Each recorded refusal deletes those past the newest [`MAX_REFUSALS`]: a loop of refused
/// sends cannot grow the table.
#[tokio::test]
async fn refusals_kept_are_bounded() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let db = stack.pool.get().await?;
    let chat = "c_0123456789abcdef0123";
    let refusal = Refusal {
        connection_id: "conn_loop",
        account_id: "default",
        chat_id: chat,
        tool: Some("send_message"),
        code: ErrorCode::SendNotPermitted,
    };
    let over = 5;
    for _ in 0..MAX_REFUSALS + over {
        record_refusal(&db, refusal).await;
    }
    // Refusals not about the chat are not recorded.
    let session = Refusal {
        code: ErrorCode::SessionCannotSend,
        ..refusal
    };
    record_refusal(&db, session).await;
    let row = db
        .query_one("select count(*), min(id), max(id) from send_refusals", &[])
        .await?;
    assert_eq!(row.get::<_, i64>(0), MAX_REFUSALS);
    assert_eq!(
        row.get::<_, i64>(2) - row.get::<_, i64>(1) + 1,
        MAX_REFUSALS,
        "the newest are kept"
    );
    assert_eq!(row.get::<_, i64>(2), MAX_REFUSALS + over);
    Ok(())
}
