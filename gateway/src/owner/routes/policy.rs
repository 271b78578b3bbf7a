//! The archive policy page and API: chats excluded from the archive (picked by name with the
//! same searchable list as the permissions editor) and what `#private` does.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::json as value;
use wazap_shared::wire::owner::{
    ChatsRequest, Empty, OwnerListChats, OwnerPolicy, OwnerSetPolicy, Policy, SetPolicyRequest,
};

use super::{OwnerError, json, page_session};
use crate::owner::OwnerState;
use crate::owner::html::{json_island, page as frame};

/// `GET /api/policy` → `{"excluded_chats", "revision"}`.
pub(super) async fn get(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
) -> Result<Json<Policy>, OwnerError> {
    Ok(Json(
        state.call::<OwnerPolicy, _, _>(&headers, Empty {}).await?,
    ))
}

/// `POST /api/policy` `{"excluded_chats": [...], "revision"}`; 409 when stale.
pub(super) async fn set(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Policy>, OwnerError> {
    let req: SetPolicyRequest = json(&body)?;
    Ok(Json(
        state.call::<OwnerSetPolicy, _, _>(&headers, req).await?,
    ))
}

/// `GET /policy`.
pub(super) async fn page(State(state): State<Arc<OwnerState>>, headers: HeaderMap) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let policy = match state.call::<OwnerPolicy, _, _>(&headers, Empty {}).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let named = ChatsRequest {
        limit: Some(1),
        named: policy.excluded_chats.clone(),
        ..Default::default()
    };
    let names = match state.call::<OwnerListChats, _, _>(&headers, named).await {
        Ok(p) => p.named,
        Err(e) => return e.into_response(),
    };
    let data = value!({
        "kind": "policy",
        "revision": policy.revision,
        "selected": policy.excluded_chats,
        "names": names,
    });
    let body = format!(
        r#"<section class="card" aria-labelledby="private-h">
<h2 id="private-h">The <code>#private</code> tag</h2>
<p>A message whose text or caption carries <code>#private</code> stays in the archive but no AI connection ever reads its words: it is returned with <code>private: true</code> and no text, caption or file name, and no search finds it by its words.</p>
</section>
<section class="card" aria-labelledby="excluded-h">
<h2 id="excluded-h">Excluded chats</h2>
<p>Messages of excluded chats are not stored from now on, are never returned to any AI connection, and no connection may send to them.</p>
<div id="picker" class="picker"></div>
<button type="button" id="save-policy">Save excluded chats</button>
</section>
<script type="application/json" id="page-data">{data}</script>"#,
        data = json_island(&data),
    );
    frame("Archive policy", "/policy", Some(&csrf), &body).into_response()
}
