//! Linking a companion by QR: the server offers QR refs to an unpaired socket; when a simulated
//! phone scans the payload, the server signs the companion in as the phone's account (the
//! `<pair-success>` whose HMAC key, the companion's ADV secret, only the QR carries), records the
//! device identity the companion countersigns, and makes it reconnect (stream error 515).

use std::sync::Arc;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use whatsapp_rust::NodeBuilder;
use whatsapp_rust::wacore::libsignal::protocol::KeyPair;
use whatsapp_rust::wacore_binary::Node;
use whatsapp_rust::waproto::buffa::Message as _;
use whatsapp_rust::waproto::whatsapp as wa;

use super::Server;
use super::socket::Out;
use super::state::{Addr, Device};
use crate::node::{SERVER, attr, child, now, result};

/// QR refs offered per unpaired socket (a client gives up after its last one).
const REFS: usize = 6;

/// An unpaired socket: QR refs, then the pairing answer, then a forced reconnect.
pub(crate) async fn unpaired(
    server: Arc<Server>,
    out: UnboundedSender<Out>,
    mut rx: UnboundedReceiver<Node>,
) {
    let (id, refs) = {
        let mut st = server.state();
        let refs: Vec<String> = (0..REFS).map(|_| format!("2@{}", st.id())).collect();
        for r in &refs {
            st.unpaired.insert(r.clone(), out.clone());
        }
        (st.id(), refs)
    };
    let offer = NodeBuilder::new("iq")
        .attr("from", SERVER)
        .attr("type", "set")
        .attr("id", id)
        .attr("xmlns", "md")
        .children([NodeBuilder::new("pair-device")
            .children(
                refs.iter()
                    .map(|r| NodeBuilder::new("ref").bytes(r.as_bytes().to_vec()).build()),
            )
            .build()])
        .build();
    let _ = out.send(Out::Node(offer));
    while let Some(node) = rx.recv().await {
        if node.tag != "iq" {
            continue;
        }
        match attr(&node, "type").as_deref() {
            Some("get" | "set") => {
                let _ = out.send(Out::Node(result(&node, vec![])));
            }
            Some("result") if countersigned(&server, &node) => {
                let _ = out.send(Out::Node(
                    NodeBuilder::new("stream:error").attr("code", "515").build(),
                ));
                let _ = out.send(Out::Drop);
            }
            _ => {}
        }
    }
    let mut st = server.state();
    for r in &refs {
        st.unpaired.remove(r);
    }
}

/// The companion's answer to `<pair-success>`: keep its countersigned identity.
fn countersigned(server: &Server, node: &Node) -> bool {
    let Some(id) = attr(node, "id") else {
        return false;
    };
    let mut st = server.state();
    let Some(addr) = st.pairing.remove(&id) else {
        return false;
    };
    let blob = child(node, "pair-device-sign")
        .and_then(|s| child(s, "device-identity"))
        .and_then(crate::node::bytes)
        .map(<[u8]>::to_vec);
    if let Some(d) = st
        .accounts
        .get_mut(&addr.user)
        .and_then(|a| a.devices.get_mut(&addr.device))
    {
        d.identity_blob = blob;
    }
    // The account's other devices learn of the new one (they encrypt to it from now on).
    let Some(account) = st.accounts.get(&addr.user) else {
        return true;
    };
    let key_index = account.devices.get(&addr.device).map_or(0, |d| d.key_index);
    let add = NodeBuilder::new("add")
        .children([
            NodeBuilder::new("device")
                .attr("jid", super::relay::device_jid(&addr))
                .attr("key-index", key_index.to_string())
                .build(),
            super::iq::key_index_list(account),
        ])
        .build();
    let others: Vec<u16> = account
        .devices
        .keys()
        .copied()
        .filter(|d| *d != addr.device)
        .collect();
    for d in others {
        let id = st.id();
        let note = NodeBuilder::new("notification")
            .attr("from", format!("{}@s.whatsapp.net", addr.user))
            .attr("id", id.clone())
            .attr("t", now().to_string())
            .attr("type", "devices")
            .children([add.clone()])
            .build();
        let to = Addr {
            user: addr.user.clone(),
            device: d,
        };
        st.deliver(&to, id, "notification", note);
    }
    true
}

