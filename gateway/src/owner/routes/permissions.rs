//! One connection's page: the send-permission editor (mode; a searchable, paged chat list with
//! check boxes over what the connection may read; the count of selected chats, also those
//! outside the loaded page; save; "changed elsewhere — reopen" on 409), the read-scope editor
//! (which accounts; for each, all chats, the chats picked or all but those, by name with the
//! same picker, and optional dates), and the DESIGN §6 `POST /api/connections/send-permission`
//! (older body accepted) and `GET /api/chats` they search with.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json as value;
use wazap_shared::ErrorCode;
use wazap_shared::wire::grants::{AccountSelection, ChatSelection, ReadScope, SendPermission};
use wazap_shared::wire::owner::{
    ChatPage, ChatsRequest, Empty, OwnerListAccounts, OwnerListChats, OwnerListConnections,
    OwnerSetSendPermission, SendPermissionRequest,
};

use super::connections::{scope_summary, status};
use super::{OwnerError, json, page_session};
use crate::error::ApiError;
use crate::owner::OwnerState;
use crate::owner::html::{esc, json_island, page as frame};

/// Most chats the page names at once (the worker's limit for `named`).
const MAX_NAMED: usize = 10_000;

/// `POST /api/connections/send-permission` `{"id", "revision", "mode", "chats",
/// "expected_send_revision"}` (or the older `{"id", "revision", "chats"}`) → the new
/// `{mode, chats, revision}`; 409 with nothing changed when a revision is stale.
pub(super) async fn set_send_permission(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<SendPermission>, OwnerError> {
    let req: SendPermissionRequest = json(&body)?;
    Ok(Json(
        state
            .call::<OwnerSetSendPermission, _, _>(&headers, req)
            .await?,
    ))
}

/// `GET /api/chats` query.
#[derive(Debug, Deserialize)]
pub(super) struct ChatsQuery {
    /// Only chats this connection may read.
    connection_id: Option<String>,
    /// Only chats of this account.
    account_id: Option<String>,
    /// Search words.
    #[serde(default)]
    q: String,
    /// Chats to skip.
    #[serde(default)]
    offset: u32,
    /// Page size.
    limit: Option<u32>,
}

/// `GET /api/chats?connection_id=&account_id=&q=&offset=&limit=` → `{"chats", "total",
/// "named"}`.
pub(super) async fn chats(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Query(q): Query<ChatsQuery>,
) -> Result<Json<ChatPage>, OwnerError> {
    let req = ChatsRequest {
        connection_id: q.connection_id.filter(|c| !c.is_empty()),
        account_id: q.account_id.filter(|a| !a.is_empty()),
        query: q.q,
        offset: q.offset,
        limit: q.limit,
        named: Vec::new(),
    };
    Ok(Json(
        state.call::<OwnerListChats, _, _>(&headers, req).await?,
    ))
}

/// Every chat id `scope` lists, in any of its rules.
fn scope_chats(scope: &ReadScope) -> impl Iterator<Item = &String> {
    fn listed(c: &ChatSelection) -> &[String] {
        match c {
            ChatSelection::All => &[],
            ChatSelection::Selected { chats } | ChatSelection::AllExcept { chats } => chats,
        }
    }
    listed(&scope.chats)
        .iter()
        .chain(scope.per_account.values().flat_map(|r| listed(&r.chats)))
}

/// The accounts the read-scope editor offers: the registry's (`default` first), then any the
/// scope names that the registry no longer has, so that saving never drops one unseen.
fn editor_accounts(
    registry: Vec<wazap_shared::wire::accounts::AccountSummary>,
    scope: &ReadScope,
) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = registry
        .iter()
        .map(|a| value!({"id": a.account_id, "name": a.display_name, "removed": a.removed_at.is_some()}))
        .collect();
    let named = match &scope.accounts {
        AccountSelection::All => Vec::new(),
        AccountSelection::Only { accounts } => accounts.iter().collect(),
    };
    for id in named.into_iter().chain(scope.per_account.keys()) {
        if !out.iter().any(|a| a["id"] == id.as_str()) {
            out.push(value!({"id": id, "name": id, "removed": true}));
        }
    }
    out
}

