//! What the journal hands a connector to transmit, and what the connector answers: the four
//! outcomes the journal must tell apart (refused before anything left, failed before
//! transmission, trouble after the hand-over, or WhatsApp's server acknowledgement).
//! `Debug` never prints the text or the bytes. Afterwards, the recipients' delivery and read
//! receipts go back up through [`Receipts`].

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::send::MediaKind;

/// One message to transmit.
pub struct OutboundMessage {
    /// The account that sends.
    pub account_id: String,
    /// The chat's JID, as the connector addresses it.
    pub recipient: String,
    /// The WhatsApp message id, allocated (and journaled) before transmission.
    pub wa_id: String,
    /// What to send.
    pub content: OutboundContent,
}

/// The body of an [`OutboundMessage`].
pub enum OutboundContent {
    /// A text message.
    Text(String),
    /// A photo, video, audio file or document (already validated).
    Media {
        /// Its kind.
        kind: MediaKind,
        /// Its media type.
        mime_type: String,
        /// The bytes.
        data: Bytes,
        /// File name (documents).
        filename: Option<String>,
        /// Caption (not audio).
        caption: Option<String>,
        /// Duration in seconds.
        seconds: Option<u32>,
    },
    /// A voice note: Ogg/Opus sent with WhatsApp's PTT flag.
    Voice {
        /// The Ogg/Opus bytes.
        data: Bytes,
        /// Duration in seconds.
        seconds: u32,
    },
}

impl OutboundContent {
    /// `text`, `image`, `video`, `audio`, `document` or `voice`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Media { kind, .. } => match kind {
                MediaKind::Image => "image",
                MediaKind::Video => "video",
                MediaKind::Audio => "audio",
                MediaKind::Document => "document",
            },
            Self::Voice { .. } => "voice",
        }
    }

    /// The text `unconfirmed_sends` shows until the send is confirmed: the message's, a
    /// caption, or nothing for a voice note.
    pub fn outbox_text(&self) -> &str {
        match self {
            Self::Text(t) => t,
            Self::Media { caption, .. } => caption.as_deref().unwrap_or_default(),
            Self::Voice { .. } => "",
        }
    }
}

impl std::fmt::Debug for OutboundMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundMessage")
            .field("kind", &self.content.kind_name())
            .finish_non_exhaustive()
    }
}

/// WhatsApp's server acknowledgement.
#[derive(Debug, Clone, PartialEq)]
pub struct SendAck {
    /// When it came.
    pub at: DateTime<Utc>,
    /// The sent message as the archive should keep it (`from_me`), when the connector can say.
    /// The send path archives it while it journals `accepted`, and answers only when both are
    /// committed: an agent never finds its acknowledged message missing, and the two commits
    /// overlap instead of queueing (DESIGN §11's send budget).
    pub echo: Option<crate::archive::Inbound>,
}

/// Why a send did not end in an acknowledgement. The journal logs these (their `Display`), so a
/// connector's causes must never carry message text, media, phone numbers or JIDs.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The session cannot send right now; nothing left the worker.
    #[error("the session cannot send ({})", .0.as_str())]
    CannotSend(SyncState),
    /// It failed before transmission (e.g. the media upload); nothing was sent.
    #[error("failed before transmission: {0:#}")]
    BeforeTransmission(anyhow::Error),
    /// An error after the hand-over: it may have been delivered.
    #[error("error after transmission: {0:#}")]
    AfterTransmission(anyhow::Error),
    /// WhatsApp's server refused it with this error code (a nack). The contract cannot promise
    /// nothing was delivered, so it reads like an error after transmission; the code is journaled.
    #[error("WhatsApp refused the message (code {0})")]
    Refused(String),
    /// Handed over, but no acknowledgement came in time: it may have been delivered.
    #[error("no acknowledgement in time")]
    NoAck,
}

/// What a recipient's device said about messages the account sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptKind {
    /// The message reached the device.
    Delivered,
    /// The recipient opened it.
    Read,
    /// The recipient played it (voice notes, videos); implies read.
    Played,
}

impl ReceiptKind {
    /// `delivered`, `read` or `played` (the metric's attribute).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Read => "read",
            Self::Played => "played",
        }
    }

    /// Whether it says the message was read (read implies delivered).
    pub fn is_read(self) -> bool {
        matches!(self, Self::Read | Self::Played)
    }
}

/// One receipt for messages `account_id` sent, by the WhatsApp ids they went out with (the ids
/// the journal allocated), with the time WhatsApp gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The account that sent them.
    pub account_id: String,
    /// Their WhatsApp message ids.
    pub wa_ids: Vec<String>,
    /// Delivered, read or played.
    pub kind: ReceiptKind,
    /// When, by WhatsApp's clock.
    pub at: DateTime<Utc>,
}

/// Where a connector hands receipts of sent messages. The journal that knows those messages
/// belongs to the send domain, which depends on the connector and not the other way round, so
/// the worker passes its recorder in when it starts the connector.
pub trait Receipts: Send + Sync + 'static {
    /// Record `receipt` for whichever of its ids were sent through the journal (others are
    /// someone else's business and ignored); an error is a failed write.
    fn record(&self, receipt: Receipt) -> BoxFuture<'_, anyhow::Result<()>>;
}

/// A shared receipt recorder.
pub type DynReceipts = std::sync::Arc<dyn Receipts>;
