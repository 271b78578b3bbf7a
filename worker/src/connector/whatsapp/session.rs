//! The session's run loop: one whatsapp-rust client at a time over the device store, started,
//! stopped and replaced on the owner's actions (pause, resume, unlink, pair) and on the
//! library's terminal events. The library reconnects a live client itself (Fibonacci backoff,
//! capped at 15 min); this loop restarts a client whose run ended unexpectedly, with its own
//! backoff ([`restart_delay`]). Logged out and stream replaced never restart by themselves.
//!
//! Each client reports its events to [`Forward`] ([`super::shared`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use whatsapp_rust::bot::{Bot, BotHandle};
use whatsapp_rust::pair_code::PairCodeOptions;
use whatsapp_rust::wacore::store::DevicePropsOverride;
use whatsapp_rust::wacore::store::device::default_history_sync_config;

use super::hook::ArchiveHook;
use super::network::Connect as _;
use super::shared::{Forward, Shared};
use super::status::{Phase, Status};
use super::store::{StoreLock, StorePaths};
use crate::connector::{AccountAction, ControlError};

/// How long a pairing-code request waits for the socket.
const SOCKET_WAIT: Duration = Duration::from_secs(30);
/// How long shutdown waits for the client to flush and stop.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// An owner action for the loop, with where to answer.
pub struct Control {
    /// The action.
    pub action: AccountAction,
    /// The answer.
    pub reply: oneshot::Sender<Result<(), ControlError>>,
}

/// The delay before restarting a client whose run ended unexpectedly, after `attempt` earlier
/// restarts: 1 s doubling to at most 5 min.
pub fn restart_delay(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(9)).min(Duration::from_secs(300))
}

/// The run loop, from the client [`start`]ed at start-up (if it could be). Owns the store lock
/// for its whole life.
pub async fn run(
    shared: Arc<Shared>,
    paths: StorePaths,
    lock: StoreLock,
    mut controls: mpsc::Receiver<Control>,
    shutdown: CancellationToken,
    first: Option<BotHandle>,
) {
    let mut want_running = true;
    let mut running = first;
    let mut attempt = 0u32;
    loop {
        if want_running && running.is_none() && !shared.status().paused {
            match start(&shared, &paths, &lock).await {
                Ok(h) => running = Some(h),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "the WhatsApp client could not start");
                    shared.status().pairing.detail =
                        Some("the WhatsApp device store could not be opened; retrying".into());
                    let delay = restart_delay(attempt);
                    attempt += 1;
                    tokio::select! {
                        () = tokio::time::sleep(delay) => continue,
                        () = shutdown.cancelled() => return,
                    }
                }
            }
        }
        let ended = async {
            match running.as_mut() {
                Some(h) => h.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => {
                if let Some(h) = running.take() {
                    let _ = tokio::time::timeout(STOP_WAIT, h.shutdown()).await;
                }
                shared.set_client(None);
                return;
            }
            () = ended => {
                running = None;
                shared.set_client(None);
                let phase = shared.status().phase;
                tracing::info!(phase = ?phase, "the WhatsApp client stopped");
                match phase {
                    Phase::LoggedOut => {
                        want_running = false;
                        if let Err(e) = paths.wipe(&lock) {
                            tracing::warn!(error = %format!("{e:#}"), "could not delete the dead device store");
                        }
                    }
                    Phase::Replaced | Phase::Refused | Phase::Unpaired => want_running = false,
                    _ => {
                        let delay = restart_delay(attempt);
                        attempt += 1;
                        shared.status().phase = Phase::Offline;
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            () = shutdown.cancelled() => return,
                        }
                    }
                }
            }
            Some(c) = controls.recv() => {
                let answer = control(&shared, &paths, &lock, &mut running, &mut want_running, c.action).await;
                if want_running {
                    attempt = 0;
                }
                let _ = c.reply.send(answer);
            }
        }
    }
}

