//! Reading through `/mcp` what the sim delivered: paging, types, phone numbers, one chat per
//! person, stories, history pages, previews and the session state.

use chrono::Duration;
use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::ReadScope;
use wazap_shared::wire::sim::{HistoryPage, InjectStory, SetState, UpsertGroup};
use wazap_tests::fixtures::{group, group_text, minutes_ago, person, photo, text};
use wazap_tests::{Mcp, Stack};
use wazap_worker::config::ConnectorKind;

async fn sim_stack() -> anyhow::Result<(Stack, wazap_tests::Gateway, Mcp)> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    Ok((stack, gw, mcp))
}

fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn before_paging_has_no_gaps_no_overlap_oldest_first() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let chat = person("972501110001");
    let mut injected = Vec::new();
    for i in 0..130 {
        let ts = minutes_ago(1000 - i);
        injected.push(
            stack
                .inject(text(
                    &chat,
                    &format!("P{i:04}"),
                    ts,
                    &format!("message {i}"),
                ))
                .await?,
        );
    }
    let first = mcp
        .call(
            "read_messages",
            json!({"chat_id": "+972501110001", "limit": 50}),
        )
        .await?;
    let chat_id = first.ok()["chat_id"].as_str().expect("chat_id").to_owned();
    assert!(
        chat_id.starts_with("c_"),
        "phone number resolves to the opaque chat id"
    );
    let mut pages = vec![ids(first.ok())];
    loop {
        let oldest = pages
            .last()
            .unwrap()
            .first()
            .cloned()
            .expect("non-empty page");
        let page = mcp
            .call(
                "read_messages",
                json!({"chat_id": chat_id, "limit": 50, "before": oldest}),
            )
            .await?;
        let got = ids(page.ok());
        if got.is_empty() {
            break;
        }
        pages.push(got);
    }
    let all: Vec<String> = pages.into_iter().rev().flatten().collect();
    assert_eq!(all, injected, "every message once, oldest to newest");
    Ok(())
}

#[tokio::test]
async fn types_filter_counts_matching_messages() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let chat = person("972501110002");
    let mut photos = Vec::new();
    for i in 0..20 {
        let ts = minutes_ago(100 - i);
        if i % 4 == 0 {
            photos.push(stack.inject(photo(&chat, &format!("T{i}"), ts, "")).await?);
        } else {
            stack
                .inject(text(&chat, &format!("T{i}"), ts, "words"))
                .await?;
        }
    }
    let r = mcp
        .call("read_messages", json!({"chat_id": "+972501110002", "types": ["image"], "limit": 3, "include_previews": true}))
        .await?;
    let v = r.ok();
    assert_eq!(v["count"], 3);
    assert_eq!(
        ids(v),
        photos[2..].to_vec(),
        "the latest three photos, oldest first"
    );
    assert_eq!(v["types"], json!(["image"]), "types echoed");
    assert_eq!(v["preview_count"], 3);
    assert_eq!(r.images.len(), 3);
    Ok(())
}

#[tokio::test]
async fn lid_and_phone_forms_are_one_chat() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let phone = person("5511987650001");
    let lid = "88001122334455@lid";
    stack.contact(&phone, Some(lid), "Joana Silva").await?;
    stack
        .inject(text(&phone, "L1", minutes_ago(10), "oi, tudo bem?"))
        .await?;
    stack
        .inject(text(lid, "L2", minutes_ago(9), "chegando em 5 minutos"))
        .await?;
    let chats = mcp.call("list_chats", json!({})).await?;
    let listed = chats.ok()["chats"].as_array().expect("chats").clone();
    assert_eq!(listed.len(), 1, "one person, one chat: {listed:?}");
    assert_eq!(listed[0]["name"], "Joana Silva");
    let r = mcp
        .call("read_messages", json!({"chat_id": listed[0]["chat_id"]}))
        .await?;
    assert_eq!(r.ok()["count"], 2);
    let c = mcp
        .call("search_contacts", json!({"query": "joana"}))
        .await?;
    assert_eq!(c.ok()["contacts"][0]["chat_id"], listed[0]["chat_id"]);
    assert_eq!(c.ok()["contacts"][0]["phone"], "+5511987650001");
    Ok(())
}

