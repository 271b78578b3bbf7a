//! One connection's page: the send-permission editor (mode; a searchable, paged chat list with
//! check boxes over what the connection may read; the count of selected chats, also those
//! outside the loaded page; save; "changed elsewhere — reopen" on 409), the read-scope editor,
//! and the DESIGN §6 `POST /api/connections/send-permission` (older body accepted) and
//! `GET /api/chats` it searches with.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json as value;
use wazap_shared::ErrorCode;
use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendPermission};
use wazap_shared::wire::owner::{
    ChatPage, ChatsRequest, Empty, OwnerListChats, OwnerListConnections, OwnerSetSendPermission,
    SendPermissionRequest,
};

use super::connections::{scope_summary, status};
use super::{OwnerError, json, page_session};
use crate::error::ApiError;
use crate::owner::OwnerState;
use crate::owner::html::{esc, json_island, page as frame};

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
    /// Search words.
    #[serde(default)]
    q: String,
    /// Chats to skip.
    #[serde(default)]
    offset: u32,
    /// Page size.
    limit: Option<u32>,
}

/// `GET /api/chats?connection_id=&q=&offset=&limit=` → `{"chats", "total", "named"}`.
pub(super) async fn chats(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Query(q): Query<ChatsQuery>,
) -> Result<Json<ChatPage>, OwnerError> {
    let req = ChatsRequest {
        connection_id: q.connection_id.filter(|c| !c.is_empty()),
        query: q.q,
        offset: q.offset,
        limit: q.limit,
        named: Vec::new(),
    };
    Ok(Json(
        state.call::<OwnerListChats, _, _>(&headers, req).await?,
    ))
}

/// The parts of `scope` the chat editor leaves as they are: everything but `chats`.
fn scope_rest(scope: &ReadScope) -> serde_json::Value {
    let mut v = serde_json::to_value(scope).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("chats");
    }
    v
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
    let named = ChatsRequest {
        connection_id: None,
        limit: Some(1),
        named: c.send_permission.chats.clone(),
        ..Default::default()
    };
    let names = match state.call::<OwnerListChats, _, _>(&headers, named).await {
        Ok(p) => p.named,
        Err(e) => return e.into_response(),
    };
    let (scope_mode, scope_chats) = match &c.read_scope.chats {
        ChatSelection::All => ("all", Vec::new()),
        ChatSelection::Selected { chats } => ("selected", chats.clone()),
        ChatSelection::AllExcept { chats } => ("all_except", chats.clone()),
    };
    let data = value!({
        "kind": "permissions",
        "id": c.id,
        "revision": c.revision,
        "send_revision": c.send_permission.revision,
        "mode": c.send_permission.mode,
        "selected": c.send_permission.chats,
        "names": names,
        "scope_mode": scope_mode,
        "scope_chats": scope_chats,
        // What this editor does not edit (dates, accounts, per-account rules) goes back as it
        // was, so saving the chats never widens or narrows anything else.
        "scope_rest": scope_rest(&c.read_scope),
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
<fieldset{disabled}><legend>Chats</legend>
<label><input type="radio" name="scope" value="all"> all chats</label>
<label><input type="radio" name="scope" value="selected"> only the chats listed below</label>
<label><input type="radio" name="scope" value="all_except"> all chats except those listed below</label>
</fieldset>
<label for="scope-chats">Chat ids (one per line)</label>
<textarea id="scope-chats" rows="3"></textarea>
<button type="submit"{disabled}>Save read scope</button>
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
