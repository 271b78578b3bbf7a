//! The linked account on the owner's account page: the connector's state and pairing info,
//! and the owner's actions (pause, resume, unlink, pair by QR or code) carried out by the
//! connector. A refusal the connector explains (e.g. `demo` cannot pair) is shown to the owner.

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_shared::wire::owner::{AccountActionRequest, AccountView};

use crate::connector::{AccountAction, ControlError, DynConnector};
use crate::error::Error;

/// The default account as of now.
pub fn view(connector: &DynConnector) -> AccountView {
    let pairing = connector.pairing(DEFAULT_ACCOUNT);
    AccountView {
        account_id: DEFAULT_ACCOUNT.to_owned(),
        state: connector.state(DEFAULT_ACCOUNT),
        qr: pairing.qr,
        qr_expires_at: pairing.qr_expires_at,
        pairing_code: pairing.pairing_code,
        detail: pairing.detail,
        notes: connector
            .notes(DEFAULT_ACCOUNT)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    }
}

/// Carry out `req` on the default account; the account afterwards.
pub async fn act(
    connector: &DynConnector,
    req: AccountActionRequest,
) -> Result<AccountView, Error> {
    let action = match req {
        AccountActionRequest::Pause => AccountAction::Pause,
        AccountActionRequest::Resume => AccountAction::Resume,
        AccountActionRequest::Unlink => AccountAction::Unlink,
        AccountActionRequest::PairWithQr => AccountAction::PairWithQr,
        AccountActionRequest::PairWithCode { phone } => {
            let digits = phone.trim().trim_start_matches('+');
            if !(7..=15).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Error::invalid(
                    "phone",
                    "expected the phone number's digits with country code",
                ));
            }
            AccountAction::PairWithCode {
                phone: digits.to_owned(),
            }
        }
    };
    let name = format!("{action:?}");
    let kind = name.split([' ', '{']).next().unwrap_or_default().to_owned();
    match connector.control(DEFAULT_ACCOUNT, action).await {
        Ok(()) => {
            tracing::info!(action = %kind, "account action carried out");
            Ok(view(connector))
        }
        Err(ControlError::NotNow(why)) => Err(Error::invalid("action", why)),
        Err(ControlError::Failed(e)) => Err(Error::internal("account action", e)),
    }
}
