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
use super::state::{Addr, Device, State};
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
        let n = st.qr_refs.unwrap_or(REFS);
        let refs: Vec<String> = (0..n).map(|_| format!("2@{}", st.id())).collect();
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
                let answer = code_iq(&server, &out, &node).unwrap_or_else(|| result(&node, vec![]));
                let _ = out.send(Out::Node(answer));
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
    sign_in(
        &mut st,
        &out,
        phone,
        identity,
        &companion_identity,
        &adv_secret,
    )
}

/// Make the companion behind `out` a new device of `phone`'s account: `<pair-success>` signed
/// with the account's key, HMAC'd with the companion's ADV secret.
fn sign_in(
    st: &mut State,
    out: &UnboundedSender<Out>,
    phone: &str,
    identity: &KeyPair,
    companion_identity: &[u8],
    adv_secret: &[u8],
) -> anyhow::Result<Addr> {
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
    let blob = signed_identity(identity, companion_identity, adv_secret, key_index)?;
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

/// A companion asking to link by pairing code, waiting for the phone to enter the code.
pub(crate) struct CodeRequest {
    out: UnboundedSender<Out>,
    phone: String,
    wrapped: Vec<u8>,
    /// Set once the phone entered the code: the phone's identity, its ephemeral key, and the
    /// companion's ephemeral key the code unwrapped.
    entered: Option<(KeyPair, KeyPair, [u8; 32])>,
}

/// The companion's pairing-code IQ (`link_code_companion_reg`), if this is one: the answer.
pub(crate) fn code_iq(server: &Server, out: &UnboundedSender<Out>, iq: &Node) -> Option<Node> {
    let reg = child(iq, "link_code_companion_reg")?;
    let mut st = server.state();
    match attr(reg, "stage").as_deref() {
        Some("companion_hello") => {
            let wrapped = child(reg, "link_code_pairing_wrapped_companion_ephemeral_pub")
                .and_then(crate::node::bytes)?
                .to_vec();
            let phone = crate::node::jid(reg, "jid")?.user.to_string();
            let reference = st.id();
            st.codes.insert(
                reference.clone(),
                CodeRequest {
                    out: out.clone(),
                    phone,
                    wrapped,
                    entered: None,
                },
            );
            Some(result(
                iq,
                vec![
                    NodeBuilder::new("link_code_companion_reg")
                        .attr("stage", "companion_hello")
                        .children([NodeBuilder::new("link_code_pairing_ref")
                            .bytes(reference.into_bytes())
                            .build()])
                        .build(),
                ],
            ))
        }
        Some("companion_finish") => {
            let reference = child(reg, "link_code_pairing_ref").and_then(crate::node::bytes)?;
            let reference = String::from_utf8_lossy(reference).into_owned();
            let bundle = child(reg, "link_code_pairing_wrapped_key_bundle")
                .and_then(crate::node::bytes)?
                .to_vec();
            let companion_identity = child(reg, "companion_identity_public")
                .and_then(crate::node::bytes)?
                .to_vec();
            let request = st.codes.remove(&reference)?;
            let answer = result(iq, vec![]);
            if let Err(e) = finish_code(&mut st, request, &bundle, &companion_identity) {
                tracing::warn!(error = %format!("{e:#}"), "wanet: pairing by code failed");
            }
            Some(answer)
        }
        _ => None,
    }
}

/// The phone entered `code`: unwrap the companion's ephemeral key and say hello as the primary.
pub(crate) fn enter_code(
    server: &Server,
    phone: &str,
    identity: &KeyPair,
    code: &str,
) -> anyhow::Result<()> {
    use whatsapp_rust::wacore::pair_code::PairCodeUtils;
    let mut st = server.state();
    let (reference, request) = st
        .codes
        .iter_mut()
        .find(|(_, r)| r.phone == phone && r.entered.is_none())
        .context("no device is waiting for a pairing code for this number")?;
    let companion_eph = PairCodeUtils::decrypt_primary_ephemeral_pub(&request.wrapped, code)
        .map_err(|e| anyhow::anyhow!("unwrap: {e}"))?;
    let ephemeral = KeyPair::generate(&mut rand::make_rng::<rand::rngs::StdRng>());
    let ephemeral_pub: [u8; 32] = ephemeral
        .public_key
        .public_key_bytes()
        .try_into()
        .context("a Curve25519 key")?;
    let hello = NodeBuilder::new("link_code_companion_reg")
        .attr("stage", "primary_hello")
        .children([
            NodeBuilder::new("link_code_pairing_wrapped_primary_ephemeral_pub")
                .bytes(PairCodeUtils::encrypt_ephemeral_pub(&ephemeral_pub, code).to_vec())
                .build(),
            NodeBuilder::new("primary_identity_pub")
                .bytes(identity.public_key.public_key_bytes().to_vec())
                .build(),
            NodeBuilder::new("link_code_pairing_ref")
                .bytes(reference.clone().into_bytes())
                .build(),
        ])
        .build();
    request.entered = Some((identity.clone(), ephemeral, companion_eph));
    let out = request.out.clone();
    let id = st.id();
    let _ = out.send(Out::Node(
        NodeBuilder::new("notification")
            .attr("type", "link_code_companion_reg")
            .attr("from", SERVER)
            .attr("id", id)
            .children([hello])
            .build(),
    ));
    Ok(())
}

/// The companion's key bundle: derive its ADV secret as the phone would, and sign it in.
fn finish_code(
    st: &mut State,
    request: CodeRequest,
    bundle: &[u8],
    companion_identity: &[u8],
) -> anyhow::Result<Addr> {
    use whatsapp_rust::wacore::crypto::hkdf_sha256_into;
    use whatsapp_rust::wacore::libsignal::crypto::aes_256_gcm_decrypt;
    use whatsapp_rust::wacore::libsignal::protocol::PublicKey;
    let (identity, ephemeral, companion_eph) = request
        .entered
        .context("the phone never entered the code")?;
    anyhow::ensure!(bundle.len() > 44, "a short key bundle");
    let (salt, rest) = bundle.split_at(32);
    let (iv, ciphertext) = rest.split_at(12);
    let companion_eph = PublicKey::from_djb_public_key_bytes(&companion_eph)
        .map_err(|e| anyhow::anyhow!("companion ephemeral key: {e}"))?;
    let shared = ephemeral
        .calculate_agreement(&companion_eph)
        .map_err(|e| anyhow::anyhow!("agreement: {e}"))?;
    let mut key = [0u8; 32];
    hkdf_sha256_into(
        &shared,
        Some(salt),
        b"link_code_pairing_key_bundle_encryption_key",
        &mut key,
    )
    .map_err(|e| anyhow::anyhow!("hkdf: {e:?}"))?;
    let iv: [u8; 12] = iv.try_into().context("iv")?;
    let mut plain = Vec::new();
    aes_256_gcm_decrypt(&key, &iv, b"", ciphertext, &mut plain)
        .map_err(|e| anyhow::anyhow!("the key bundle does not open (a wrong code?): {e:?}"))?;
    anyhow::ensure!(plain.len() == 96, "a key bundle of {} bytes", plain.len());
    let companion_pub = PublicKey::from_djb_public_key_bytes(companion_identity)
        .map_err(|e| anyhow::anyhow!("companion identity: {e}"))?;
    let identity_shared = identity
        .calculate_agreement(&companion_pub)
        .map_err(|e| anyhow::anyhow!("agreement: {e}"))?;
    let mut combined = Vec::with_capacity(96);
    combined.extend_from_slice(&shared);
    combined.extend_from_slice(&identity_shared);
    combined.extend_from_slice(&plain[64..96]);
    let mut adv = [0u8; 32];
    hkdf_sha256_into(&combined, None, b"adv_secret", &mut adv)
        .map_err(|e| anyhow::anyhow!("hkdf: {e:?}"))?;
    sign_in(
        st,
        &request.out,
        &request.phone,
        &identity,
        companion_identity,
        &adv,
    )
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
