//! History the phone pushes after linking lands through the batch path, the account says
//! `catching_up` until the last page, and it reads through `/mcp` like live messages, with their
//! own ids, order and direction.

use serde_json::json;
use wanet::{HistoryChat, OnDemand};

use std::time::Duration;

use super::{Linked, OWNER, account_until, count, read_until};

#[tokio::test]
async fn the_phones_history_push_reads_through_mcp() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let linked = Linked::start(&net, &phone).await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let day = 86_400;
    // Two pages: after the first the account is catching up, after the last it is live.
    phone
        .push_history_page(
            &[HistoryChat {
                with: "15550000006".into(),
                messages: vec![
                    ("H1".into(), false, now - 3 * day, "old question".into()),
                    ("H2".into(), true, now - 3 * day + 60, "old answer".into()),
                    ("H3".into(), false, now - 2 * day, "thanks".into()),
                ],
            }],
            1,
            40,
        )
        .await?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "catching_up"
    })
    .await?;
    phone
        .push_history_page(
            &[HistoryChat {
                with: "15550000007".into(),
                messages: vec![("H4".into(), false, now - 5 * day, "from long ago".into())],
            }],
            2,
            100,
        )
        .await?;
    account_until(&linked.owner, &linked.gw, Duration::from_secs(10), |a| {
        a["state"] == "live"
    })
    .await?;

    let mcp = linked.reader().await?;
    let read = read_until(&mcp, json!({"chat_id": "+15550000006"}), |r| count(r) == 3).await?;
    let none = Vec::new();
    let texts: Vec<(&str, bool)> = read["messages"]
        .as_array()
        .unwrap_or(&none)
        .iter()
        .map(|m| {
            (
                m["text"].as_str().unwrap_or_default(),
                m["from_me"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    // The page reads oldest first, as a chat does.
    assert_eq!(
        texts,
        [
            ("old question", false),
            ("old answer", true),
            ("thanks", false)
        ]
    );
    // `live` comes with the last page; its archive work may still be under way.
    let other = read_until(&mcp, json!({"chat_id": "+15550000007"}), |r| count(r) == 1).await?;
    assert_eq!(other["messages"][0]["text"], "from long ago");
    phone.stop().await;
    Ok(())
}

#[tokio::test]
async fn reading_past_the_archive_asks_the_phone_and_says_what_came() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let linked = Linked::start(&net, &phone).await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let day = 86_400;
    let frank = "15550000008";
    phone
        .push_history(&[HistoryChat {
            with: frank.into(),
            messages: vec![
                ("F3".into(), false, now - 2 * day, "recent".into()),
                ("F4".into(), true, now - day, "more recent".into()),
            ],
        }])
        .await?;
    phone.hold_older(
        OnDemand::Answer,
        vec![HistoryChat {
            with: frank.into(),
            messages: vec![
                ("F1".into(), false, now - 5 * day, "the oldest".into()),
                ("F2".into(), false, now - 4 * day, "older".into()),
            ],
        }],
    );
    let mcp = linked.reader().await?;
    let chat = format!("+{frank}");
    let read = read_until(&mcp, json!({"chat_id": chat}), |r| count(r) == 2).await?;
    let oldest = read["messages"][0]["message_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let past = mcp
        .call("read_messages", json!({"chat_id": chat, "before": oldest}))
        .await?;
    let past = past.ok();
    assert_eq!(past["older"]["asked_phone"], true, "{past}");
    assert_eq!(past["older"]["received"], 2, "{past}");
    assert_eq!(phone.answered(), 1);
    let all = mcp.call("read_messages", json!({"chat_id": chat})).await?;
    let texts: Vec<String> = all.ok()["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|x| x["text"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(texts, ["the oldest", "older", "recent", "more recent"]);

    let first = all.ok()["messages"][0]["message_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // A phone that answers with nothing older: asked, nothing received, the archive unchanged.
    phone.hold_older(OnDemand::Answer, vec![]);
    let empty = mcp
        .call("read_messages", json!({"chat_id": chat, "before": first}))
        .await?;
    let empty = empty.ok();
    assert_eq!(empty["older"]["asked_phone"], true, "{empty}");
    assert_eq!(empty["older"]["received"], 0, "{empty}");
    assert_eq!(count(empty), 0, "{empty}");
    assert_eq!(phone.answered(), 2, "the phone answered the second request");

    // A phone that ignores the request: the read still answers, bounded, and says so.
    phone.hold_older(OnDemand::Ignore, vec![]);
    let ignored = mcp
        .call("read_messages", json!({"chat_id": chat, "before": first}))
        .await?;
    assert_eq!(ignored.ok()["older"]["asked_phone"], true);
    assert_eq!(ignored.ok()["older"]["received"], 0);
    assert_eq!(phone.answered(), 2, "an ignored request is not answered");
    phone.stop().await;
    Ok(())
}
