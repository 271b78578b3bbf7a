//! The session's truth as the rest of the worker sees it: WhatsApp's connection events folded
//! into one [`SyncState`] and the [`PairingInfo`] the dashboard shows. Pure (events and a clock
//! in, state out), so every transition is tested without a network; [`super::session`] feeds
//! it from the live client.

use std::time::Duration;

use chrono::{DateTime, Utc};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::HistoryProgress;
use whatsapp_rust::types::events::Event;

use crate::connector::PairingInfo;

/// How long after the last history chunk the session still counts as catching up when the
/// phone never reports 100 % (it does not always).
const HISTORY_QUIET: Duration = Duration::from_secs(120);

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not started yet, or between two clients.
    Starting,
    /// No device is linked: pairing codes may be showing.
    Unpaired,
    /// Linked, not connected; the client reconnects with backoff.
    Offline,
    /// Connected and logged in.
    Connected,
    /// The phone removed this device (or WhatsApp logged it out): the keys are dead, nothing
    /// reconnects; the owner must link again.
    LoggedOut,
    /// Another client took this device's connection: nothing reconnects until the owner
    /// resumes, so the two never fight over the stream.
    Replaced,
    /// WhatsApp refuses this client (temporary ban, outdated client): nothing reconnects.
    Refused,
}

/// The folded state. `paused` is the owner's switch and wins over everything.
#[derive(Debug, Clone)]
pub struct Status {
    /// Where the connection is.
    pub phase: Phase,
    /// The owner paused the connection.
    pub paused: bool,
    /// What pairing shows now.
    pub pairing: PairingInfo,
    /// The server is draining messages that arrived while offline.
    offline_drain: bool,
    /// When the last history chunk below 100 % arrived.
    history_until: Option<DateTime<Utc>>,
    /// History received since this device was linked (or the worker started).
    pub history: Option<HistoryProgress>,
}

impl Default for Status {
    fn default() -> Self {
        Self {
            phase: Phase::Starting,
            paused: false,
            pairing: PairingInfo::default(),
            offline_drain: false,
            history_until: None,
            history: None,
        }
    }
}

impl Status {
    /// The wire state at `now`.
    pub fn sync(&self, now: DateTime<Utc>) -> SyncState {
        if self.paused {
            return SyncState::Paused;
        }
        match self.phase {
            Phase::Unpaired | Phase::LoggedOut => SyncState::Unpaired,
            Phase::Starting | Phase::Offline | Phase::Replaced | Phase::Refused => {
                SyncState::Offline
            }
            Phase::Connected => {
                if self.offline_drain || self.history_until.is_some_and(|t| now < t) {
                    SyncState::CatchingUp
                } else {
                    SyncState::Live
                }
            }
        }
    }

    /// The pairing view at `now` (an expired QR is not shown).
    pub fn pairing(&self, now: DateTime<Utc>) -> PairingInfo {
        let mut p = self.pairing.clone();
        if p.qr_expires_at.is_some_and(|t| t <= now) {
            p.qr = None;
            p.qr_expires_at = None;
        }
        p
    }

    /// True when the library will not reconnect by itself and the session must not restart a
    /// client without the owner.
    pub fn needs_owner(&self) -> bool {
        matches!(
            self.phase,
            Phase::LoggedOut | Phase::Replaced | Phase::Refused
        )
    }

    /// `n` messages of a history page were newly archived (after [`Status::apply`] counted
    /// the page).
    pub fn history_archived(&mut self, n: u32) {
        self.history.get_or_insert_default().messages += u64::from(n);
    }

    /// Fold one event in.
    pub fn apply(&mut self, event: &Event, now: DateTime<Utc>) {
        match event {
            Event::Connected(_) => {
                self.phase = Phase::Connected;
                self.pairing = PairingInfo::default();
            }
            Event::Disconnected(_) => {
                if self.phase == Phase::Connected {
                    self.phase = Phase::Offline;
                    self.pairing.detail =
                        Some("the connection to WhatsApp dropped; reconnecting".into());
                }
                self.offline_drain = false;
            }
            Event::PairingQrCode(qr) => {
                self.phase = Phase::Unpaired;
                self.pairing.qr = Some(qr.code.clone());
                self.pairing.qr_expires_at = chrono::TimeDelta::from_std(qr.timeout)
                    .ok()
                    .map(|d| now + d);
                self.pairing.detail = Some("scan the QR code with WhatsApp on the phone".into());
            }
            Event::PairingCode(code) => {
                self.phase = Phase::Unpaired;
                self.pairing.pairing_code = Some(code.code.clone());
                self.pairing.detail = Some(
                    "on the phone: Linked devices → Link with phone number, then type the code"
                        .into(),
                );
            }
            Event::PairingCodeError(_) => {
                self.pairing.pairing_code = None;
                self.pairing.detail =
                    Some("WhatsApp refused to give a pairing code; try again later".into());
            }
            Event::PairingQrCodesExhausted(_) => {
                self.phase = Phase::Unpaired;
                self.pairing.qr = None;
                self.pairing.qr_expires_at = None;
                self.pairing.detail =
                    Some("the QR codes expired; start pairing again to get new ones".into());
            }
            Event::PairSuccess(_) => {
                self.phase = Phase::Offline;
                self.pairing = PairingInfo {
                    detail: Some("linked; connecting".into()),
                    ..PairingInfo::default()
                };
            }
            Event::PairError(_) => {
                self.pairing.detail = Some("linking failed; start pairing again".into());
            }
            Event::LoggedOut(_) => {
                self.phase = Phase::LoggedOut;
                self.offline_drain = false;
                self.pairing = PairingInfo {
                    detail: Some(
                        "WhatsApp logged this device out (removed on the phone); link again".into(),
                    ),
                    ..PairingInfo::default()
                };
            }
            Event::StreamReplaced(_) => {
                self.phase = Phase::Replaced;
                self.offline_drain = false;
                self.pairing.detail = Some(
                    "another client took over this device's connection; wazap stopped \
                     reconnecting (resume from the dashboard)"
                        .into(),
                );
            }
            Event::TemporaryBan(_) => {
                self.phase = Phase::Refused;
                self.pairing.detail =
                    Some("WhatsApp temporarily banned this account; wazap stopped".into());
            }
            Event::ClientOutdated(_) => {
                self.phase = Phase::Refused;
                self.pairing.detail =
                    Some("WhatsApp says this client is outdated; update wazap".into());
            }
            Event::OfflineSyncPreview(p) => self.offline_drain = p.total > 0,
            Event::OfflineSyncCompleted(_) => self.offline_drain = false,
            Event::HistorySync(h) => {
                let tally = self.history.get_or_insert_default();
                tally.pages += 1;
                if let Some(p) = h.progress() {
                    tally.percent = Some(u8::try_from(p.min(100)).unwrap_or(100));
                }
                let done = h.progress().is_some_and(|p| p >= 100);
                self.history_until = if done {
                    None
                } else {
                    chrono::TimeDelta::from_std(HISTORY_QUIET)
                        .ok()
                        .map(|d| now + d)
                };
            }
            _ => {}
        }
    }

    /// The state after the run loop started a client for a device that `paired` or not.
    pub fn started(&mut self, paired: bool) {
        self.phase = if paired {
            Phase::Offline
        } else {
            Phase::Unpaired
        };
        if paired {
            self.pairing.detail = Some("connecting to WhatsApp".into());
        }
    }
}
