//! The account and chat a read covers (`account_id?`, `chat_id?` of the search tools and the
//! wait poll): checked for form before any connection is taken ([`RequestedScope`]); a named chat is
//! then looked up (with a named account's check, in one flight) and checked against the
//! viewer; without one, the account is looked up in the same flight as the read's query
//! ([`Scope::run`]).

use deadpool_postgres::GenericClient;
use wazap_shared::ErrorCode;
use wazap_shared::ids::{DEFAULT_ACCOUNT, is_chat_id, phone_digits};

use super::args;
use crate::archive::read::{self, ChatRef};
use crate::error::{Context as _, Error};
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
        query: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        read::in_account_if(self.unchecked, db, &self.account, context, query).await
    }
}

/// What a read asks to cover (`account_id?`, `chat_id?`), checked for form only, so that a
/// malformed one is refused before a pooled connection is taken.
pub(crate) struct RequestedScope {
    /// The account: named, or the one the arguments' ids (or cursor) name, or the default one.
    account: String,
    /// Named or not the default one: looked up (`account_not_found`).
    look_up: bool,
    chat: Option<ChatRef>,
}

impl RequestedScope {
    /// `invalid_argument` for a malformed account id, a chat that is neither a chat id nor a
    /// phone number, or arguments that name different accounts ([`args::account`]; `also`
    /// are the read's other arguments that name one, after `chat_id`).
    pub(crate) fn new(
        account_id: Option<&str>,
        chat_id: Option<&str>,
        also: &[(&'static str, Option<&str>)],
    ) -> Result<Self, Error> {
        let chat = chat_id
            .map(|c| {
                if is_chat_id(c) {
                    Ok(ChatRef::Opaque(c.to_owned()))
                } else if let Some(d) = phone_digits(c) {
                    Ok(ChatRef::Phone(d))
                } else {
                    Err(Error::invalid(
                        "chat_id",
                        "expected a chat_id or a phone number",
                    ))
                }
            })
            .transpose()?;
        let mut named = vec![("chat_id", args::of(chat_id))];
        named.extend_from_slice(also);
        let account = args::account(account_id, &named)?;
        Ok(Self {
            look_up: account_id.is_some() || account != DEFAULT_ACCOUNT,
            account,
            chat,
        })
    }

    /// The account asked for (named, or named by the arguments' ids, else the default one).
    pub(crate) fn account(&self) -> &str {
        &self.account
    }

    /// The scope: without a chat, the account, looked up later with the read's query
    /// ([`Scope::run`]); with one, that chat if the viewer may read it, looked up now (in one
    /// flight with the account's check when it is named or not the default one:
    /// `account_not_found` first, else `chat_not_found`).
    pub(crate) async fn scope(
        self,
        db: &impl GenericClient,
        viewer: &Viewer,
        context: &'static str,
    ) -> Result<Scope, Error> {
        let Some(chat_ref) = self.chat else {
            return Ok(Scope {
                account: self.account,
                chat: None,
                unchecked: true,
            });
        };
        let find = async {
            read::find_chat(db, &self.account, &chat_ref)
                .await
                .context(context)
        };
        let found = read::in_account_if(self.look_up, db, &self.account, context, find).await?;
        let chat = found
            .filter(|c| viewer.can_read_chat(&c.chat_id))
            .ok_or_else(no_chat)?;
        Ok(Scope {
            account: chat.account_id,
            chat: Some(chat.chat_id),
            unchecked: false,
        })
    }
}

/// `chat_not_found` for a chat outside the scope or missing (the same answer either way).
fn no_chat() -> Error {
    Error::new(ErrorCode::ChatNotFound, "no such chat")
}
