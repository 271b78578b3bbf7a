//! Input wazap's mapping does not expect, from the network and from a phone: the worker keeps
//! running, keeps the session live, archives what it can (an unnamed message type as `unknown`,
//! never dropped) and the next message still lands.

use serde_json::json;
use wanet::Network;
use whatsapp_rust::NodeBuilder;
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;

use super::{Linked, OWNER, count, read_until};

const HAL: &str = "15550000009";

#[tokio::test]
async fn odd_stanzas_and_unnamed_message_types_are_survived() -> anyhow::Result<()> {
    let net = Network::start().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let hal = net.phone(HAL, "Hal").await?;
    let linked = Linked::start(&net, &phone).await?;
    let device = net.companions(OWNER)[0];
    let mcp = linked.reader().await?;

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

    let read = read_until(&mcp, json!({"chat_id": format!("+{HAL}")}), |r| {
        count(r) == 2
    })
    .await?;
    let messages = &read["messages"];
    assert_eq!(messages[0]["type"], "unknown", "{messages:?}");
    assert_eq!(messages[1]["text"], "still there?");
    let a = linked.owner.get(&linked.gw, "/api/account").await?;
    assert_eq!(a.json["state"], "live");
    phone.stop().await;
    hal.stop().await;
    Ok(())
}
