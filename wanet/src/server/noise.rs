//! The server's side of WhatsApp's Noise XX handshake and of the encrypted frames after it.
//!
//! The certificate chain the server hands out is signed by no one (a client accepts it only when
//! built with `danger-skip-cert-chain-verify`) and expired long ago: a client then never caches
//! it for the short IK handshake, so every connection runs XX (the one pattern served here).

use anyhow::{Context as _, bail};
use bytes::BytesMut;
use whatsapp_rust::wacore::framing::{FrameDecoder, encode_frame};
use whatsapp_rust::wacore::libsignal::protocol::KeyPair;
use whatsapp_rust::wacore::noise::{NoiseCipher, NoiseHandshake};
use whatsapp_rust::wacore_binary::consts::{NOISE_PATTERN_XX, WA_CONN_HEADER};
use whatsapp_rust::wacore_binary::marshal::unmarshal_ref;
use whatsapp_rust::wacore_binary::{Node, marshal, util::unpack};
use whatsapp_rust::waproto::buffa::{Message as _, MessageField};
use whatsapp_rust::waproto::whatsapp::{self as wa, cert_chain::noise_certificate};

/// The server's long-lived Noise identity and the chain that names it.
pub(crate) struct ServerKeys {
    identity: KeyPair,
    chain: Vec<u8>,
}

impl ServerKeys {
    pub(crate) fn generate() -> Self {
        let identity = KeyPair::generate(&mut rand::make_rng::<rand::rngs::StdRng>());
        let details = |serial: u32, issuer: u32, key: &[u8]| {
            noise_certificate::Details {
                serial: Some(serial),
                issuer_serial: Some(issuer),
                key: Some(key.to_vec()),
                not_before: Some(0),
                // Expired: the client re-verifies with XX on every connect instead of trying IK.
                not_after: Some(1),
            }
            .encode_to_vec()
        };
        let cert = |details: Vec<u8>| wa::cert_chain::NoiseCertificate {
            details: Some(details),
            signature: Some(vec![0; 64]),
        };
        let chain = wa::CertChain {
            intermediate: MessageField::some(cert(details(1, 0, &[0x11; 32]))),
            leaf: MessageField::some(cert(details(2, 1, identity.public_key.public_key_bytes()))),
        }
        .encode_to_vec();
        Self { identity, chain }
    }
}

/// One side's frame cipher and its counter.
struct Direction {
    cipher: NoiseCipher,
    counter: u32,
}

/// An established connection's framing: bytes in, nodes out, and the other way.
pub(crate) struct Framed {
    decoder: FrameDecoder,
    read: Direction,
    write: Direction,
}

impl Framed {
    /// Feed bytes from the socket.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.decoder.feed(bytes);
    }

    /// The next complete node, if one has arrived.
    pub(crate) fn next_node(&mut self) -> anyhow::Result<Option<Node>> {
        let Some(mut frame) = self.decoder.decode_frame() else {
            return Ok(None);
        };
        self.read
            .cipher
            .decrypt_in_place_with_counter(self.read.counter, &mut frame)
            .context("decrypt a frame")?;
        self.read.counter += 1;
        let plain = unpack(&frame).context("unpack a frame")?;
        Ok(Some(
            unmarshal_ref(&plain).context("decode a node")?.to_owned(),
        ))
    }

    /// A node as the bytes of one frame.
    pub(crate) fn encode(&mut self, node: &Node) -> anyhow::Result<Vec<u8>> {
        let mut plain = marshal(node).context("encode a node")?;
        self.write
            .cipher
            .encrypt_in_place_with_counter(self.write.counter, &mut plain)
            .context("encrypt a frame")?;
        self.write.counter += 1;
        encode_frame(&plain, None)
    }
}

/// The handshake in progress: fed the client's bytes, it answers with the bytes to send.
pub(crate) struct Responder<'k> {
    keys: &'k ServerKeys,
    decoder: FrameDecoder,
    seen_header: bool,
    state: Option<(NoiseHandshake, KeyPair)>,
}

/// What feeding the responder produced.
pub(crate) enum Step {
    /// Need more bytes.
    More,
    /// Send these bytes (the server hello), then keep feeding.
    Reply(Vec<u8>),
    /// Done: the framing for the rest of the connection and the client's login payload.
    Done(Box<Framed>, Box<wa::ClientPayload>),
}

