//! Input wazap's mapping does not expect, from the network and from a phone: the worker keeps
//! running, keeps the session live, archives what it can (an unnamed message type as `unknown`,
//! never dropped; a photo whose media key is malformed, its file answered as not available; the
//! pages after a history page that inflates past the client's ceiling) and the next message still
//! lands.

use serde_json::json;
use whatsapp_rust::NodeBuilder;
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;

use super::{Linked, OWNER, count, read_until};

const HAL: &str = "15550000009";

#[tokio::test]
async fn odd_stanzas_and_unnamed_message_types_are_survived() -> anyhow::Result<()> {
    let net = super::start_network().await?;
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

#[tokio::test]
async fn a_malformed_media_key_and_an_oversize_history_page_are_survived() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let hal = net.phone(HAL, "Hal").await?;
    let linked = Linked::start(&net, &phone).await?;
    let mcp = linked.reader().await?;

    // A page that inflates past the client's 64 MiB ceiling, then an ordinary one.
    phone.push_oversize_history(65 << 20).await?;
    phone
        .push_history(&[wanet::HistoryChat {
            with: HAL.to_owned(),
            messages: vec![("H1".into(), false, 1_796_000_000, "from before".into())],
        }])
        .await?;

    // A photo whose media key is three bytes long (a real one is 32).
    let up = hal
        .client()
        .upload(
            vec![0xFF, 0xD8, 0xFF, 0xD9],
            whatsapp_rust::wacore::download::MediaType::Image,
            Default::default(),
        )
        .await?;
    let mut photo = whatsapp_rust::media::image_message(up, Default::default());
    if let Some(i) = photo.image_message.as_option_mut() {
        i.media_key = Some(vec![1, 2, 3]);
    }
    hal.client()
        .send_message(whatsapp_rust::Jid::pn(OWNER), photo)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    hal.send_text(OWNER, "did the photo come?").await?;

    let read = read_until(&mcp, json!({"chat_id": format!("+{HAL}")}), |r| {
        count(r) == 3
    })
    .await?;
    let messages = &read["messages"];
    assert_eq!(messages[0]["text"], "from before", "{messages:?}");
    assert_eq!(messages[1]["type"], "image", "{messages:?}");
    assert_eq!(messages[2]["text"], "did the photo come?");
    let attachment = messages[1]["attachment"]["attachment_id"]
        .as_str()
        .expect("attachment_id");
    let got = mcp
        .call("get_attachment", json!({"attachment_id": attachment}))
        .await?;
    assert!(got.is_error, "{}", got.text);
    assert!(got.text.contains("not_found"), "{}", got.text);
    let a = linked.owner.get(&linked.gw, "/api/account").await?;
    assert_eq!(a.json["state"], "live", "{}", a.text);
    phone.stop().await;
    hal.stop().await;
    Ok(())
}