/// `GET /connections/{id}`.
pub(super) async fn page(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let found = match state
        .call::<OwnerListConnections, _, _>(&headers, Empty {})
        .await
    {
        Ok(l) => l.connections.into_iter().find(|c| c.id == id),
        Err(e) => return e.into_response(),
    };
    let Some(c) = found else {
        return ApiError::new(ErrorCode::NotFound, "connection: not found")
            .with_status(StatusCode::NOT_FOUND)
            .into_response();
    };
    let mut wanted: Vec<String> = c.send_permission.chats.clone();
    for id in scope_chats(&c.read_scope) {
        if wanted.len() < MAX_NAMED && !wanted.contains(id) {
            wanted.push(id.clone());
        }
    }
    let named = ChatsRequest {
        limit: Some(1),
        named: wanted,
        ..Default::default()
    };
    let (names, registry) = tokio::join!(
        state.call::<OwnerListChats, _, _>(&headers, named),
        state.call::<OwnerListAccounts, _, _>(&headers, Empty {}),
    );
    let (names, registry) = match (names, registry) {
        (Ok(n), Ok(r)) => (n.named, r.accounts),
        (Err(e), _) | (_, Err(e)) => return e.into_response(),
    };
    let data = value!({
        "kind": "permissions",
        "id": c.id,
        "revision": c.revision,
        "send_revision": c.send_permission.revision,
        "mode": c.send_permission.mode,
        "selected": c.send_permission.chats,
        "names": names,
        "scope": c.read_scope,
        "accounts": editor_accounts(registry, &c.read_scope),
    });
    let active = status(&c) == "active";
    let disabled = if active { "" } else { " disabled" };
    let body = format!(
        r#"<p>{name} · {kind} · <span class="state {status}">{status}</span> · reads {scope} · credential revision <span id="revision">{rev}</span></p>
<section id="token-box" class="card token" hidden aria-live="polite">
<h2>New token</h2>
<p>The read scope changed, so this is a new credential: the old token no longer works and send permission is back to none. Copy the new token now; it is shown only this once.</p>
<pre><code id="new-token"></code></pre>
</section>
<section class="card" aria-labelledby="send-h">
<h2 id="send-h">May send to</h2>
<fieldset id="mode"{disabled}><legend>Mode</legend>
<label><input type="radio" name="mode" value="none"> nowhere</label>
<label><input type="radio" name="mode" value="selected"> only the chats checked below (1–100)</label>
<label><input type="radio" name="mode" value="all"> every chat it may read</label>
</fieldset>
<p><strong id="selected-count">0</strong> chats selected. <span id="selected-names"></span></p>
<div id="picker" class="picker"></div>
<button type="button" id="save-permission"{disabled}>Save send permission</button>
</section>
<section class="card" aria-labelledby="scope-h">
<h2 id="scope-h">May read</h2>
<p>Changing what it may read makes a new credential: its token stops working at once (you get a new one) and send permission goes back to none.</p>
<form id="scope-form">
<fieldset id="scope-accounts"{disabled}><legend>Accounts</legend>
<label><input type="radio" name="accounts" value="all"> every account, also those added later</label>
<label><input type="radio" name="accounts" value="only"> only the accounts checked below</label>
</fieldset>
<p id="later-rule" hidden></p>
<div id="scope-rules"></div>
<button type="submit" id="save-scope"{disabled}>Save read scope</button>
</form>
</section>
<script type="application/json" id="page-data">{data}</script>"#,
        name = esc(&c.name),
        kind = c.kind.as_str(),
        status = status(&c),
        scope = esc(&scope_summary(&c.read_scope)),
        rev = c.revision,
        data = json_island(&data),
    );
    frame(
        &format!("Connection “{}”", c.name),
        "/connections",
        Some(&csrf),
        &body,
    )
    .into_response()
}
