//! wazap's WhatsApp test network: a WhatsApp server on a loopback websocket and simulated phones
//! that are real whatsapp-rust clients, so the worker's real `whatsapp` connector (Noise, binary
//! nodes, Signal, media crypto) runs end to end inside a test.
//!
//! It is a test double with a short list of what it implements (see `docs/test-network.md`), not a
//! WhatsApp clone. A client connects to it only when built with whatsapp-rust's
//! `danger-skip-cert-chain-verify` feature, which only test targets enable.

mod history;
mod node;
mod phone;
mod server;

use std::sync::Arc;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

pub use history::HistoryChat;
pub use phone::{OnDemand, Phone, Received};

/// Where the test harness hears of what the network's phones are and say, which the system under
/// test must never log: set once with [`set_secret_hook`] (the harness points it at its leak-scan
/// recorder; wanet depends on nothing of wazap's).
static SECRET_HOOK: std::sync::OnceLock<fn(&str, &str)> = std::sync::OnceLock::new();

/// From now on, tell `hook` `(kind, value)` for every phone number registered (`phone number`)
/// and every text or caption a phone sends, quotes or holds as history (`message text`). The
/// first hook set stays.
pub fn set_secret_hook(hook: fn(kind: &str, value: &str)) {
    let _ = SECRET_HOOK.set(hook);
}

/// Tell the hook, if any, of a secret.
pub(crate) fn secret(kind: &str, value: &str) {
    if let Some(hook) = SECRET_HOOK.get() {
        hook(kind, value);
    }
}

/// [`secret`] for each number and text of `chats`.
pub(crate) fn history_secrets(chats: &[HistoryChat]) {
    for chat in chats {
        secret(PHONE_NUMBER, &chat.with);
        for (_, _, _, text) in &chat.messages {
            secret(MESSAGE_TEXT, text);
        }
    }
}

/// A registered phone's number (the kinds [`set_secret_hook`]'s hook is told, as the leak scan
/// names them).
pub(crate) const PHONE_NUMBER: &str = "phone number";
/// A text, caption or quoted text a phone sends, or a text of the history it holds.
pub(crate) const MESSAGE_TEXT: &str = "message text";

/// The app version clients on this network announce (it serves no `sw.js`).
pub const VERSION: (u32, u32, u32) = (2, 3000, 1_000_000_000);

/// A fault the server injects into the next message a device sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Relay it, never acknowledge it.
    NoAck,
    /// Relay it, acknowledge it after this long.
    DelayAck(std::time::Duration),
    /// Refuse it with this error code (a nack); nothing is relayed.
    Nack(u16),
    /// Close the sender's socket before relaying anything.
    DropBeforeRelay,
    /// Relay it, then close the sender's socket before the ack.
    DropAfterRelay,
}

/// A running network. Dropping it stops the server.
pub struct Network {
    server: Arc<server::Server>,
    stop: CancellationToken,
}

impl Network {
    /// Start a server on a free loopback port.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_on(([127, 0, 0, 1], 0).into()).await
    }

    /// Start a server on `addr` (a loopback address: this network never listens beyond this
    /// machine).
    pub async fn start_on(addr: std::net::SocketAddr) -> anyhow::Result<Self> {
        anyhow::ensure!(
            addr.ip().is_loopback(),
            "the test network listens on loopback only"
        );
        let stop = CancellationToken::new();
        let server = server::Server::start(addr, stop.clone()).await?;
        Ok(Self { server, stop })
    }

    /// Its base URL, `ws://127.0.0.1:PORT` (what `WAZAP_WHATSAPP_NETWORK` takes).
    pub fn url(&self) -> String {
        format!("ws://{}", self.server.addr())
    }

    /// Register the account `number` (digits) named `name`, and log its phone in.
    pub async fn phone(&self, number: &str, name: &str) -> anyhow::Result<Phone> {
        anyhow::ensure!(
            number.len() >= 7 && number.bytes().all(|b| b.is_ascii_digit()),
            "a phone number is 7 or more digits"
        );
        secret(PHONE_NUMBER, number);
        self.server
            .register(number, name)
            .context("register the account")?;
        Phone::start(self.server.clone(), number, name).await
    }
}

impl Network {
    /// The ids of the messages the device `(number, device)` has not acknowledged yet (neither
    /// a delivery receipt nor an ack): what the server would deliver again on its next login.
    pub fn unacknowledged(&self, number: &str, device: u16) -> Vec<String> {
        self.server.unacknowledged(number, device)
    }

