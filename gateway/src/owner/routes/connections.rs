//! AI connections: the list page with the create form, and the API to list, create (token
//! shown once), rotate (new credential revision, new token once, send permission reset),
//! change the read scope (the same) and revoke. A connection an OAuth client was approved for
//! on the consent page names its client id.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use http::HeaderMap;
use wazap_shared::wire::grants::{AccountSelection, ChatSelection, ReadScope, SendMode};
use wazap_shared::wire::owner::{
    ConnectionList, CreateConnectionRequest, Empty, IssuedConnection, OwnerConnection,
    OwnerCreateConnection, OwnerListConnections, OwnerRevokeConnection, OwnerRotateConnection,
    OwnerSetReadScope, ReadScopeRequest, RevokeRequest, RotateRequest,
};

use super::{OwnerError, json, page_session};
use crate::owner::OwnerState;
use crate::owner::html::{esc, page as frame};

/// `GET /api/connections` → `{"connections": [{id, name, kind, revision, expires_at,
/// read_scope, send_permission: {mode, chats, revision}, …}]}` (DESIGN §6).
pub(super) async fn list(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
) -> Result<Json<ConnectionList>, OwnerError> {
    Ok(Json(
        state
            .call::<OwnerListConnections, _, _>(&headers, Empty {})
            .await?,
    ))
}

