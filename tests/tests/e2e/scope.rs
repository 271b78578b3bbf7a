//! Read scope, archive policy and `#private` hold on every read path.

use serde_json::json;
use wazap_shared::wire::grants::{ChatSelection, ReadScope};
use wazap_tests::Stack;
use wazap_tests::fixtures::{minutes_ago, person, photo, text};
use wazap_worker::config::ConnectorKind;

async fn two_chats(stack: &Stack) -> anyhow::Result<(String, String)> {
    stack
        .contact(&person("972502220001"), None, "Avi Cohen")
        .await?;
    stack
        .contact(&person("972502220002"), None, "Bella Levi")
        .await?;
    stack
        .inject(text(
            &person("972502220001"),
            "A1",
            minutes_ago(50),
            "shalom",
        ))
        .await?;
    stack
        .inject(text(
            &person("972502220002"),
            "B1",
            minutes_ago(40),
            "boker tov",
        ))
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let list = mcp.call("list_chats", json!({})).await?;
    let chats = list.ok()["chats"].as_array().unwrap().clone();
    let id_of = |name: &str| {
        chats.iter().find(|c| c["name"] == name).unwrap()["chat_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    Ok((id_of("Avi Cohen"), id_of("Bella Levi")))
}

#[tokio::test]
async fn out_of_scope_and_missing_chats_answer_the_same() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let (a, b) = two_chats(&stack).await?;
    let gw = stack.gateway(&[]).await?;
    let scope = ReadScope {
        chats: ChatSelection::Selected {
            chats: vec![a.clone()],
        },
        since: None,
        until: None,
        ..ReadScope::all()
    };
    let mcp = gw.mcp(&stack.token(scope).await?).await?;

    let outside = mcp.call("read_messages", json!({"chat_id": b})).await?;
    let missing = mcp
        .call(
            "read_messages",
            json!({"chat_id": "c_00000000000000000000"}),
        )
        .await?;
    let by_phone = mcp
        .call("read_messages", json!({"chat_id": "+972502220002"}))
        .await?;
    assert_eq!(outside.error_code().as_deref(), Some("chat_not_found"));
    assert_eq!(
        outside.text, missing.text,
        "no difference between outside the scope and absent"
    );
    assert_eq!(by_phone.text, missing.text);

    let listed = mcp.call("list_chats", json!({})).await?;
    let ids: Vec<&str> = listed.ok()["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chat_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.as_str()]);
    let contacts = mcp
        .call("search_contacts", json!({"query": "bella"}))
        .await?;
    assert!(
        contacts.ok()["contacts"].as_array().unwrap().is_empty(),
        "never the whole phonebook"
    );
    let ok = mcp.call("read_messages", json!({"chat_id": a})).await?;
    assert_eq!(ok.ok()["count"], 1);

    let except = ReadScope {
        chats: ChatSelection::AllExcept {
            chats: vec![a.clone()],
        },
        since: None,
        until: None,
        ..ReadScope::all()
    };
    let mcp2 = gw.mcp(&stack.token(except).await?).await?;
    let r = mcp2.call("read_messages", json!({"chat_id": a})).await?;
    assert_eq!(r.error_code().as_deref(), Some("chat_not_found"));
    assert_eq!(
        mcp2.call("read_messages", json!({"chat_id": b}))
            .await?
            .ok()["count"],
        1
    );
    Ok(())
}

#[tokio::test]
async fn since_and_until_bound_retrieval() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = person("972502220003");
    for (id, mins) in [("D1", 300), ("D2", 200), ("D3", 100)] {
        stack.inject(text(&chat, id, minutes_ago(mins), id)).await?;
    }
    let gw = stack.gateway(&[]).await?;
    let scope = ReadScope {
        chats: ChatSelection::All,
        since: Some(minutes_ago(250)),
        until: Some(minutes_ago(150)),
        ..ReadScope::all()
    };
    let mcp = gw.mcp(&stack.token(scope).await?).await?;
    let r = mcp
        .call("read_messages", json!({"chat_id": "+972502220003"}))
        .await?;
    let texts: Vec<&str> = r.ok()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["D2"]);
    Ok(())
}

