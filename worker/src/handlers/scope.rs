//! The account and chat a read covers (`account_id?`, `chat_id?` of the search tools and the
//! wait poll): a named chat is looked up and checked against the viewer first; without one,
//! the account is looked up in the same flight as the read's query ([`Scope::run`]).

use deadpool_postgres::GenericClient;
use wazap_shared::ids::{is_chat_id, phone_digits};
use wazap_shared::{ErrorCode, RpcError};

use crate::archive::read::{self, ChatRef};
use crate::viewer::Viewer;

/// What a read covers: its account and, when `chat_id` was given, that chat.
pub(crate) struct Scope {
    /// The account.
    pub(crate) account: String,
    /// The chat, when the read is confined to one.
    pub(crate) chat: Option<String>,
    /// The account is not looked up yet: [`Scope::run`] checks it with the read's query.
    unchecked: bool,
}

impl Scope {
    /// Run `query` in this scope: when the account was not looked up yet (no chat named), in
    /// the same flight as that lookup ([`read::in_account`]).
    pub(crate) async fn run<T>(
        &self,
        db: &impl GenericClient,
        context: &'static str,
        query: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, RpcError> {
        if self.unchecked {
            read::in_account(db, &self.account, context, query).await
        } else {
            query.await
        }
    }
}

/// The scope of a read: the account named (or the default one), looked up with the search
/// itself; or, when `chat_id` is given, that chat (opaque id or phone number) if the viewer may
/// read it, looked up now: `chat_not_found` otherwise.
pub(crate) async fn scope_chat(
    db: &impl GenericClient,
    viewer: &Viewer,
    account_id: Option<&str>,
    chat_id: Option<&str>,
    context: &'static str,
) -> Result<Scope, RpcError> {
    let Some(chat_id) = chat_id else {
        return Ok(Scope {
            account: read::account_name(account_id)?,
            chat: None,
            unchecked: true,
        });
    };
    let requested = match account_id {
        Some(a) => Some(read::account(db, Some(a), context).await?),
        None => None,
    };
    let chat_ref = if is_chat_id(chat_id) {
        ChatRef::Opaque(chat_id.to_owned())
    } else if let Some(d) = phone_digits(chat_id) {
        ChatRef::Phone(d)
    } else {
        return Err(RpcError::invalid(
            "chat_id",
            "expected a chat_id or a phone number",
        ));
    };
    let chat = read::find_chat(db, requested.as_deref(), &chat_ref)
        .await
        .map_err(|e| read::internal(context, &e))?
        .filter(|c| viewer.can_read_chat(&c.chat_id))
        .ok_or_else(no_chat)?;
    Ok(Scope {
        account: chat.account_id,
        chat: Some(chat.chat_id),
        unchecked: false,
    })
}

/// `chat_not_found` for a chat outside the scope or missing (the same answer either way).
fn no_chat() -> RpcError {
    RpcError::new(ErrorCode::ChatNotFound, "no such chat")
}
