//! `read_messages` (DESIGN §5.1): a chat's messages oldest to newest (the latest page, or the
//! page before a message, asking the phone for older history when the archive runs out), or
//! `"status"` for recent status stories; with optional photo previews, always the session's
//! sync state, and this connection's `unconfirmed_sends` to the chat.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use wazap_shared::ErrorCode;
use wazap_shared::ids::{DEFAULT_ACCOUNT, STATUS_CHAT, is_chat_id, is_message_id, phone_digits};
use wazap_shared::wire::SyncState;
use wazap_shared::wire::read::{
    DEFAULT_LIMIT, MAX_LIMIT, MAX_PREVIEWS, OlderHistory, Preview, ReadMessagesRequest,
    ReadMessagesResponse, UnconfirmedSend,
};

use super::args;
use crate::archive::read::messages::{self, Anchor, ReadMessage};
use crate::archive::read::{self, ChatRef};
use crate::error::{Context as _, Error};
use crate::state::AppState;
use crate::viewer::Viewer;

const CONTEXT: &str = "read_messages";
/// How long a read waits for the phone's older history.
const OLDER_WAIT: Duration = Duration::from_secs(30);
/// Default and largest `hours` for status stories.
const MAX_HOURS: u32 = 24;

/// A request's arguments, checked (before a pooled connection is taken).
struct Args {
    limit: u32,
    /// The account, not looked up yet: named, or the chat id's ([`args::account`]).
    account: String,
    /// `None` for `"status"`.
    chat: Option<ChatRef>,
    /// Named, or not the default one (which always exists): looked up (`account_not_found`),
    /// in the same flight as the read's first query ([`Args::checked`]).
    look_up: bool,
}

impl Args {
    /// `query`, after the account's check when it needs one (one round trip for both).
    async fn checked<T>(
        &self,
        db: &deadpool_postgres::Client,
        query: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        read::in_account_if(self.look_up, db, &self.account, CONTEXT, query).await
    }
}

/// What a read found, before it is shaped into the answer ([`respond`]).
struct Page {
    account: String,
    chat_id: String,
    found: Vec<ReadMessage>,
    previews: Vec<Preview>,
    older: Option<OlderHistory>,
    omitted: Option<u32>,
    unconfirmed: Vec<UnconfirmedSend>,
}

/// Read a chat (opaque id, phone number or `"status"`).
pub async fn handle(
    state: &AppState,
    viewer: &Viewer,
    req: ReadMessagesRequest,
) -> Result<ReadMessagesResponse, Error> {
    let args = checked(&req)?;
    let inside = args::viewer_in(viewer, &args.account)?;
    let viewer: &Viewer = &inside;
    let db = read::connection(&state.db, CONTEXT).await?;
    let page = match &args.chat {
        None => {
            let status = read_status(&db, viewer, &args, &req);
            args.checked(&db, status).await?
        }
        Some(chat_ref) => read_chat(state, db, viewer, chat_ref, &args, &req).await?,
    };
    let sync = state.sync_state(&page.account).await;
    Ok(respond(state, sync, page, &req))
}

