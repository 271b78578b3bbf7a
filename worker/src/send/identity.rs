//! What names a send: the digest of (tool, chat, payload) the journal compares repeats by,
//! and the WhatsApp message id allocated (and journaled) before anything is transmitted.

use sha2::{Digest as _, Sha256};

use super::Payload;

/// SHA-256 over the tool, the chat and the payload, each field length-prefixed (absent and
/// empty differ). Media enter by their digest, never their bytes.
pub fn digest(tool: &str, chat_id: &str, payload: &Payload) -> Vec<u8> {
    let mut h = Sha256::new();
    let mut put = |b: Option<&[u8]>| match b {
        None => h.update([0u8]),
        Some(b) => {
            h.update([1u8]);
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        }
    };
    put(Some(tool.as_bytes()));
    put(Some(chat_id.as_bytes()));
    match payload {
        Payload::Text(t) => put(Some(t.as_bytes())),
        Payload::Media {
            kind,
            mime_type,
            media,
            filename,
            caption,
            seconds,
        } => {
            put(Some(format!("{kind:?}").as_bytes()));
            put(Some(media.object.as_bytes()));
            put(Some(mime_type.as_bytes()));
            put(filename.as_deref().map(str::as_bytes));
            put(caption.as_deref().map(str::as_bytes));
            put(seconds.map(u32::to_be_bytes).as_ref().map(|s| &s[..]));
        }
        Payload::Voice { media, seconds } => {
            put(Some(media.object.as_bytes()));
            put(Some(&seconds.to_be_bytes()));
        }
    }
    h.finalize().to_vec()
}

/// A fresh WhatsApp message id in WhatsApp Web's style (`3EB0` + 18 upper-case hex digits).
pub(super) fn allocate_wa_id() -> anyhow::Result<String> {
    let mut b = [0u8; 9];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(format!("3EB0{}", hex::encode_upper(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wazap_shared::wire::send::{MediaKind, MediaRef};

    #[test]
    fn digests_separate_tool_chat_and_payload() {
        let t = |s: &str| Payload::Text(s.into());
        let base = digest("send_message", "c_1", &t("hi"));
        assert_eq!(base, digest("send_message", "c_1", &t("hi")));
        assert_ne!(base, digest("send_message", "c_2", &t("hi")));
        assert_ne!(base, digest("send_message", "c_1", &t("hi!")));
        let m = |caption: Option<&str>| Payload::Media {
            kind: MediaKind::Image,
            mime_type: "image/png".into(),
            media: MediaRef {
                object: "ab".into(),
                size: 1,
            },
            filename: None,
            caption: caption.map(Into::into),
            seconds: None,
        };
        assert_ne!(
            digest("send_media", "c_1", &m(None)),
            digest("send_media", "c_1", &m(Some("")))
        );
        let id = allocate_wa_id().unwrap();
        assert!(id.starts_with("3EB0") && id.len() == 22);
    }
}
