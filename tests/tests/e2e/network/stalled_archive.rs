//! While the archive cannot commit, the user is told and WhatsApp is told nothing: a contact's
//! message and a history page arrive while every insert into the archive waits behind a table
//! lock (reads still work, as they do when only writes fail). The account says `catching_up`,
//! `read_messages` and the dashboard carry the one note, and the worker's device has not
//! acknowledged the message. Once the lock goes, both are archived exactly once, the ack
//! reaches the server and the note is gone.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wanet::HistoryChat;
use wazap_worker::connector::whatsapp::stall::ARCHIVE_WAITING;

use super::{Linked, OWNER, account_until, count, read_until};

const CAROL: &str = "15550000003";
const DAVE: &str = "15550000004";

/// The notes of a `read_messages` result.
fn notes(read: &Value) -> Vec<&str> {
    read["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn while_the_archive_cannot_commit_the_user_is_told_and_nothing_is_acknowledged()
-> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let carol = net.phone(CAROL, "Carol").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = *net.companions(OWNER).first().expect("the worker's device");
    let mcp = linked.reader().await?;
    let chat = json!({"chat_id": format!("+{CAROL}")});

    carol.send_text(OWNER, "before").await?;
    let read = read_until(&mcp, chat.clone(), |r| count(r) == 1).await?;
    assert!(notes(&read).is_empty(), "a note before any fault: {read}");

    // Every insert into the archive waits from here.
    let mut holder = linked.stack.pool.get().await?;
    let lock = holder.transaction().await?;
    lock.batch_execute("lock table messages in share mode")
        .await?;
    let held = Instant::now();

    let id = carol.send_text(OWNER, "held").await?;
    phone
        .push_history(&[HistoryChat {
            with: DAVE.to_owned(),
            messages: vec![("HS1".into(), false, 1_796_000_000, "page held".into())],
        }])
        .await?;

    // The read tools say so, and why.
    let read = read_until(&mcp, chat.clone(), |r| notes(r).contains(&ARCHIVE_WAITING)).await?;
    println!("the note appeared {:?} after the lock", held.elapsed());
    assert_eq!(read["sync"], "catching_up", "{read}");
    assert_eq!(
        count(&read),
        1,
        "the held message is not in the archive yet"
    );
    // So does the dashboard, in the same words.
    let (account, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(5), |a| {
        a["notes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n == ARCHIVE_WAITING))
    })
    .await?;
    assert_eq!(account["state"], "catching_up");
    let page = linked.owner.get(&linked.gw, "/account").await?;
    assert!(
        page.text.contains(ARCHIVE_WAITING),
        "the account page does not say it"
    );
    // WhatsApp still holds the message for the worker's device.
    assert!(
        net.unacknowledged(OWNER, device).contains(&id),
        "the worker acknowledged a message it had not archived"
    );

    lock.rollback().await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while net.unacknowledged(OWNER, device).contains(&id) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "no ack after the archive committed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let read = read_until(&mcp, chat, |r| count(r) == 2 && notes(r).is_empty()).await?;
    assert_eq!(read["messages"][1]["text"], "held");
    assert_eq!(read["sync"], "live");
    let history = read_until(&mcp, json!({"chat_id": format!("+{DAVE}")}), |r| {
        count(r) == 1
    })
    .await?;
    assert_eq!(history["messages"][0]["text"], "page held");
    let (account, _) = account_until(&linked.owner, &linked.gw, Duration::from_secs(5), |a| {
        a["notes"].is_null()
    })
    .await?;
    assert_eq!(account["state"], "live");

    let db = linked.stack.pool.get().await?;
    let row = db
        .query_one(
            "select count(*) filter (where text = 'held'), count(*) filter (where wa_id = 'HS1') \
             from messages",
            &[],
        )
        .await?;
    let (live, page): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!((live, page), (1, 1), "each archived exactly once");
    phone.stop().await;
    carol.stop().await;
    Ok(())
}