#[tokio::test]
async fn groups_and_contacts_are_searchable() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let g = group(7);
    let members = vec![
        person("15550100001"),
        person("15550100002"),
        person("15550100003"),
    ];
    stack
        .sim(
            sim_op::UPSERT_GROUP,
            &UpsertGroup {
                jid: g.clone(),
                name: "Futebol de Quinta".into(),
                participants: members.clone(),
            },
        )
        .await?;
    stack
        .inject(group_text(
            &g,
            &members[0],
            "G1",
            minutes_ago(5),
            "quem vem hoje?",
        ))
        .await?;
    let found = mcp
        .call("search_groups", json!({"query": "futebol"}))
        .await?;
    let groups = found.ok()["groups"].as_array().expect("groups").clone();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["participant_count"], 3);
    let none = mcp
        .call("search_groups", json!({"query": "xadrez"}))
        .await?;
    assert!(none.ok()["groups"].as_array().expect("groups").is_empty());
    let empty = mcp.call("search_groups", json!({"query": ""})).await?;
    assert_eq!(empty.error_code().as_deref(), Some("invalid_argument"));
    let r = mcp
        .call("read_messages", json!({"chat_id": groups[0]["chat_id"]}))
        .await?;
    let m = &r.ok()["messages"][0];
    assert_eq!(m["from_me"], false);
    assert!(
        m["sender"]["chat_id"]
            .as_str()
            .is_some_and(|c| c.starts_with("c_")),
        "{m}"
    );
    Ok(())
}

#[tokio::test]
async fn status_stories_newest_first_within_hours() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let poster = person("972501110003");
    for (id, hours_ago) in [("S1", 30), ("S2", 20), ("S3", 5), ("S4", 1)] {
        let story = InjectStory {
            sender: poster.clone(),
            push_name: Some("Noa".into()),
            id: id.into(),
            timestamp: chrono::Utc::now() - Duration::hours(hours_ago),
            kind: MessageType::Text,
            text: format!("story {id}"),
            attachment: None,
        };
        stack.sim(sim_op::INJECT_STORY, &story).await?;
    }
    let day = mcp
        .call("read_messages", json!({"chat_id": "status"}))
        .await?;
    let texts: Vec<&str> = day.ok()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["story S4", "story S3", "story S2"],
        "last 24 h, newest first"
    );
    let six = mcp
        .call(
            "read_messages",
            json!({"chat_id": "status", "hours": 6, "limit": 1}),
        )
        .await?;
    let v = six.ok();
    assert_eq!(v["count"], 1);
    assert_eq!(v["messages"][0]["text"], "story S4");
    assert_eq!(v["omitted"], 1, "S3 left out by limit");
    assert_eq!(v["hours"], 6, "hours echoed");
    let bad = mcp
        .call("read_messages", json!({"chat_id": "status", "hours": 25}))
        .await?;
    assert_eq!(bad.error_code().as_deref(), Some("invalid_argument"));
    // Stories show nowhere else.
    let chats = mcp.call("list_chats", json!({})).await?;
    assert!(chats.ok()["chats"].as_array().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn before_past_the_archive_asks_the_phone_for_history() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    let chat = person("972501110004");
    let newest = stack
        .inject(text(&chat, "H10", minutes_ago(10), "latest"))
        .await?;
    let older: Vec<_> = (0..5)
        .map(|i| text(&chat, &format!("H0{i}"), minutes_ago(600 - i), "older"))
        .collect();
    stack
        .sim(
            sim_op::HISTORY_PAGE,
            &HistoryPage {
                chat: chat.clone(),
                messages: older,
            },
        )
        .await?;
    let r = mcp
        .call(
            "read_messages",
            json!({"chat_id": "+972501110004", "before": newest, "limit": 50}),
        )
        .await?;
    let v = r.ok();
    assert_eq!(v["older"], json!({"asked_phone": true, "received": 5}));
    assert_eq!(v["count"], 5);
    assert_eq!(v["messages"][0]["text"], "older");
    Ok(())
}

#[tokio::test]
async fn sync_state_and_notes_follow_the_session() -> anyhow::Result<()> {
    let (stack, _gw, mcp) = sim_stack().await?;
    stack
        .inject(text(&person("972501110005"), "N1", minutes_ago(3), "hi"))
        .await?;
    let live = mcp
        .call("read_messages", json!({"chat_id": "+972501110005"}))
        .await?;
    assert_eq!(live.ok()["sync"], "live");
    assert!(
        live.ok()
            .get("notes")
            .is_none_or(|n| n.as_array().is_some_and(|a| a.is_empty()))
    );
    stack
        .sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::Offline,
            },
        )
        .await?;
    let off = mcp
        .call("read_messages", json!({"chat_id": "+972501110005"}))
        .await?;
    assert_eq!(off.ok()["sync"], "offline");
    assert!(
        !off.ok()["notes"].as_array().expect("notes").is_empty(),
        "offline is explained"
    );
    Ok(())
}
