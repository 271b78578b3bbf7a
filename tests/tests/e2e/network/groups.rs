//! Groups end to end: a contact's phone creates a group with the account, members write in it
//! (sender keys fanned out by the server) and are found by `search_messages`, an @mention and a
//! reply to the account's own message come back through `wait_for_messages` with `addressed_to_me`, member and subject changes
//! become `system` messages, and `send_message` to the group reaches every member's phone.

use std::time::Duration;

use serde_json::{Value, json};
use wazap_shared::wire::grants::SendMode;

use super::{Linked, OWNER, read_until};

const BOB: &str = "15550000002";
const CAROL: &str = "15550000003";
const DAVE: &str = "15550000004";

/// The texts of a `read_messages` or `wait_for_messages` result, oldest first.
fn texts(r: &Value) -> Vec<String> {
    r["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_group_lives_through_the_worker_messages_mentions_replies_changes_and_a_send()
-> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let bob = net.phone(BOB, "Bob").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let dave = net.phone(DAVE, "Dave").await?;
    let linked = Linked::start(&net, &phone).await?;
    let (_, token) =
        crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
    let mcp = linked.gw.mcp(&token).await?;
    let start = mcp
        .call("wait_for_messages", json!({"timeout_seconds": 1}))
        .await?;
    let cursor = start.ok()["cursor"].as_str().expect("cursor").to_owned();

    let group = bob.create_group("Trip", &[OWNER, CAROL]).await?;
    bob.send_text(&group, "hello group").await?;
    carol
        .send_mention(&group, "@owner can you book?", &[OWNER])
        .await?;
    let own_id = phone.send_text(&group, "I booked it").await?;
    bob.wait_for(Duration::from_secs(10), |m| m.id == own_id)
        .await?;
    bob.send_reply(&group, "thanks!", &own_id, OWNER, "I booked it")
        .await?;

    // The group is a chat with its name, and every message is in it, in order.
    let chats = mcp
        .call("list_chats", json!({"kind": "group"}))
        .await?
        .ok()
        .clone();
    let chat = &chats["chats"][0];
    assert_eq!(chat["name"], "Trip", "{chats}");
    let chat_id = chat["chat_id"].as_str().expect("chat_id").to_owned();
    let read = read_until(&mcp, json!({"chat_id": chat_id}), |r| {
        texts(r).iter().any(|t| t == "thanks!")
    })
    .await?;
    let said: Vec<String> = texts(&read)
        .into_iter()
        .filter(|t| !t.contains("created"))
        .collect();
    assert_eq!(
        said,
        [
            "hello group",
            "@owner can you book?",
            "I booked it",
            "thanks!"
        ],
        "{read}"
    );
    let msgs = read["messages"].as_array().expect("messages");
    let created = &msgs[0];
    assert_eq!(created["type"], "system", "{read}");
    assert_eq!(created["text"], "Bob created the group", "{read}");
    let by = |t: &str| msgs.iter().find(|m| m["text"] == t).expect(t);
    assert_eq!(by("hello group")["sender"]["name"], "Bob");
    assert_eq!(by("@owner can you book?")["mentions_me"], true);
    assert_eq!(by("I booked it")["from_me"], true);
    assert_eq!(
        by("thanks!")["reply_to"],
        by("I booked it")["message_id"],
        "the reply names the account's own message"
    );

    // Search finds the group's words, in the group.
    let found = mcp
        .call("search_messages", json!({"query": "book"}))
        .await?
        .ok()
        .clone();
    assert_eq!(found["count"], 1, "{found}");
    let hit = &found["messages"][0];
    assert_eq!(hit["snippet"], "@owner can you **book**?", "{found}");
    assert_eq!(hit["chat_id"], chat_id.as_str());
    assert_eq!(hit["chat_name"], "Trip");

    // What is addressed to the account: the mention and the reply, not the chatter.
    let addressed = mcp
        .call(
            "wait_for_messages",
            json!({"cursor": cursor, "addressed_to_me": true, "timeout_seconds": 5}),
        )
        .await?
        .ok()
        .clone();
    assert_eq!(
        texts(&addressed),
        ["@owner can you book?", "thanks!"],
        "{addressed}"
    );

    // Member and subject changes become system messages (people by name: Dave has written to
    // the account before); the chat takes the new name.
    dave.send_text(OWNER, "hi, it's Dave").await?;
    read_until(&mcp, json!({"chat_id": format!("+{DAVE}")}), |r| {
        !texts(r).is_empty()
    })
    .await?;
    bob.add_to_group(&group, &[DAVE]).await?;
    bob.remove_from_group(&group, &[CAROL]).await?;
    bob.set_subject(&group, "Trip 2027").await?;
    // The library handles each notification in a task of its own: they may be archived in any
    // order, so the test waits for all of them and compares them as a set.
    let system = |r: &serde_json::Value| -> Vec<String> {
        let mut system: Vec<String> = r["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["type"] == "system")
            .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
            .collect();
        system.sort();
        system
    };
    let read = read_until(&mcp, json!({"chat_id": chat_id}), |r| system(r).len() >= 4).await?;
    assert_eq!(
        system(&read),
        [
            "Bob added Dave",
            "Bob changed the group name to “Trip 2027”",
            "Bob created the group",
            "Bob removed Carol",
        ],
        "{read}"
    );
    let chats = mcp
        .call("list_chats", json!({"kind": "group"}))
        .await?
        .ok()
        .clone();
    assert_eq!(chats["chats"][0]["name"], "Trip 2027", "{chats}");

    // A send to the group reaches the members now in it, under one id.
    let sent = mcp
        .call(
            "send_message",
            json!({"chat_id": chat_id, "request_id": "group-1", "text": "see you all"}),
        )
        .await?;
    assert_eq!(sent.ok()["state"], "accepted", "{:?}", sent.ok());
    let wait = Duration::from_secs(10);
    let at_bob = bob
        .wait_for(wait, |m| m.text.as_deref() == Some("see you all"))
        .await?;
    let at_dave = dave
        .wait_for(wait, |m| m.text.as_deref() == Some("see you all"))
        .await?;
    assert_eq!(at_bob.chat, group);
    assert_eq!(at_bob.sender, format!("{OWNER}@s.whatsapp.net"));
    assert_eq!(at_bob.id, at_dave.id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !carol
            .received()
            .iter()
            .any(|m| m.text.as_deref() == Some("see you all")),
        "a removed member gets nothing"
    );
    for p in [&phone, &bob, &carol, &dave] {
        p.stop().await;
    }
    Ok(())
}