/// Build and start a client over the store; the state says `unpaired` or `offline` from here.
pub async fn start(
    shared: &Arc<Shared>,
    paths: &StorePaths,
    lock: &StoreLock,
) -> anyhow::Result<BotHandle> {
    let store = paths.open(lock).await?;
    let mut sync = default_history_sync_config();
    sync.on_demand_ready = Some(true);
    sync.complete_on_demand_ready = Some(true);
    let net = &shared.network;
    let mut builder = Bot::builder()
        .with_backend_arc(store)
        .with_transport_factory(net.transport())
        .with_http_client(net.http())
        .with_event_handler(Forward(shared.clone()))
        .with_inbound_durability_hook(ArchiveHook {
            archive: shared.archive.clone(),
            account: shared.account.clone(),
            linked: shared.linked.clone(),
            redeliver: shared.redeliver.clone(),
            stall: shared.stall.clone(),
        })
        .with_device_props(
            DevicePropsOverride::new()
                .with_os("wazap")
                .with_history_sync_config(sync),
        );
    if let Some(version) = net.version() {
        builder = builder.with_version(version);
    }
    let bot = builder.build().await?;
    let client = bot.client();
    let paired = client.pn().is_some();
    shared.status().started(paired);
    shared.set_client(Some(client));
    tracing::info!(paired, "WhatsApp client starting");
    Ok(bot.spawn())
}

/// Carry out one owner action.
async fn control(
    shared: &Arc<Shared>,
    paths: &StorePaths,
    lock: &StoreLock,
    running: &mut Option<BotHandle>,
    want_running: &mut bool,
    action: AccountAction,
) -> Result<(), ControlError> {
    let linked = || {
        shared.client().is_some_and(|c| c.pn().is_some())
            || matches!(
                shared.status().phase,
                Phase::Connected | Phase::Offline | Phase::Replaced
            )
    };
    match action {
        AccountAction::Pause => {
            shared.status().paused = true;
            *want_running = false;
            stop(shared, running).await;
            Ok(())
        }
        AccountAction::Resume => {
            let mut s = shared.status();
            s.paused = false;
            if matches!(s.phase, Phase::Replaced | Phase::Refused) {
                s.phase = Phase::Starting;
            }
            *want_running = true;
            Ok(())
        }
        AccountAction::Unlink => {
            if running.is_none()
                && let Ok(h) = start(shared, paths, lock).await
            {
                // Paused or stopped: connect briefly so the phone forgets this device too.
                let client = h.client();
                *running = Some(h);
                if client.pn().is_some() && client.wait_for_connected(SOCKET_WAIT).await.is_err() {
                    tracing::warn!(
                        "unlinking offline: the phone keeps showing the device until it expires"
                    );
                }
            }
            if let Some(c) = shared.client().filter(|c| c.pn().is_some()) {
                c.logout().await;
            }
            stop(shared, running).await;
            paths.wipe(lock).map_err(ControlError::Failed)?;
            let mut s = shared.status();
            *s = Status::default();
            s.phase = Phase::Unpaired;
            s.pairing.detail = Some("unlinked; start pairing to link a phone".into());
            *want_running = false;
            Ok(())
        }
        AccountAction::PairWithQr => {
            if linked() {
                return Err(ControlError::NotNow(
                    "a phone is already linked; unlink it first",
                ));
            }
            if running.is_none() {
                *want_running = true;
                shared.status().paused = false;
            }
            Ok(())
        }
        AccountAction::PairWithCode { phone } => {
            if linked() {
                return Err(ControlError::NotNow(
                    "a phone is already linked; unlink it first",
                ));
            }
            if phone.len() < 7 || phone.len() > 15 || !phone.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ControlError::NotNow(
                    "expected the phone number as 7-15 digits with country code",
                ));
            }
            shared.status().paused = false;
            *want_running = true;
            if running.is_none() {
                *running = Some(
                    start(shared, paths, lock)
                        .await
                        .map_err(ControlError::Failed)?,
                );
            }
            let client = shared
                .client()
                .ok_or(ControlError::NotNow("the client is not running"))?;
            client
                .wait_for_socket(SOCKET_WAIT)
                .await
                .map_err(|_| ControlError::NotNow("WhatsApp cannot be reached right now"))?;
            let options = PairCodeOptions {
                phone_number: phone,
                ..PairCodeOptions::default()
            };
            client
                .pair_with_code(options)
                .await
                .map(|_| ())
                .map_err(|e| ControlError::Failed(anyhow::anyhow!("pairing code request: {e}")))
        }
    }
}

/// Stop the running client (flushing its state) and forget it.
async fn stop(shared: &Shared, running: &mut Option<BotHandle>) {
    if let Some(h) = running.take() {
        let _ = tokio::time::timeout(STOP_WAIT, h.shutdown()).await;
    }
    shared.set_client(None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_to_five_minutes() {
        let d: Vec<u64> = (0..12).map(|a| restart_delay(a).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
    }
}
