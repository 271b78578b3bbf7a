//! The owner's accounts: the registry (list, add, remove — [`crate::accounts`]) and, on the
//! account page, the linked account's state and pairing info and the owner's actions (pause,
//! resume, unlink, pair by QR or code) carried out by the connector. A refusal the connector
//! explains (e.g. `demo` cannot pair) is shown to the owner.

use deadpool_postgres::{GenericClient, Pool};
use wazap_shared::ErrorCode;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::accounts::{
    AccountList, AccountSummary, AddAccountRequest, RemoveAccountRequest, RemovedAccount,
};
use wazap_shared::wire::owner::{AccountActionRequest, AccountView};

use crate::accounts::{self, NewAccount, RegistryError, Removal};
use crate::config::ConnectorKind;
use crate::connector::{AccountAction, ControlError, DynConnector};
use crate::db::account_status::{self, Recorded};
use crate::error::Error;

/// What a worker's own connectors say of the accounts it serves (`None`: not served here).
pub type Live<'a> = &'a (dyn Fn(&str) -> Option<SyncState> + Sync);

/// Every account with its truth now: its state from this worker's connector for the accounts
/// it serves, else as recorded by the worker serving it, else `offline` (no worker serves it);
/// since when, its history sync and its archive's counts as recorded ([`account_status`]).
pub async fn list(db: &Pool, live: Live<'_>) -> Result<AccountList, Error> {
    let client = db.get().await?;
    let all = accounts::list(&client).await.map_err(refusal)?;
    let mut recorded = account_status::all(&client).await?;
    Ok(AccountList {
        accounts: all
            .into_iter()
            .map(|a| {
                let r = recorded.remove(&a.account_id).unwrap_or_default();
                let state = (live(&a.account_id))
                    .or(r.state)
                    .unwrap_or(SyncState::Offline);
                summary(state, r, a)
            })
            .collect(),
    })
}

/// Add `req`'s account; a worker takes it within a second or two ([`crate::fleet`]), so it
/// is `offline` until then.
pub async fn add(db: &Pool, req: AddAccountRequest) -> Result<AccountSummary, Error> {
    let kind = req
        .connector
        .map(|c| {
            ConnectorKind::parse(&c).ok_or_else(|| Error::invalid("connector", ConnectorKind::RULE))
        })
        .transpose()?;
    let client = db.get().await?;
    let added = accounts::add(
        &client,
        NewAccount {
            account_id: req.account_id,
            display_name: req.display_name,
            connector: kind,
        },
    )
    .await
    .map_err(refusal)?;
    tracing::info!(account.id = %added.account_id, "account added");
    Ok(summary(SyncState::Offline, Recorded::default(), added))
}

/// Remove `req`'s account, keeping or deleting its archive.
pub async fn remove(db: &Pool, req: RemoveAccountRequest) -> Result<RemovedAccount, Error> {
    let how = if req.delete_archive {
        Removal::DeleteArchive {
            confirm: req.confirm,
        }
    } else if req.confirm.is_some() {
        return Err(Error::invalid("confirm", "only with delete_archive"));
    } else {
        Removal::KeepArchive
    };
    let mut client = db.get().await?;
    let gone = accounts::remove(&mut client, &req.account_id, how)
        .await
        .map_err(refusal)?;
    Ok(RemovedAccount {
        account_id: req.account_id,
        deleted: req.delete_archive,
        messages: gone.messages,
        chats: gone.chats,
        files: gone.files,
        stories: gone.stories,
    })
}

/// An account as the owner sees it, in `state`, with what is recorded of it.
fn summary(state: SyncState, r: Recorded, a: accounts::Account) -> AccountSummary {
    AccountSummary {
        state,
        connector: a.connector.map(|k| k.as_str().to_owned()),
        phone: a.phone,
        created_at: a.created_at,
        removed_at: a.removed_at,
        display_name: a.display_name,
        account_id: a.account_id,
        since: r.since,
        history: r.history,
        archive: r.archive,
    }
}

/// A registry refusal in DESIGN §7's words: a bad or clashing argument is
/// `invalid_argument` (a deletion not confirmed says what would go), a missing account
/// `account_not_found`.
fn refusal(e: RegistryError) -> Error {
    match e {
        RegistryError::Invalid { field, rule } => Error::invalid(field, rule),
        RegistryError::Exists => Error::invalid("account_id", &e.to_string()),
        RegistryError::Default => Error::invalid("account_id", &e.to_string()),
        RegistryError::Confirm { .. } => Error::invalid("confirm", &e.to_string()),
        RegistryError::NotFound => Error::new(ErrorCode::AccountNotFound, "no such account"),
        RegistryError::Db(e) => Error::internal("account registry", e),
    }
}

/// `id` when it is an account id, else the refusal naming `account_id`.
pub fn checked_id(id: &str) -> Result<&str, Error> {
    if wazap_shared::ids::is_account_id(id) {
        Ok(id)
    } else {
        Err(Error::invalid(
            "account_id",
            wazap_shared::ids::ACCOUNT_ID_RULE,
        ))
    }
}

/// Account `id` (served by `connector`) as of now.
pub fn view(connector: &DynConnector, id: &str) -> AccountView {
    let pairing = connector.pairing(id);
    AccountView {
        account_id: id.to_owned(),
        state: connector.state(id),
        qr: pairing.qr,
        qr_expires_at: pairing.qr_expires_at,
        pairing_code: pairing.pairing_code,
        detail: pairing.detail,
        notes: connector.notes(id).into_iter().map(str::to_owned).collect(),
    }
}

/// Carry out `req` on account `id` (served by `connector`, with `db` fenced by its lease); the
/// account afterwards.
///
/// A pause is kept in the registry ([`accounts::set_paused`]) so the account stays paused
/// across a restart or a takeover. It is written before the connection stops and cleared only
/// after a resume, unlink or pairing succeeded: whichever step fails, the account errs towards
/// staying disconnected, never towards reconnecting a phone the owner paused.
pub async fn act(
    connector: &DynConnector,
    db: &Pool,
    id: &str,
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
    let pausing = action == AccountAction::Pause;
    let client = db.get().await?;
    if pausing {
        keep_paused(&client, id, true).await?;
    }
    let done = match connector.control(id, action).await {
        Ok(()) => Ok(()),
        Err(ControlError::NotNow(why)) => Err(Error::invalid("action", why)),
        Err(ControlError::Failed(e)) => Err(Error::internal("account action", e)),
    };
    // A refused pause leaves the account as it was; anything else that succeeded connects it
    // (or leaves nothing to pause).
    match (&done, pausing) {
        (Err(_), true) if connector.state(id) != SyncState::Paused => {
            keep_paused(&client, id, false).await?;
        }
        (Ok(()), false) => keep_paused(&client, id, false).await?,
        _ => {}
    }
    done?;
    tracing::info!(account.id = %id, action = %kind, "account action carried out");
    Ok(view(connector, id))
}

async fn keep_paused(db: &impl GenericClient, id: &str, paused: bool) -> Result<(), Error> {
    accounts::set_paused(db, id, paused)
        .await
        .map_err(|e| Error::internal("account pause", e))
}