    /// Handshakes this server began (answered a client hello) and completed (read a client's
    /// login payload). A client that refuses the server's certificate begins and never completes.
    pub fn handshakes(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.server.hellos.load(Relaxed),
            self.server.handshakes.load(Relaxed),
        )
    }

    /// The phone removes its companion `device` (Linked devices → Log out): the device is told
    /// it was removed and refused from then on.
    pub fn unlink(&self, number: &str, device: u16) {
        self.server.unlink(number, device);
    }

    /// Another client takes over the device's connection (WhatsApp's "stream replaced"). False
    /// when the device was not connected.
    pub fn take_over(&self, number: &str, device: u16) -> bool {
        self.server.end_socket(
            number,
            device,
            Some(server::stream_error_conflict("replaced")),
        )
    }

    /// The device's socket drops, as a network fault would (no goodbye). False when it was not
    /// connected.
    pub fn drop_socket(&self, number: &str, device: u16) -> bool {
        self.server.end_socket(number, device, None)
    }

    /// Whether the device is logged in now.
    pub fn is_online(&self, number: &str, device: u16) -> bool {
        self.server.is_online(number, device)
    }

    /// Deliver `node` to the device `(number, device)` as the server would (kept until the
    /// device acknowledges it when it has an `id`): for stanzas no flow here produces.
    pub fn inject(&self, number: &str, device: u16, node: whatsapp_rust::wacore_binary::Node) {
        self.server.inject(number, device, node);
    }

    /// Garble the next message the server delivers to `(number, device)`: it cannot decrypt it
    /// (and asks the sender to resend).
    pub fn garble_next_to(&self, number: &str, device: u16) {
        self.server.state().garble.insert(server::state::Addr {
            user: number.to_owned(),
            device,
        });
    }

    /// Hold retry receipts (requests to resend) instead of relaying them, until
    /// [`Network::release_retries`]: the undecryptable message stays a gap meanwhile.
    pub fn hold_retries(&self) {
        self.server
            .state()
            .held_retries
            .get_or_insert_with(Vec::new);
    }

    /// Relay the retry receipts held since [`Network::hold_retries`], and relay them at once
    /// from now on. Returns how many were held.
    pub fn release_retries(&self) -> usize {
        let mut st = self.server.state();
        let held = st.held_retries.take().unwrap_or_default();
        let n = held.len();
        for (to, id, node) in held {
            st.deliver(&to, id, "receipt", node);
        }
        n
    }

    /// How many retry receipts (requests to resend) the server received.
    pub fn retries(&self) -> u64 {
        self.server.state().retries
    }

    /// Offer `n` QR refs to each unpaired socket from now on (six by default). A client shows the
    /// first for 60 s and each further one for 20 s, then stops: with one, the QR expires in 60 s.
    pub fn set_qr_refs(&self, n: usize) {
        self.server.state().qr_refs = Some(n.max(1));
    }

    /// From now on, others receive the direct messages of the account `number` from its LID
    /// (`…@lid`, with `sender_pn` naming its number), as WhatsApp does for LID-addressed chats.
    pub fn address_by_lid(&self, number: &str) {
        self.server.state().lid_senders.insert(number.to_owned());
    }

    /// Refuse the next `times` logins of `(number, device)` with `<failure reason=…>`: 503 (try
    /// again), 405 (client outdated), 402 (temporarily banned), 401 (logged out), …
    pub fn refuse_login(&self, number: &str, device: u16, reason: u16, times: u32) {
        let addr = server::state::Addr {
            user: number.to_owned(),
            device,
        };
        self.server.state().refusals.insert(addr, (reason, times));
    }

    /// Stall (or stop stalling): new chat sockets are accepted and their handshake never
    /// answered, as an unreachable server behind a live load balancer would.
    pub fn stall(&self, on: bool) {
        self.server.state().stalled = on;
    }

    /// Forget every file the media host holds, as WhatsApp's media servers do after a while:
    /// downloads fail until a phone uploads the file again.
    pub fn expire_media(&self) {
        self.server.state().media.clear();
    }

    /// Arm `fault` for the next message the device `(number, device)` sends.
    pub fn arm(&self, number: &str, device: u16, fault: Fault) {
        self.server.arm(number, device, fault);
    }

    /// The companion devices linked to the account `number`.
    pub fn companions(&self, number: &str) -> Vec<u16> {
        self.server.companions(number)
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