impl<'k> Responder<'k> {
    pub(crate) fn new(keys: &'k ServerKeys) -> Self {
        Self {
            keys,
            decoder: FrameDecoder::new(),
            seen_header: false,
            state: None,
        }
    }

    /// Feed bytes from the socket.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> anyhow::Result<Step> {
        if !self.seen_header {
            bytes = bytes
                .strip_prefix(&WA_CONN_HEADER[..])
                .context("the connection does not start with WhatsApp's header")?;
            self.seen_header = true;
        }
        self.decoder.feed(bytes);
        let Some(frame) = self.decoder.decode_frame() else {
            return Ok(Step::More);
        };
        match self.state.take() {
            None => self.hello(&frame).map(Step::Reply),
            Some((noise, ephemeral)) => {
                let (framed, payload) = finish(noise, &ephemeral, &frame)?;
                let mut framed = framed;
                framed.decoder = std::mem::take(&mut self.decoder);
                Ok(Step::Done(Box::new(framed), Box::new(payload)))
            }
        }
    }

    /// Answer the client hello with the server hello (e, ee, s, es, the chain).
    fn hello(&mut self, frame: &BytesMut) -> anyhow::Result<Vec<u8>> {
        let hello = wa::HandshakeMessage::decode_from_slice(frame).context("client hello")?;
        let Some(client_eph) = hello.client_hello.into_option().and_then(|h| h.ephemeral) else {
            bail!("the client hello has no ephemeral key");
        };
        if hello_is_ik(frame) {
            bail!("the client tried IK; this network serves XX only");
        }
        let mut noise = NoiseHandshake::new(NOISE_PATTERN_XX, &WA_CONN_HEADER)?;
        noise.authenticate(&client_eph);
        let ephemeral = KeyPair::generate(&mut rand::make_rng::<rand::rngs::StdRng>());
        noise.authenticate(ephemeral.public_key.public_key_bytes());
        noise.mix_shared_secret(ephemeral.private_key.serialize(), &client_eph)?;
        let static_ct = noise.encrypt(self.keys.identity.public_key.public_key_bytes())?;
        noise.mix_shared_secret(self.keys.identity.private_key.serialize(), &client_eph)?;
        let chain_ct = noise.encrypt(&self.keys.chain)?;
        let reply = wa::HandshakeMessage {
            server_hello: MessageField::some(wa::handshake_message::ServerHello {
                ephemeral: Some(ephemeral.public_key.public_key_bytes().to_vec()),
                r#static: Some(static_ct),
                payload: Some(chain_ct),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.state = Some((noise, ephemeral));
        encode_frame(&reply.encode_to_vec(), None)
    }
}

/// Whether a client hello carries IK's static key.
fn hello_is_ik(frame: &[u8]) -> bool {
    wa::HandshakeMessage::decode_from_slice(frame)
        .ok()
        .and_then(|m| m.client_hello.into_option())
        .is_some_and(|h| h.r#static.is_some())
}

/// Read the client finish (s, se, the login payload) and split the transport keys.
fn finish(
    mut noise: NoiseHandshake,
    ephemeral: &KeyPair,
    frame: &[u8],
) -> anyhow::Result<(Framed, wa::ClientPayload)> {
    let msg = wa::HandshakeMessage::decode_from_slice(frame).context("client finish")?;
    let cf = msg
        .client_finish
        .into_option()
        .context("expected a client finish")?;
    let client_static = noise.decrypt(cf.r#static.as_deref().context("no static key")?)?;
    noise.mix_shared_secret(ephemeral.private_key.serialize(), &client_static)?;
    let payload = noise.decrypt(cf.payload.as_deref().context("no payload")?)?;
    let payload = wa::ClientPayload::decode_from_slice(&payload).context("client payload")?;
    // The initiator's (write, read) pair: the server reads with the first.
    let (client_write, client_read) = noise.finish()?;
    Ok((
        Framed {
            decoder: FrameDecoder::new(),
            read: Direction {
                cipher: client_write,
                counter: 0,
            },
            write: Direction {
                cipher: client_read,
                counter: 0,
            },
        },
        payload,
    ))
}
