//! Input wazap's mapping does not expect, from the network and from a phone: the worker keeps
//! running, keeps the session live, archives what it can (an unnamed message type as `unknown`,
//! never dropped) and the next message still lands.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wanet::Network;
use wazap_shared::wire::grants::ReadScope;
use whatsapp_rust::NodeBuilder;
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;

use super::{Linked, OWNER};

const HAL: &str = "15550000009";

#[tokio::test]
async fn odd_stanzas_and_unnamed_message_types_are_survived() -> anyhow::Result<()> {
    let net = Network::start().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let hal = net.phone(HAL, "Hal").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];
    let mcp = linked
        .gw
        .mcp(&linked.stack.token(ReadScope::all()).await?)
        .await?;

    // A top-level stanza nobody defined, and a group event for a group the archive never saw.
    net.inject(
        OWNER,
        device,
        NodeBuilder::new("wanet-odd")
            .attr("id", "odd-1")
            .attr("from", "s.whatsapp.net")
            .build(),
    );
    net.inject(
        OWNER,
        device,
        NodeBuilder::new("notification")
            .attr("id", "gp-1")
            .attr("from", "120363000000000001@g.us")
            .attr("type", "w:gp2")
            .attr("participant", format!("{HAL}@s.whatsapp.net"))
            .attr("t", "1796400000")
            .children([NodeBuilder::new("subject")
                .attr("subject", "A group nobody knew")
                .attr("s_o", format!("{HAL}@s.whatsapp.net"))
                .attr("s_t", "1796400000")
                .build()])
            .build(),
    );
    // A message whose only content is a kind wazap's contract has no name for.
    let odd = wa::Message {
        poll_result_snapshot_message: MessageField::some(Default::default()),
        ..Default::default()
    };
    hal.client()
        .send_message(whatsapp_rust::Jid::pn(OWNER), odd)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    hal.send_text(OWNER, "still there?").await?;

    let deadline = Instant::now() + Duration::from_secs(10);
    let messages: Vec<Value> = loop {
        let r = mcp
            .call("read_messages", json!({"chat_id": format!("+{HAL}")}))
            .await?;
        let m = if r.is_error {
            Vec::new()
        } else {
            r.ok()["messages"].as_array().cloned().unwrap_or_default()
        };
        if m.len() == 2 {
            break m;
        }
        anyhow::ensure!(Instant::now() < deadline, "got {m:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(messages[0]["type"], "unknown", "{messages:?}");
    assert_eq!(messages[1]["text"], "still there?");
    let a = linked.owner.get(&linked.gw, "/api/account").await?;
    assert_eq!(a.json["state"], "live");
    phone.stop().await;
    hal.stop().await;
    Ok(())
}
