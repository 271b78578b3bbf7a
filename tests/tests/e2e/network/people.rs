//! People: a contact whose messages arrive first by phone number (with his LID beside it) and
//! then by LID (as WhatsApp moves chats to LID addressing) is one person and one chat.

use serde_json::json;

use super::{Linked, OWNER, count, read_until};

const BOB: &str = "15550000002";

#[tokio::test]
async fn a_contact_by_phone_number_and_by_lid_is_one_chat() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let bob = net.phone(BOB, "Bob").await?;
    let linked = Linked::start(&net, &phone).await?;
    let mcp = linked.reader().await?;

    bob.send_text(OWNER, "by number").await?;
    read_until(&mcp, json!({"chat_id": format!("+{BOB}")}), |r| {
        count(r) == 1
    })
    .await?;
    net.address_by_lid(BOB);
    bob.send_text(OWNER, "by lid").await?;

    // The first message named Bob's LID beside his number (`sender_lid`), so the device finds
    // his session when he writes by LID.
    let read = read_until(&mcp, json!({"chat_id": format!("+{BOB}")}), |r| {
        count(r) == 2 && r["messages"][1]["text"] == "by lid"
    })
    .await?;
    assert_eq!(read["messages"][0]["text"], "by number", "{read}");
    assert_eq!(read["messages"][1]["text"], "by lid", "{read}");
    assert_eq!(
        read["messages"][0]["sender"], read["messages"][1]["sender"],
        "one sender"
    );
    let chats = mcp
        .call("list_chats", json!({"kind": "direct"}))
        .await?
        .ok()
        .clone();
    let all = chats["chats"].as_array().expect("chats");
    assert_eq!(all.len(), 1, "one chat for Bob: {chats}");
    assert_eq!(all[0]["chat_id"], read["chat_id"]);
    phone.stop().await;
    bob.stop().await;
    Ok(())
}