/// The arguments' checks, each naming its field.
fn checked(req: &ReadMessagesRequest) -> Result<Args, Error> {
    let limit = args::limit(req.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let status = req.chat_id == STATUS_CHAT;
    if req.types.as_ref().is_some_and(Vec::is_empty) {
        return Err(Error::invalid(
            "types",
            "give at least one type, or omit it",
        ));
    }
    match req.hours {
        Some(_) if !status => {
            return Err(Error::invalid(
                "hours",
                "only valid with chat_id \"status\"",
            ));
        }
        Some(h) if !(1..=MAX_HOURS).contains(&h) => {
            return Err(Error::invalid("hours", "expected 1–24"));
        }
        _ => {}
    }
    if let Some(b) = &req.before
        && (status || !is_message_id(b))
    {
        return Err(Error::invalid(
            "before",
            "expected a message_id of this chat (not valid with \"status\")",
        ));
    }
    let chat = if status {
        None
    } else if is_chat_id(&req.chat_id) {
        Some(ChatRef::Opaque(req.chat_id.clone()))
    } else if let Some(d) = phone_digits(&req.chat_id) {
        Some(ChatRef::Phone(d))
    } else {
        return Err(Error::invalid(
            "chat_id",
            "expected a chat_id, a phone number or \"status\"",
        ));
    };
    let chat_id = matches!(chat, Some(ChatRef::Opaque(_))).then_some(req.chat_id.as_str());
    let account = args::account(
        req.account_id.as_deref(),
        &[
            ("chat_id", args::of(chat_id)),
            ("before", args::of(req.before.as_deref())),
        ],
    )?;
    Ok(Args {
        limit,
        look_up: req.account_id.is_some() || account != DEFAULT_ACCOUNT,
        account,
        chat,
    })
}

/// Status stories posted in the last `hours`, newest first.
async fn read_status(
    db: &deadpool_postgres::Client,
    viewer: &Viewer,
    args: &Args,
    req: &ReadMessagesRequest,
) -> Result<Page, Error> {
    let account = args.account.clone();
    let since =
        chrono::Utc::now() - chrono::Duration::hours(i64::from(req.hours.unwrap_or(MAX_HOURS)));
    let types = req.types.as_deref();
    let (found, total) = messages::stories(db, viewer, &account, since, types, args.limit)
        .await
        .context(CONTEXT)?;
    let previews = if req.include_previews.unwrap_or(false) {
        previews(db, &account, &found).await?
    } else {
        Vec::new()
    };
    let count = found.len() as u32;
    Ok(Page {
        account,
        chat_id: STATUS_CHAT.to_owned(),
        found,
        previews,
        older: None,
        omitted: Some(total.saturating_sub(count)),
        unconfirmed: Vec::new(),
    })
}

/// A chat's page: the latest, or the one before `req.before` (asking the phone for older
/// history when the archive runs out), with this connection's unconfirmed sends to it.
async fn read_chat(
    state: &AppState,
    db: deadpool_postgres::Client,
    viewer: &Viewer,
    chat_ref: &ChatRef,
    args: &Args,
    req: &ReadMessagesRequest,
) -> Result<Page, Error> {
    let (types, limit) = (req.types.as_deref(), args.limit);
    let want_previews = req.include_previews.unwrap_or(false);
    // The common read, the latest page of a chat named by its own id, goes out in one flight
    // with the chat lookup, guessing that the id names that very chat (not one merged into
    // another). Nothing read on the guess is used unless the lookup confirms it and the viewer
    // may read the chat; a wrong guess reads again below.
    let account = &args.account;
    let guess = match (chat_ref, &req.before) {
        (ChatRef::Opaque(id), None) => Some((account.clone(), id.clone())),
        _ => None,
    };
    let find = args.checked(&db, async {
        read::find_chat(&db, account, chat_ref)
            .await
            .context(CONTEXT)
    });
    let (chat, guessed) = match &guess {
        Some((acc, id)) => {
            let (chat, page, unconfirmed) = tokio::join!(
                find,
                messages::page(&db, viewer, acc, id, None, types, limit),
                crate::send::outbox::unconfirmed(&db, &viewer.connection_id, acc, id),
            );
            let confirmed =
                matches!(&chat, Ok(Some(c)) if c.account_id == *acc && c.chat_id == *id);
            (chat, confirmed.then_some((page, unconfirmed)))
        }
        None => (find.await, None),
    };
    let chat = chat?
        .filter(|c| viewer.can_read_chat(&c.chat_id))
        .ok_or_else(|| Error::new(ErrorCode::ChatNotFound, "no such chat"))?;
    let (account, chat_id) = (chat.account_id, chat.chat_id);
    let anchor: Option<Anchor> = match &req.before {
        Some(b) => Some(
            messages::anchor(&db, viewer, &account, &chat_id, b)
                .await
                .context(CONTEXT)?
                .ok_or_else(|| Error::invalid("before", "not a message of this chat"))?,
        ),
        None => None,
    };
    let (found, unconfirmed) = match guessed {
        Some((page, unconfirmed)) => (page, unconfirmed),
        // Both on one connection at once: tokio-postgres pipelines them, one round trip for two.
        None => tokio::join!(
            messages::page(&db, viewer, &account, &chat_id, anchor, types, limit),
            crate::send::outbox::unconfirmed(&db, &viewer.connection_id, &account, &chat_id),
        ),
    };
    let (mut found, mut unconfirmed) = (found.context(CONTEXT)?, unconfirmed.context(CONTEXT)?);
    let mut older = None;
    let mut db = db;
    if anchor.is_some() && (found.len() as u32) < limit {
        // The archive ran out: ask the phone, without holding a connection while it answers.
        drop(db);
        // Only the worker serving the account reaches its phone.
        let asked = match state.served.get(&account) {
            Some(a) => {
                a.connector
                    .fetch_older(&account, &chat_id, OLDER_WAIT)
                    .await
            }
            None => Ok(0),
        };
        let received = match asked {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(chat.id = %chat_id, error = %e, "asking the phone for older history failed");
                0
            }
        };
        older = Some(OlderHistory {
            asked_phone: true,
            received,
        });
        db = read::connection(&state.db, CONTEXT).await?;
        if received > 0 {
            found = messages::page(&db, viewer, &account, &chat_id, anchor, types, limit)
                .await
                .context(CONTEXT)?;
        }
        // Sends may have been echoed while the phone answered.
        unconfirmed =
            crate::send::outbox::unconfirmed(&db, &viewer.connection_id, &account, &chat_id)
                .await
                .context(CONTEXT)?;
    }
    let previews = if want_previews {
        previews(&db, &account, &found).await?
    } else {
        Vec::new()
    };
    Ok(Page {
        account,
        chat_id,
        found,
        previews,
        older,
        omitted: None,
        unconfirmed,
    })
}

