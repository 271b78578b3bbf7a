//! Recent sends: the journal's rows (who, where, which tool, what state, when), never a body.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use wazap_shared::wire::owner::{OwnerRecentSends, SendsPage, SendsRequest};

use super::{OwnerError, page_session};
use crate::owner::OwnerState;
use crate::owner::html::{esc, page as frame};

/// `GET /api/sends?limit=N` → `{"sends": [...]}`, newest first.
pub(super) async fn list(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Query(req): Query<SendsRequest>,
) -> Result<Json<SendsPage>, OwnerError> {
    Ok(Json(
        state.call::<OwnerRecentSends, _, _>(&headers, req).await?,
    ))
}

/// `GET /sends`.
pub(super) async fn page(State(state): State<Arc<OwnerState>>, headers: HeaderMap) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let sends = match state
        .call::<OwnerRecentSends, _, _>(&headers, SendsRequest { limit: Some(100) })
        .await
    {
        Ok(p) => p.sends,
        Err(e) => return e.into_response(),
    };
    let mut body = String::from(
        r#"<p>The send journal keeps who sent where and how it ended, never what was sent.</p>"#,
    );
    if sends.is_empty() {
        body.push_str("<p>No sends yet.</p>");
    } else {
        body.push_str(
            r#"<table><caption>Newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Connection</th><th scope="col">Chat</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Request id</th></tr></thead><tbody>"#,
        );
        for s in &sends {
            let _ = write!(
                body,
                r#"<tr><td><time datetime="{at}">{at_short}</time></td><td>{conn}</td><td>{chat}</td><td>{tool}</td><td><span class="state {state}">{state}</span></td><td><code>{rid}</code></td></tr>"#,
                at = esc(&s.created_at.to_rfc3339()),
                at_short = esc(&s.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
                conn = esc(&s.connection_name),
                chat = esc(&s.chat_name),
                tool = esc(&s.tool),
                state = esc(&s.state),
                rid = esc(&s.request_id),
            );
        }
        body.push_str("</tbody></table>");
    }
    frame("Recent sends", "/sends", Some(&csrf), &body).into_response()
}
