//! The bearer-token check (`wazap_shared::grant::verify`) and the grant claims.
//!
//! A first byte of 0 makes the rest a claims object, signed with a fixed test key and then
//! verified, so the claim checks behind a good signature are reached too; any other input is
//! the token itself.
#![no_main]

use std::sync::LazyLock;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use libfuzzer_sys::fuzz_target;
use wazap_shared::grant::verify::{decode, key_id};
use wazap_shared::grant::{AUDIENCE, GrantClaims};

/// A fixed Ed25519 seed: a test key, signing nothing but fuzz inputs.
const SEED: [u8; 32] = [7; 32];
const KID: &str = "k_fuzz";

static KEYS: LazyLock<(EncodingKey, DecodingKey)> = LazyLock::new(|| {
    let public = ed25519_dalek::SigningKey::from_bytes(&SEED)
        .verifying_key()
        .to_bytes();
    // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410).
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&SEED);
    (
        EncodingKey::from_ed_der(&der),
        DecodingKey::from_ed_der(&public),
    )
});

fuzz_target!(|data: &[u8]| {
    let (encoding, decoding) = &*KEYS;
    match data.split_first() {
        Some((0, claims)) => {
            if let Ok(parsed) = serde_json::from_slice::<GrantClaims>(claims) {
                let again = serde_json::to_vec(&parsed).expect("claims serialise");
                let back: GrantClaims = serde_json::from_slice(&again).expect("claims round-trip");
                assert_eq!(back, parsed);
            }
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(claims) else {
                return;
            };
            let mut header = Header::new(Algorithm::EdDSA);
            header.kid = Some(KID.into());
            let Ok(token) = jsonwebtoken::encode(&header, &value, encoding) else {
                return;
            };
            assert_eq!(key_id(&token).as_deref(), Ok(KID));
            if let Ok(verified) = decode(&token, decoding) {
                assert_eq!(verified.aud, AUDIENCE);
            }
        }
        _ => {
            let Ok(token) = std::str::from_utf8(data) else {
                return;
            };
            let _ = key_id(token);
            let _ = decode(token, decoding);
        }
    }
});