/// JPEG previews of the previewable photos among `found`, newest first, at most
/// [`MAX_PREVIEWS`].
async fn previews(
    db: &deadpool_postgres::Client,
    account: &str,
    found: &[ReadMessage],
) -> Result<Vec<Preview>, Error> {
    let mut ids: Vec<(chrono::DateTime<chrono::Utc>, String)> = found
        .iter()
        .filter(|m| m.previewable)
        .map(|m| (m.message.timestamp, m.message.message_id.clone()))
        .collect();
    ids.sort_by_key(|(ts, _)| std::cmp::Reverse(*ts));
    let ids: Vec<String> = ids.into_iter().map(|(_, id)| id).collect();
    let thumbs = messages::thumbnails(db, account, &ids)
        .await
        .context(CONTEXT)?;
    Ok(ids
        .iter()
        .filter_map(|id| thumbs.iter().find(|(m, _)| m == id))
        .filter(|(_, bytes)| bytes.starts_with(&[0xFF, 0xD8, 0xFF]))
        .take(MAX_PREVIEWS)
        .map(|(id, bytes)| Preview {
            message_id: id.clone(),
            mime_type: "image/jpeg".to_owned(),
            data_base64: B64.encode(bytes),
        })
        .collect())
}

/// Shape a page into the answer, with the session's sync state and its caveats.
fn respond(
    state: &AppState,
    sync: SyncState,
    page: Page,
    req: &ReadMessagesRequest,
) -> ReadMessagesResponse {
    let connector_notes = (state.served.get(&page.account))
        .map(|a| a.connector.notes(&page.account))
        .unwrap_or_default();
    let notes = sync_note(sync)
        .into_iter()
        .chain(connector_notes)
        .map(str::to_owned)
        .collect();
    let messages: Vec<_> = page.found.into_iter().map(|m| m.message).collect();
    ReadMessagesResponse {
        account_id: page.account,
        chat_id: page.chat_id,
        count: messages.len() as u32,
        messages,
        sync,
        preview_count: page.previews.len() as u32,
        notes,
        unconfirmed_sends: page.unconfirmed,
        older: page.older,
        omitted: page.omitted,
        types: req.types.clone(),
        hours: req.hours,
        previews: page.previews,
    }
}

/// What to tell the agent about a session that is not live.
fn sync_note(sync: SyncState) -> Option<&'static str> {
    match sync {
        SyncState::Live | SyncState::Demo => None,
        SyncState::CatchingUp => {
            Some("WhatsApp is still catching up; recent messages may still be arriving.")
        }
        SyncState::Offline => Some("WhatsApp is offline; newer messages may be missing."),
        SyncState::Paused => {
            Some("The owner paused the WhatsApp connection; newer messages may be missing.")
        }
        SyncState::Unpaired => Some("No phone is linked; newer messages may be missing."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_only_when_not_live() {
        assert_eq!(sync_note(SyncState::Live), None);
        assert_eq!(sync_note(SyncState::Demo), None);
        assert!(sync_note(SyncState::Offline).unwrap().contains("offline"));
    }
}
