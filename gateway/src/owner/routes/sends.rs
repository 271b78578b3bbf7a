//! Recent sends: the journal's rows (who, where, which tool, what state, when) and the send
//! attempts the worker refused (who, where, which tool, why, when), for every connection or one
//! connection or one chat; never a body.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use wazap_shared::wire::owner::{OwnerRecentSends, RefusedSend, SendRow, SendsPage, SendsRequest};

use super::{OwnerError, page_session};
use crate::owner::OwnerState;
use crate::owner::html::{esc, page as frame, when};

/// `GET /api/sends?limit=N&connection_id=&chat_id=` → `{"sends": [...], "refused": [...]}`,
/// newest first.
pub(super) async fn list(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Query(req): Query<SendsRequest>,
) -> Result<Json<SendsPage>, OwnerError> {
    Ok(Json(
        state
            .call::<OwnerRecentSends, _, _>(&headers, filters(req))
            .await?,
    ))
}

/// `req` with empty filters dropped (a form's empty field means "any").
fn filters(mut req: SendsRequest) -> SendsRequest {
    req.connection_id = req.connection_id.filter(|c| !c.is_empty());
    req.chat_id = req.chat_id.filter(|c| !c.is_empty());
    req
}

/// What a refusal's reason means to the owner.
fn reason_text(reason: &str) -> &'static str {
    match reason {
        "send_not_permitted" => "not allowed to send to this chat",
        "chat_out_of_scope" => "chat outside what it may read",
        _ => "refused",
    }
}

/// A link to this page filtered to one connection or one chat.
fn filter_link(field: &str, id: &str, label: &str) -> String {
    format!(
        r#"<a href="/sends?{field}={id}">{label}</a>"#,
        id = esc(&urlencoding(id)),
        label = esc(label),
    )
}

/// Ids are opaque `[A-Za-z0-9_-]`; anything else is percent-encoded all the same.
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn sends_table(body: &mut String, sends: &[SendRow]) {
    if sends.is_empty() {
        body.push_str("<p>No sends.</p>");
        return;
    }
    body.push_str(
        r#"<table id="sends"><caption>Sends, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Connection</th><th scope="col">Chat</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Request id</th></tr></thead><tbody>"#,
    );
    for s in sends {
        let _ = write!(
            body,
            r#"<tr><td>{at}</td><td>{conn}</td><td>{chat}</td><td>{tool}</td><td><span class="state {state}">{state}</span></td><td><code>{rid}</code></td></tr>"#,
            at = when(&s.created_at),
            conn = filter_link("connection_id", &s.connection_id, &s.connection_name),
            chat = filter_link("chat_id", &s.chat_id, &s.chat_name),
            tool = esc(&s.tool),
            state = esc(&s.state),
            rid = esc(&s.request_id),
        );
    }
    body.push_str("</tbody></table>");
}

fn refused_table(body: &mut String, refused: &[RefusedSend]) {
    if refused.is_empty() {
        body.push_str("<p>No refused attempts.</p>");
        return;
    }
    body.push_str(
        r#"<table id="refused"><caption>Refused attempts, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Connection</th><th scope="col">Chat</th><th scope="col">Tool</th><th scope="col">Why</th></tr></thead><tbody>"#,
    );
    for r in refused {
        let _ = write!(
            body,
            r#"<tr><td>{at}</td><td>{conn}</td><td>{chat}</td><td>{tool}</td><td><span class="state refused" data-reason="{code}">{why}</span> <code>{code}</code></td></tr>"#,
            at = when(&r.at),
            conn = filter_link("connection_id", &r.connection_id, &r.connection_name),
            chat = filter_link("chat_id", &r.chat_id, &r.chat_name),
            tool = esc(r.tool.as_deref().unwrap_or("media (before upload)")),
            why = reason_text(&r.reason),
            code = esc(&r.reason),
        );
    }
    body.push_str("</tbody></table>");
}

/// `GET /sends?connection_id=&chat_id=`.
pub(super) async fn page(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    Query(req): Query<SendsRequest>,
) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let req = SendsRequest {
        limit: Some(100),
        ..filters(req)
    };
    let filtered = req.connection_id.is_some() || req.chat_id.is_some();
    let page = match state.call::<OwnerRecentSends, _, _>(&headers, req).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let mut body = String::from(
        r#"<p>The send journal keeps who sent where and how it ended, never what was sent; refused attempts keep who tried where and why, never what was to be sent. Pick a connection or a chat to see only its rows.</p>"#,
    );
    if filtered {
        body.push_str(r#"<p><a href="/sends">Show every connection and chat</a></p>"#);
    }
    sends_table(&mut body, &page.sends);
    refused_table(&mut body, &page.refused);
    frame("Recent sends", "/sends", Some(&csrf), &body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_links_encode_what_is_not_an_id() {
        assert_eq!(
            filter_link("chat_id", "c_ab12-work", "Ana"),
            r#"<a href="/sends?chat_id=c_ab12-work">Ana</a>"#
        );
        assert_eq!(
            filter_link("connection_id", "a&b", "<x>"),
            r#"<a href="/sends?connection_id=a%26b">&lt;x&gt;</a>"#
        );
    }
}