/// `POST /api/connections` `{"name", "kind", "expires_at", "read_scope"}` →
/// `{"connection", "token"}`; the token is never shown again.
pub(super) async fn create(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<IssuedConnection>, OwnerError> {
    let req: CreateConnectionRequest = json(&body)?;
    Ok(Json(
        state
            .call::<OwnerCreateConnection, _, _>(&headers, req)
            .await?,
    ))
}

/// `POST /api/connections/rotate` `{"id", "revision"}` → `{"connection", "token"}`.
pub(super) async fn rotate(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<IssuedConnection>, OwnerError> {
    let req: RotateRequest = json(&body)?;
    Ok(Json(
        state
            .call::<OwnerRotateConnection, _, _>(&headers, req)
            .await?,
    ))
}

/// `POST /api/connections/read-scope` `{"id", "revision", "read_scope"}` →
/// `{"connection", "token"}`.
pub(super) async fn read_scope(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<IssuedConnection>, OwnerError> {
    let req: ReadScopeRequest = json(&body)?;
    Ok(Json(
        state.call::<OwnerSetReadScope, _, _>(&headers, req).await?,
    ))
}

/// `POST /api/connections/revoke` `{"id"}` → `{}`; every token of it stops working at once.
pub(super) async fn revoke(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Empty>, OwnerError> {
    let req: RevokeRequest = json(&body)?;
    state
        .call::<OwnerRevokeConnection, _, _>(&headers, req)
        .await?;
    Ok(Json(Empty {}))
}

/// A read scope in a few words.
pub(super) fn scope_summary(scope: &ReadScope) -> String {
    let rule =
        |chats: &ChatSelection, since: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>| {
            let chats = match chats {
                ChatSelection::All => "all chats".to_owned(),
                ChatSelection::Selected { chats } => format!("{} selected chats", chats.len()),
                ChatSelection::AllExcept { chats } => format!("all chats but {}", chats.len()),
            };
            let since = since
                .map(|s| format!(", from {}", s.format("%Y-%m-%d")))
                .unwrap_or_default();
            let until = until
                .map(|u| format!(", before {}", u.format("%Y-%m-%d")))
                .unwrap_or_default();
            format!("{chats}{since}{until}")
        };
    let general = rule(&scope.chats, scope.since, scope.until);
    if scope.accounts.is_default_only() && scope.per_account.is_empty() {
        return general;
    }
    let accounts = match &scope.accounts {
        AccountSelection::All => "every account".to_owned(),
        AccountSelection::Only { accounts } => format!("accounts {}", accounts.join(", ")),
    };
    let own: Vec<String> = scope
        .per_account
        .iter()
        .map(|(a, r)| format!("{a}: {}", rule(&r.chats, r.since, r.until)))
        .collect();
    if own.is_empty() {
        format!("{accounts}: {general}")
    } else {
        format!("{accounts}: {} (otherwise {general})", own.join("; "))
    }
}

/// Whether it still works, in a word.
pub(super) fn status(c: &OwnerConnection) -> &'static str {
    if c.revoked_at.is_some() {
        "revoked"
    } else if c.expires_at <= Utc::now() {
        "expired"
    } else {
        "active"
    }
}

/// `GET /connections`.
pub(super) async fn page(State(state): State<Arc<OwnerState>>, headers: HeaderMap) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let list = match state
        .call::<OwnerListConnections, _, _>(&headers, Empty {})
        .await
    {
        Ok(l) => l.connections,
        Err(e) => return e.into_response(),
    };
    let mut rows = String::new();
    for c in &list {
        let status = status(c);
        let send = match c.send_permission.mode {
            SendMode::None => "none".to_owned(),
            SendMode::Selected => format!("{} chats", c.send_permission.chats.len()),
            SendMode::All => "all readable chats".to_owned(),
        };
        let actions = if status == "active" {
            format!(
                r#"<a href="/connections/{id}">Permissions and scope</a>
<button type="button" class="rotate" data-id="{id}" data-revision="{rev}">Rotate token</button>
<button type="button" class="revoke danger" data-id="{id}" data-name="{name}">Revoke</button>"#,
                id = esc(&c.id),
                rev = c.revision,
                name = esc(&c.name),
            )
        } else {
            String::new()
        };
        let _ = write!(
            rows,
            r#"<tr data-connection="{id}"><th scope="row">{name}</th><td>{kind}{oauth}</td><td><span class="state {status}">{status}</span></td><td>{scope}</td><td>{send}</td><td><time datetime="{exp}">{exp_short}</time></td><td class="actions">{actions}</td></tr>"#,
            id = esc(&c.id),
            name = esc(&c.name),
            kind = c.kind.as_str(),
            oauth = c
                .oauth_client
                .as_deref()
                .map_or_else(String::new, |client| format!(
                    r#"<br><small class="oauth">OAuth: <code>{}</code></small>"#,
                    esc(client)
                )),
            scope = esc(&scope_summary(&c.read_scope)),
            exp = esc(&c.expires_at.to_rfc3339()),
            exp_short = esc(&c.expires_at.format("%Y-%m-%d").to_string()),
        );
    }
    let table = if list.is_empty() {
        "<p>No AI connections yet.</p>".to_owned()
    } else {
        format!(
            r#"<table><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Reads</th><th scope="col">Sends to</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead><tbody>{rows}</tbody></table>"#
        )
    };
    let body = format!(
        r#"<section id="token-box" class="card token" hidden aria-live="polite">
<h2>New token</h2>
<p>Copy it now: it is shown only this once. Give it to the AI client as <code>Authorization: Bearer …</code>.</p>
<pre><code id="new-token"></code></pre>
</section>
{table}
<section class="card" aria-labelledby="create-h">
<h2 id="create-h">New AI connection</h2>
<p>A new connection reads what you allow here and may send nowhere until you grant it chats under “Permissions”.</p>
<form id="create-form">
<label for="c-name">Name</label>
<input id="c-name" name="name" required maxlength="100">
<fieldset><legend>Used from</legend>
<label><input type="radio" name="kind" value="local" checked> this machine only (local)</label>
<label><input type="radio" name="kind" value="remote"> other machines (remote)</label>
</fieldset>
<label for="c-days">Expires in (days)</label>
<input id="c-days" name="days" type="number" min="1" max="3650" value="30" required>
<fieldset><legend>May read</legend>
<label><input type="radio" name="scope" value="all" checked> all chats</label>
<label><input type="radio" name="scope" value="selected"> only the chats listed below</label>
<label><input type="radio" name="scope" value="all_except"> all chats except those listed below</label>
</fieldset>
<label for="c-chats">Chat ids (c_…, one per line, as the read tools return them)</label>
<textarea id="c-chats" name="chats" rows="3"></textarea>
<button type="submit">Create and show token</button>
</form>
</section>"#
    );
    frame("AI connections", "/connections", Some(&csrf), &body).into_response()
}
