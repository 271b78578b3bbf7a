//! `wazap-worker link [--account ID] [--phone DIGITS]`: link a phone to an account from the
//! terminal. Opens the account's device store
//! (refused while a worker holds it), shows each QR code as text — or, with `--phone`, the
//! code to type on the phone — and returns once WhatsApp reports the device linked, after the
//! client flushed its keys. Everything goes to stderr; nothing here is logged.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wazap_shared::wire::SyncState;

use crate::archive::Archive;
use crate::connector::whatsapp::WhatsappConnector;
use crate::connector::whatsapp::status::Phase;
use crate::connector::{AccountAction, Connector as _, ControlError};
use crate::send::receipts::JournalReceipts;
use crate::supervise::Supervisor;
use crate::{Config, db};

/// How often the terminal view is refreshed.
const TICK: Duration = Duration::from_millis(500);
/// How long a linked device gets to log in before the command gives up.
const LOGIN_WAIT: Duration = Duration::from_secs(120);

/// Run the pairing until linked, failed or interrupted.
pub async fn link(config: &Config, account: &str, phone: Option<String>) -> anyhow::Result<()> {
    let pool = db::pool(&config.database_url, 4)?;
    db::migrate(&pool).await?;
    let registered = crate::accounts::get(&pool.get().await?, account).await;
    match registered {
        Ok(a) if a.removed_at.is_none() => {}
        Ok(_) | Err(crate::accounts::RegistryError::NotFound) => anyhow::bail!(
            "no account {account}: add it first with `wazap-worker account add --id {account}`"
        ),
        Err(e) => return Err(e.into()),
    }
    let stop = CancellationToken::new();
    super::run::cancel_on_signals(stop.clone());
    // The account's lease, as a worker would hold it: no worker serves the account (and
    // writes its archive) while this links it.
    let name = crate::lease::account_lease(account);
    let Some(held) = crate::lease::try_acquire(&pool, &name, &crate::lease::holder_name()).await?
    else {
        anyhow::bail!(
            "account {account} is served by a running worker: link it from the owner dashboard, \
             or stop the workers first"
        );
    };
    let session = CancellationToken::new();
    let supervisor = Supervisor::new(session.clone());
    held.spawn_keeper(pool.clone(), &supervisor);
    let fenced = db::fenced_pool(&config.database_url, 4, held.name(), held.epoch())?;
    let archive = Archive::start(fenced.clone(), account, &supervisor).await?;
    let receipts = Arc::new(JournalReceipts::new(fenced.clone()));
    let wa = WhatsappConnector::start(
        archive,
        fenced,
        &config.data_dir,
        config.whatsapp_network.clone(),
        receipts,
        false,
        &supervisor,
    )
    .await?;
    let result = tokio::select! {
        r = drive(&wa, account, phone, &stop) => r,
        reason = supervisor.failed() => Err(anyhow::anyhow!(reason)),
    };
    session.cancel();
    wa.stopped().await;
    held.release(&pool).await;
    result
}

/// Show codes until the device is linked and logged in.
async fn drive(
    wa: &WhatsappConnector,
    account: &str,
    phone: Option<String>,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    while wa.phase() == Phase::Starting {
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            () = stop.cancelled() => anyhow::bail!("interrupted"),
        }
    }
    if wa.phase() != Phase::Unpaired {
        anyhow::bail!(
            "a phone is already linked to this device store; unlink it from the dashboard \
             (or delete the store) before linking another"
        );
    }
    if let Some(phone) = phone {
        eprintln!("asking WhatsApp for a pairing code…");
        wa.control(account, AccountAction::PairWithCode { phone })
            .await
            .map_err(|e| match e {
                ControlError::NotNow(m) => anyhow::anyhow!(m),
                ControlError::Failed(e) => e,
            })?;
    }
    let mut shown_qr = None;
    let mut shown_code = None;
    let mut linked_at = None;
    loop {
        let pairing = wa.pairing(account);
        if pairing.qr.is_some() && pairing.qr != shown_qr && pairing.pairing_code.is_none() {
            let qr = pairing.qr.clone().unwrap_or_default();
            eprintln!(
                "{}\nscan with WhatsApp on the phone: Settings → Linked devices → Link a device",
                render(&qr)?
            );
            shown_qr = pairing.qr.clone();
        }
        if pairing.pairing_code.is_some() && pairing.pairing_code != shown_code {
            eprintln!(
                "on the phone: Linked devices → Link a device → Link with phone number instead, \
                 then type: {}",
                pairing.pairing_code.clone().unwrap_or_default()
            );
            shown_code = pairing.pairing_code.clone();
        }
        match (wa.phase(), wa.state(account)) {
            (_, SyncState::Live | SyncState::CatchingUp) => {
                eprintln!("linked; start the worker (wazap-worker serve) to sync");
                return Ok(());
            }
            (Phase::Offline, _) => {
                let since = *linked_at.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() > LOGIN_WAIT {
                    anyhow::bail!("linked, but WhatsApp did not let the device log in");
                }
            }
            (Phase::Unpaired, _) if pairing.qr.is_none() && pairing.pairing_code.is_none() => {
                if let Some(detail) = pairing.detail.filter(|d| d.contains("expired")) {
                    anyhow::bail!("{detail}: run link again");
                }
            }
            (Phase::LoggedOut | Phase::Replaced | Phase::Refused, _) => {
                anyhow::bail!(
                    "{}",
                    pairing.detail.unwrap_or_else(|| "linking failed".into())
                );
            }
            _ => {}
        }
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            () = stop.cancelled() => anyhow::bail!("interrupted before the phone was linked"),
        }
    }
}

/// `payload` as a QR code drawn with Unicode half blocks (two rows per line).
pub fn render(payload: &str) -> anyhow::Result<String> {
    let code = qrcode::QrCode::new(payload.as_bytes())
        .map_err(|e| anyhow::anyhow!("the pairing payload does not fit a QR code: {e}"))?;
    Ok(code
        .render::<qrcode::render::unicode::Dense1x2>()
        .dark_color(qrcode::render::unicode::Dense1x2::Light)
        .light_color(qrcode::render::unicode::Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pairing_payload_renders_as_a_square_of_half_blocks() {
        let payload =
            "2@Qm9ndXMgcmVmIGZvciB0ZXN0cw==,bm9pc2Uga2V5,aWRlbnRpdHkga2V5,YWR2IHNlY3JldA==,1";
        let text = render(payload).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let width = lines[0].chars().count();
        assert!(
            width >= 21 + 8,
            "at least version 1 plus the quiet zone: {width}"
        );
        assert!(lines.iter().all(|l| l.chars().count() == width));
        assert_eq!(lines.len(), width.div_ceil(2), "two module rows per line");
        assert!(text.chars().any(|c| c == '█' || c == '▀' || c == '▄'));
    }
}
