//! The owner's controls over the linked WhatsApp account (dashboard and CLI): what pairing shows
//! right now, and pause / resume / unlink / pair-by-code. Every connector answers them; `demo`
//! and `sim` model them in memory, the real connector drives `whatsapp-rust`.

use chrono::{DateTime, Utc};

/// What the owner needs to link a phone, as of now. Never leaves the owner's session: the QR
/// payload is drawn on the dashboard page and sent nowhere else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingInfo {
    /// The string to encode as a QR code (WhatsApp's pairing payload), while one is live.
    pub qr: Option<String>,
    /// When [`PairingInfo::qr`] stops being valid.
    pub qr_expires_at: Option<DateTime<Utc>>,
    /// The 8-character code to type on the phone, after [`AccountAction::PairWithCode`].
    pub pairing_code: Option<String>,
    /// A short human explanation of the state (e.g. "logged out from the phone"), never a
    /// provider diagnostic.
    pub detail: Option<String>,
}

/// An owner action on the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountAction {
    /// Stop the connection (no messages in or out) until resumed; state `paused`.
    Pause,
    /// Reconnect after a pause.
    Resume,
    /// Log the device out and forget its keys; state `unpaired`.
    Unlink,
    /// Start (or restart) QR pairing: fresh codes appear in [`PairingInfo::qr`].
    PairWithQr,
    /// Ask WhatsApp for a pairing code for this phone number (digits, with country code).
    PairWithCode {
        /// The phone number, digits only.
        phone: String,
    },
}

/// Why an [`AccountAction`] was refused.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The action makes no sense in the current state (e.g. pairing while linked), or this
    /// connector cannot do it (`demo`). The text is shown to the owner.
    #[error("{0}")]
    NotNow(&'static str),
    /// Anything else; logged by the caller, never shown.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}