/// A phone scans `qr`: sign the companion showing it in as a new device of `phone`'s account.
pub(crate) fn scan(
    server: &Server,
    phone: &str,
    identity: &KeyPair,
    qr: &str,
) -> anyhow::Result<Addr> {
    let parts: Vec<&str> = qr.split(',').collect();
    let [reference, _noise, companion_identity, adv_secret, ..] = parts[..] else {
        bail!("not a WhatsApp QR payload");
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let companion_identity = b64
        .decode(companion_identity)
        .context("the QR's identity key")?;
    let adv_secret = b64.decode(adv_secret).context("the QR's ADV secret")?;
    let mut st = server.state();
    let Some(out) = st.unpaired.get(reference).cloned() else {
        bail!("no device shows this QR (expired or already used)");
    };
    let id = st.id();
    let account = st.accounts.get_mut(phone).context("no such phone")?;
    account.next_device = account.next_device.max(1);
    let device = account.next_device;
    account.next_device += 1;
    let key_index = u32::from(device);
    account.devices.insert(
        device,
        Device {
            key_index,
            ..Device::default()
        },
    );
    let lid = account.lid.clone();
    let name = account.push_name.clone();
    let blob = signed_identity(identity, &companion_identity, &adv_secret, key_index)?;
    let addr = Addr {
        user: phone.to_owned(),
        device,
    };
    st.pairing.insert(id.clone(), addr.clone());
    let success = NodeBuilder::new("iq")
        .attr("from", SERVER)
        .attr("type", "set")
        .attr("id", id)
        .attr("xmlns", "md")
        .attr("t", now().to_string())
        .children([NodeBuilder::new("pair-success")
            .children([
                NodeBuilder::new("device-identity").bytes(blob).build(),
                NodeBuilder::new("device")
                    .attr("jid", format!("{phone}:{device}@s.whatsapp.net"))
                    .attr("lid", format!("{lid}:{device}@lid"))
                    .build(),
                NodeBuilder::new("platform").attr("name", "android").build(),
                // The account's name, which real WhatsApp hands over in app state (empty here):
                // a device without one waits 10 s for app state at every login.
                NodeBuilder::new("biz").attr("name", name).build(),
            ])
            .build()])
        .build();
    let _ = out.send(Out::Node(success));
    Ok(addr)
}

/// The account-signed identity of a new companion, in the HMAC container keyed by its ADV secret.
fn signed_identity(
    account: &KeyPair,
    companion_identity: &[u8],
    adv_secret: &[u8],
    key_index: u32,
) -> anyhow::Result<Vec<u8>> {
    let details = wa::ADVDeviceIdentity {
        raw_id: Some(1),
        timestamp: Some(now()),
        key_index: Some(key_index),
        ..Default::default()
    }
    .encode_to_vec();
    let mut msg = vec![6, 0];
    msg.extend_from_slice(&details);
    msg.extend_from_slice(companion_identity);
    let signature = account
        .calculate_signature(&msg, &mut rand::make_rng::<rand::rngs::StdRng>())
        .map_err(|e| anyhow::anyhow!("sign: {e}"))?;
    let signed = wa::ADVSignedDeviceIdentity {
        details: Some(details),
        account_signature_key: Some(account.public_key.public_key_bytes().to_vec()),
        account_signature: Some(signature.to_vec()),
        ..Default::default()
    }
    .encode_to_vec();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(adv_secret)
        .map_err(|e| anyhow::anyhow!("hmac key: {e}"))?;
    mac.update(&signed);
    Ok(wa::ADVSignedDeviceIdentityHMAC {
        details: Some(signed),
        hmac: Some(mac.finalize().into_bytes().to_vec()),
        ..Default::default()
    }
    .encode_to_vec())
}
