//! Two accounts on the WhatsApp test network (#27 item 6): the default one and `work`, each
//! linked from the dashboard by scanning its own QR code with its own phone; a contact writes to
//! both numbers and each message lands in its own account only; a send from each account reaches
//! the contact from that account's number; the dashboard lists both `live`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wazap_shared::wire::grants::SendMode;

use super::{Linked, OWNER, count, read_until};

const WORK: &str = "15550000009";
const BOB: &str = "15550000002";

/// The work account's page until `done` holds for it, at most `wait` (it may not be served yet:
/// the answer is then an error, and the poll goes on).
async fn work_until(
    linked: &Linked,
    wait: Duration,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + wait;
    loop {
        let a = linked
            .owner
            .get(&linked.gw, "/api/account?account_id=work")
            .await?;
        if a.status == 200 && done(&a.json) {
            return Ok(a.json);
        }
        anyhow::ensure!(Instant::now() < deadline, "work account stuck: {}", a.text);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn two_phones_each_linked_from_the_dashboard_keep_their_own_accounts() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let home = net.phone(OWNER, "Owner").await?;
    let work = net.phone(WORK, "Owner at work").await?;
    let bob = net.phone(BOB, "Bob").await?;
    let linked = Linked::start(&net, &home).await?;

    // The second account, on the real connector, linked by its own phone from the dashboard.
    let added = linked
        .owner
        .post(
            &linked.gw,
            "/api/accounts",
            json!({"account_id": "work", "display_name": "Work phone", "connector": "whatsapp"}),
        )
        .await?;
    assert_eq!(added.status, 200, "{}", added.text);
    work_until(&linked, Duration::from_secs(15), |a| {
        a["state"] == "unpaired"
    })
    .await?;
    let paired = linked
        .owner
        .post(
            &linked.gw,
            "/api/account",
            json!({"account_id": "work", "action": "pair_with_qr"}),
        )
        .await?;
    assert_eq!(paired.status, 200, "{}", paired.text);
    let a = work_until(&linked, Duration::from_secs(10), |a| a["qr"].is_string()).await?;
    work.scan(a["qr"].as_str().unwrap_or_default())?;
    work_until(&linked, Duration::from_secs(30), |a| a["state"] == "live").await?;
    let listed = linked.owner.get(&linked.gw, "/api/accounts").await?;
    let states: Vec<(&str, &str)> = (listed.json["accounts"].as_array())
        .map(|all| {
            all.iter()
                .map(|a| {
                    (
                        a["account_id"].as_str().unwrap_or(""),
                        a["state"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(states, [("default", "live"), ("work", "live")]);
    assert_eq!(
        net.companions(WORK).len(),
        1,
        "the work phone has one linked device"
    );
    assert_eq!(
        net.companions(OWNER).len(),
        1,
        "the home phone still has one"
    );

    // Bob writes to both numbers: each message is in its own account only.
    let (_, token) =
        crate::send::connection_with_token(&linked.stack, SendMode::All, vec![]).await?;
    let mcp = linked.gw.mcp(&token).await?;
    bob.send_text(OWNER, "for home").await?;
    bob.send_text(WORK, "for work").await?;
    let bob_chat = format!("+{BOB}");
    let at_home = read_until(&mcp, json!({"chat_id": bob_chat}), |r| count(r) == 1).await?;
    assert_eq!(at_home["messages"][0]["text"], "for home");
    assert_eq!(at_home["account_id"], "default");
    let at_work = read_until(
        &mcp,
        json!({"chat_id": bob_chat, "account_id": "work"}),
        |r| count(r) == 1,
    )
    .await?;
    assert_eq!(at_work["messages"][0]["text"], "for work");
    assert_eq!(at_work["account_id"], "work");
    let work_chat = at_work["chat_id"].as_str().expect("chat_id").to_owned();
    assert!(work_chat.ends_with("-work"), "{work_chat}");

    // A send from each account reaches Bob from that account's number.
    let home_chat = at_home["chat_id"].as_str().expect("chat_id").to_owned();
    for (chat, text, from) in [
        (&home_chat, "from home", OWNER),
        (&work_chat, "from work", WORK),
    ] {
        let sent = mcp
            .call(
                "send_message",
                json!({"chat_id": chat, "request_id": text.replace(' ', "-"), "text": text}),
            )
            .await?;
        assert_eq!(sent.ok()["state"], "accepted", "{:?}", sent.ok());
        let got = bob
            .wait_for(Duration::from_secs(10), |m| m.text.as_deref() == Some(text))
            .await?;
        assert_eq!(got.chat, format!("{from}@s.whatsapp.net"), "{text}");
    }
    for phone in [&home, &work, &bob] {
        phone.stop().await;
    }
    Ok(())
}
