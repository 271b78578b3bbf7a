//! Media download for `get_attachment`: the parameters kept at receive time
//! ([`MediaParams`], stored as `attachments.media`) rebuild the CDN request, so a photo still
//! downloads weeks later; when the CDN has dropped it, the phone is asked to upload it again
//! (`media_reupload`) and the new direct path is kept.

use anyhow::Context as _;
use base64::engine::general_purpose::STANDARD as B64;
use deadpool_postgres::Pool;
use serde::{Deserialize, Serialize};
use whatsapp_rust::Client;
use whatsapp_rust::Jid;
use whatsapp_rust::download::DownloadParams;
use whatsapp_rust::features::MediaReuploadRequest;
use whatsapp_rust::wacore::download::MediaType;
use whatsapp_rust::wacore::media_retry::MediaRetryResult;

/// Which CDN family the media lives in (it selects the decryption keys' info string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// Photos.
    Image,
    /// Videos.
    Video,
    /// Audio and voice notes.
    Audio,
    /// Documents.
    Document,
    /// Stickers.
    Sticker,
}

impl MediaKind {
    fn media_type(self) -> MediaType {
        match self {
            Self::Image => MediaType::Image,
            Self::Video => MediaType::Video,
            Self::Audio => MediaType::Audio,
            Self::Document => MediaType::Document,
            Self::Sticker => MediaType::Sticker,
        }
    }
}

/// Where the message that carried the media lives: what a re-upload request names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaOrigin {
    /// WhatsApp's message id.
    pub id: String,
    /// The chat's JID.
    pub chat: String,
    /// True when the account sent it.
    pub from_me: bool,
    /// The sender in groups and stories.
    pub participant: Option<String>,
}

/// Everything needed to fetch and decrypt one media file from WhatsApp's CDN.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaParams {
    /// CDN family.
    pub kind: MediaKind,
    /// The CDN path.
    pub direct_path: String,
    /// The file's key (base64 in JSON).
    #[serde(with = "b64")]
    pub media_key: Vec<u8>,
    /// SHA-256 of the plain file.
    #[serde(with = "b64")]
    pub file_sha256: Vec<u8>,
    /// SHA-256 of the encrypted file.
    #[serde(with = "b64")]
    pub file_enc_sha256: Vec<u8>,
    /// Size in bytes (0 when unknown).
    pub file_length: u64,
}

impl MediaParams {
    /// The JSON kept in `attachments.media`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The stored JSON: the parameters plus, once the envelope is known, the message's origin.
#[derive(Debug, Clone, Deserialize)]
struct Stored {
    #[serde(flatten)]
    params: MediaParams,
    origin: Option<MediaOrigin>,
}

/// Add the message's origin to an attachment's stored parameters.
pub fn with_origin(media: &mut serde_json::Value, origin: &MediaOrigin) {
    if let (Some(obj), Ok(o)) = (media.as_object_mut(), serde_json::to_value(origin)) {
        obj.insert("origin".into(), o);
    }
}

/// How long a download waits for the phone to upload a file again: inside `get_attachment`'s
/// 15 s deadline, so the agent hears "not available" rather than a timeout.
const REUPLOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(8);

/// Fetch the bytes of `attachment_id`: `None` when it has no WhatsApp parameters (nothing to
/// download) or the phone cannot provide them again. A failed download is retried once after
/// asking the phone to re-upload.
pub async fn download(
    client: &Client,
    pool: &Pool,
    account: &str,
    attachment_id: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    let db = pool.get().await.context("database connection")?;
    let Some(row) = db
        .query_opt(
            "select media from attachments where account_id = $1 and attachment_id = $2",
            &[&account, &attachment_id],
        )
        .await?
    else {
        return Ok(None);
    };
    drop(db);
    let Some(media) = row.get::<_, Option<serde_json::Value>>(0) else {
        return Ok(None);
    };
    let Ok(stored) = serde_json::from_value::<Stored>(media) else {
        return Ok(None);
    };
    let first = fetch(client, &stored.params).await;
    let err = match first {
        Ok(bytes) => return Ok(Some(bytes)),
        Err(e) => e,
    };
    let Some(origin) = stored.origin else {
        return Err(err);
    };
    tracing::info!(attachment.id = %attachment_id, error = %err, "media download failed; asking the phone to re-upload");
    let chat: Jid = origin.chat.parse().context("stored chat JID")?;
    let participant: Option<Jid> = origin.participant.as_deref().and_then(|p| p.parse().ok());
    let req = MediaReuploadRequest {
        msg_id: &origin.id,
        chat_jid: &chat,
        media_key: &stored.params.media_key,
        is_from_me: origin.from_me,
        participant: participant.as_ref(),
    };
    let answer = tokio::time::timeout(REUPLOAD_WAIT, client.media_reupload().request(&req)).await;
    let direct_path = match answer {
        Ok(Ok(MediaRetryResult::Success { direct_path })) => direct_path,
        other => {
            // The phone no longer has it, could not read the request, or did not answer in
            // time: the file is gone for good (the caller says so).
            let why = match other {
                Ok(Ok(MediaRetryResult::NotFound)) => "the phone no longer has it",
                Ok(Ok(MediaRetryResult::DecryptionError)) => "the phone could not read the request",
                Ok(Ok(_)) => "the phone answered with an error",
                Ok(Err(_)) => "the request could not be sent",
                Err(_) => "the phone did not answer in time",
            };
            tracing::info!(attachment.id = %attachment_id, reason = why, "media not re-uploaded");
            return Ok(None);
        }
    };
    let mut params = stored.params.clone();
    params.direct_path = direct_path;
    let bytes = fetch(client, &params).await?;
    let mut json = params.to_json();
    with_origin(&mut json, &origin);
    let db = pool.get().await.context("database connection")?;
    db.execute(
        "update attachments set media = $3 where account_id = $1 and attachment_id = $2",
        &[&account, &attachment_id, &json],
    )
    .await?;
    Ok(Some(bytes))
}

/// One CDN download.
async fn fetch(client: &Client, p: &MediaParams) -> anyhow::Result<Vec<u8>> {
    let params = DownloadParams::encrypted(
        p.direct_path.clone(),
        &p.media_key,
        &p.file_sha256,
        &p.file_enc_sha256,
        p.file_length,
        p.kind.media_type(),
    );
    client
        .download_from_params(&params)
        .await
        .map_err(|e| anyhow::anyhow!("media download: {e}"))
}

/// Bytes as standard base64 in JSON.
mod b64 {
    use super::B64;
    use base64::Engine as _;
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&B64.encode(v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        B64.decode(s).map_err(serde::de::Error::custom)
    }
}