#[tokio::test]
async fn private_messages_never_give_up_their_words() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = person("972502220004");
    stack
        .inject(text(
            &chat,
            "X1",
            minutes_ago(30),
            "the door code is ZEBRA4471 #private",
        ))
        .await?;
    stack
        .inject(photo(
            &chat,
            "X2",
            minutes_ago(20),
            "#Private scan of PASSPORT9913",
        ))
        .await?;
    stack
        .inject(text(&chat, "X3", minutes_ago(10), "see you #privateer"))
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let r = mcp
        .call(
            "read_messages",
            json!({"chat_id": "+972502220004", "include_previews": true}),
        )
        .await?;
    let msgs = r.ok()["messages"].as_array().unwrap().clone();
    assert_eq!(msgs[0]["private"], true);
    assert_eq!(msgs[0]["text"], "");
    assert_eq!(msgs[1]["private"], true);
    assert!(
        msgs[1]["attachment"].get("caption").is_none()
            && msgs[1]["attachment"].get("filename").is_none()
    );
    assert!(
        msgs[2].get("private").is_none(),
        "#privateer is not the tag"
    );
    assert_eq!(r.images.len(), 0, "no preview of a private photo");
    for out in [
        r.raw.to_string(),
        mcp.call("list_chats", json!({})).await?.raw.to_string(),
        mcp.call("search_contacts", json!({"query": "9725"}))
            .await?
            .raw
            .to_string(),
    ] {
        assert!(
            !out.contains("ZEBRA4471") && !out.contains("PASSPORT9913"),
            "{out}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn excluded_chats_are_neither_returned_nor_stored() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let (a, b) = two_chats(&stack).await?;
    stack
        .sql(&format!(
            "update archive_policy set excluded_chats = array['{b}'], revision = revision + 1"
        ))
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let listed = mcp.call("list_chats", json!({})).await?;
    let ids: Vec<&str> = listed.ok()["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chat_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.as_str()]);
    assert_eq!(
        mcp.call("read_messages", json!({"chat_id": b}))
            .await?
            .error_code()
            .as_deref(),
        Some("chat_not_found")
    );
    // A message arriving while excluded is never stored.
    let _ = stack
        .inject(text(
            &person("972502220002"),
            "B2",
            minutes_ago(1),
            "not kept",
        ))
        .await;
    stack
        .sql("update archive_policy set excluded_chats = '{}'")
        .await?;
    let r = mcp.call("read_messages", json!({"chat_id": b})).await?;
    assert_eq!(
        r.ok()["count"],
        1,
        "only the message from before the exclusion"
    );
    Ok(())
}

/// The worker answers reads while it re-checks the grant (it remembers each connection's last
/// viewer); a scope or policy change must still shape the very next answer of that connection.
#[tokio::test]
async fn a_scope_or_policy_change_shapes_the_very_next_read() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let (a, b) = two_chats(&stack).await?;
    let gw = stack.gateway(&[]).await?;
    let (conn, token) = stack
        .token_with(
            ReadScope::all(),
            wazap_shared::grant::ConnectionKind::Local,
            std::time::Duration::from_secs(600),
        )
        .await?;
    let mcp = gw.mcp(&token).await?;
    // Twice, so the second read runs with the remembered viewer.
    for _ in 0..2 {
        assert_eq!(
            mcp.call("read_messages", json!({"chat_id": b})).await?.ok()["count"],
            1
        );
    }
    stack
        .sql(&format!(
            "update archive_policy set excluded_chats = array['{b}'], revision = revision + 1"
        ))
        .await?;
    let r = mcp.call("read_messages", json!({"chat_id": b})).await?;
    assert_eq!(r.error_code().as_deref(), Some("chat_not_found"));
    stack
        .sql("update archive_policy set excluded_chats = '{}'")
        .await?;
    assert_eq!(
        mcp.call("read_messages", json!({"chat_id": a})).await?.ok()["count"],
        1
    );
    // The read scope narrowed in place (same credential revision): chat a is gone at once.
    let narrowed = serde_json::to_string(&ReadScope {
        chats: ChatSelection::Selected {
            chats: vec![b.clone()],
        },
        since: None,
        until: None,
        ..ReadScope::all()
    })?;
    stack
        .sql(&format!(
            "update connections set read_scope = '{narrowed}'::jsonb where connection_id = '{conn}'"
        ))
        .await?;
    let r = mcp.call("read_messages", json!({"chat_id": a})).await?;
    assert_eq!(r.error_code().as_deref(), Some("chat_not_found"));
    let listed = mcp.call("list_chats", json!({})).await?;
    let ids: Vec<&str> = listed.ok()["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chat_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [b.as_str()]);
    // Revoked: refused at once, even though the last viewer is remembered.
    stack
        .sql(&format!(
            "update connections set revoked_at = now() where connection_id = '{conn}'"
        ))
        .await?;
    let r = mcp.call("list_chats", json!({})).await?;
    assert_eq!(r.error_code().as_deref(), Some("unauthenticated"));
    Ok(())
}
