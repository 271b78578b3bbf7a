//! OAuth's browser half (#28): the authorization endpoint, where a client sends the owner's
//! browser, and the consent page, where the owner approves the client — which creates an AI
//! connection with the read scope, send permission and expiry chosen there — or denies it.
//!
//! `GET /oauth/authorize` needs no session: the worker checks the request and keeps it, and the
//! browser goes on to `/oauth/consent?request=…` (via login when there is no session), back to
//! the client with an error (a verified redirect URI only), or to an error page (nothing
//! verified, so nothing is sent anywhere). The consent page shows everything about the client
//! as what it *claims* — a name and a home page are whatever the client registered — and never
//! loads anything from it (only its logo's host is named). The decision is an owner write
//! (`POST /api/oauth/decide`: guard, session, CSRF) whose answer is where the browser goes next.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json as value;
use wazap_shared::ErrorCode;
use wazap_shared::oauth::redirect_to;
use wazap_shared::wire::oauth::{
    AuthorizeNext, AuthorizeRequest, ConsentDecision, ConsentOutcome, ConsentRequest, ConsentView,
    OAuthAnswer, OAuthAuthorize, OwnerOAuthDecide, OwnerOAuthRequest,
};
use wazap_shared::wire::owner::{Empty, OwnerListAccounts};

use super::{OwnerError, json, session_or_login};
use crate::oauth::document::Documents;
use crate::oauth::{AUTHORIZE_PATH, CONSENT_PATH, form};
use crate::owner::OwnerState;
use crate::owner::html::{esc, json_island, page as frame, when};

/// The expiries the page offers, in days; the third is the default.
const EXPIRY_DAYS: [(u32, &str); 5] = [
    (1, "1 day"),
    (7, "7 days"),
    (30, "30 days"),
    (90, "90 days"),
    (365, "365 days"),
];
const DEFAULT_DAYS: u32 = 30;

/// `GET /oauth/authorize?…` (RFC 6749 §4.1.1 with PKCE and RFC 8707's `resource`).
pub(super) async fn authorize(
    State(state): State<Arc<OwnerState>>,
    RawQuery(query): RawQuery,
) -> Response {
    let mut params = match form::parse(query.as_deref().unwrap_or("")) {
        Ok(params) => params,
        Err(e) => return refused_page(e.description()),
    };
    let client_id = params.take("client_id");
    // A client id that is a URL is its metadata document: fetched here, checked by the worker.
    let client_document = match client_id.as_deref() {
        Some(id) if Documents::is_document_url(id) => match state.documents.fetch(id).await {
            Ok(metadata) => Some(metadata),
            Err(refusal) => {
                tracing::info!(refusal, "oauth authorize: client metadata document refused");
                return refused_page(refusal);
            }
        },
        _ => None,
    };
    let req = AuthorizeRequest {
        client_id,
        client_document,
        redirect_uri: params.take("redirect_uri"),
        response_type: params.take("response_type"),
        code_challenge: params.take("code_challenge"),
        code_challenge_method: params.take("code_challenge_method"),
        state: params.take("state"),
        resource: params.take("resource"),
        resources: state.resources.clone(),
    };
    let answer = match state.bus.call::<OAuthAuthorize>(None, &req, None).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(
                code = e.code.as_str(),
                "oauth authorize: worker unavailable"
            );
            return unavailable_page();
        }
    };
    match answer {
        OAuthAnswer::Done(AuthorizeNext::Consent { request }) if is_request_id(&request) => {
            tracing::info!("oauth authorize: waiting for the owner's consent");
            see_other(&consent_path(&request))
        }
        OAuthAnswer::Done(AuthorizeNext::Consent { .. }) => {
            tracing::warn!("oauth authorize: the worker named a malformed request id");
            unavailable_page()
        }
        OAuthAnswer::Done(AuthorizeNext::Redirect { url }) => {
            tracing::info!("oauth authorize: refused, sent back to the client");
            see_other(&with_issuer(&state, &url))
        }
        OAuthAnswer::Done(AuthorizeNext::ErrorPage { description }) => {
            tracing::info!("oauth authorize: refused with an error page");
            refused_page(&description)
        }
        OAuthAnswer::Refused(r) => {
            tracing::info!(error = r.error.as_str(), "oauth authorize: refused");
            refused_page(&r.error_description)
        }
    }
}

/// `GET /oauth/consent?request=ID`: the owner's question, after login.
pub(super) async fn page(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let request = form::parse(query.as_deref().unwrap_or(""))
        .ok()
        .and_then(|mut p| p.take("request"))
        .filter(|r| is_request_id(r));
    let Some(request) = request else {
        return refused_page("the consent link is malformed");
    };
    let csrf = match session_or_login(&state, &headers, Some(&consent_path(&request))).await {
        Ok(csrf) => csrf,
        Err(to_login) => return to_login,
    };
    let (view, accounts) = tokio::join!(
        state.call::<OwnerOAuthRequest, _, _>(&headers, ConsentRequest { request }),
        state.call::<OwnerListAccounts, _, _>(&headers, Empty {}),
    );
    let view = match view {
        Ok(view) => view,
        Err(OwnerError::Rpc(e)) if e.code == ErrorCode::NotFound => {
            let body = "<p>Nothing was approved here. To connect the AI client, start again from \
                        the client.</p>";
            let html = frame(
                "This request has expired or was already decided",
                CONSENT_PATH,
                Some(&csrf),
                body,
            );
            return (StatusCode::NOT_FOUND, html).into_response();
        }
        Err(e) => return e.into_response(),
    };
    // Several accounts: "all chats" is said to be the default account's (what it reads).
    let several =
        accounts.is_ok_and(|a| a.accounts.iter().filter(|a| a.removed_at.is_none()).count() > 1);
    let body = consent_body(&view, several);
    frame("Connect an AI client?", CONSENT_PATH, Some(&csrf), &body).into_response()
}

/// `POST /api/oauth/decide` `{"request", "approve", "name", "expires_at", "read_scope",
/// "send_mode", "send_chats"}` → `{"redirect", "connection_id"}`: where the browser goes.
pub(super) async fn decide(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ConsentOutcome>, OwnerError> {
    let req: ConsentDecision = json(&body)?;
    let approve = req.approve;
    let mut outcome = state.call::<OwnerOAuthDecide, _, _>(&headers, req).await?;
    outcome.redirect = with_issuer(&state, &outcome.redirect);
    tracing::info!(approve, "oauth consent decided");
    Ok(Json(outcome))
}

/// `redirect` with this server's `iss` added (RFC 9207): a client talking to several
/// authorization servers can tell which one answered, so a code cannot be mixed up.
fn with_issuer(state: &OwnerState, redirect: &str) -> String {
    redirect_to(redirect, &[("iss", state.origin.as_str())]).unwrap_or_else(|| redirect.to_owned())
}

/// A pending request's id as the worker makes them: 1–64 of `[A-Za-z0-9_-]`.
fn is_request_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The consent page's path for request `id` (a checked id: nothing to escape, encoded anyway).
fn consent_path(id: &str) -> String {
    format!("{CONSENT_PATH}?request={}", form::encode(id))
}

/// 303 to `location`; a value that cannot be a header is the worker's fault: 503 page.
fn see_other(location: &str) -> Response {
    match HeaderValue::try_from(location) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => {
            tracing::warn!("oauth authorize: the worker named a location that is not a header");
            unavailable_page()
        }
    }
}

/// 400: the request was refused and nothing was sent to the client.
fn refused_page(description: &str) -> Response {
    let body = format!(
        "<p>{}</p><p>Nothing was sent to the AI client. Start connecting again from the client; \
         if this keeps happening, the client is not set up for this server.</p>",
        esc(description)
    );
    let html = frame("Authorization request refused", AUTHORIZE_PATH, None, &body);
    (StatusCode::BAD_REQUEST, html).into_response()
}

/// 503: the worker could not be asked.
fn unavailable_page() -> Response {
    let body = "<p>wazap cannot answer authorization requests right now. Wait a moment, then \
                start connecting again from the AI client.</p>";
    let html = frame(
        "Authorization temporarily unavailable",
        AUTHORIZE_PATH,
        None,
        body,
    );
    (StatusCode::SERVICE_UNAVAILABLE, html).into_response()
}

/// How a client registered, in words.
fn registration(how: &str) -> String {
    match how {
        "dcr" => "it registered itself with this server (dynamic client registration)".into(),
        "cimd" => "by a metadata document published at its client id".into(),
        other => esc(other),
    }
}

/// The page's body: the client's claims, then the form.
fn consent_body(v: &ConsentView, several_accounts: bool) -> String {
    let claimed = |value: &Option<String>| {
        value.as_deref().map_or_else(
            || "<em>(none given)</em>".to_owned(),
            |s| format!("<code>{}</code>", esc(s)),
        )
    };
    let name = v.client_name.as_deref().map_or_else(
        || "<em>(no name given)</em>".to_owned(),
        |n| format!("<strong>{}</strong>", esc(n)),
    );
    let default_name = v
        .client_name
        .clone()
        .unwrap_or_else(|| "OAuth client".to_owned());
    let mut expiry = String::new();
    for (days, label) in EXPIRY_DAYS {
        let selected = if days == DEFAULT_DAYS {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            expiry,
            r#"<option value="{days}"{selected}>{label}</option>"#
        );
    }
    let all_chats = if several_accounts {
        "all chats of the default account"
    } else {
        "all chats"
    };
    let data = value!({
        "kind": "consent",
        "request": v.request,
        "default_name": default_name,
    });
    format!(
        r#"<p>An AI client asks to connect to your WhatsApp archive. <strong>Everything in the first box is what the client claims about itself</strong>: wazap cannot check a name or a home page. Approve only if you started connecting this client yourself just now.</p>
<section class="card" aria-labelledby="claims-h">
<h2 id="claims-h">What the client claims</h2>
<dl class="claims">
<dt>Name (claimed)</dt><dd>{name}</dd>
<dt>Client id</dt><dd><code>{client_id}</code></dd>
<dt>How it registered</dt><dd>{registration}</dd>
<dt>Home page (claimed)</dt><dd>{client_uri}</dd>
<dt>Logo host (claimed; the logo is not loaded)</dt><dd>{logo_host}</dd>
<dt>The approval code goes to</dt><dd><code>{redirect_uri}</code></dd>
<dt>Access to</dt><dd><code>{resource}</code></dd>
<dt>This request lapses</dt><dd>{expires}</dd>
</dl>
</section>
<section class="card" aria-labelledby="grant-h">
<h2 id="grant-h">If you approve</h2>
<p>Approving creates an AI connection for this client; you can change or revoke it any time under “AI connections”.</p>
<form id="consent-form">
<label for="cs-name">Connection name</label>
<input id="cs-name" name="name" required maxlength="100" value="{default_name_attr}">
<label for="cs-days">Expires in</label>
<select id="cs-days" name="days">{expiry}</select>
<fieldset id="cs-read"><legend>May read</legend>
<label><input type="radio" name="read" value="all" checked> {all_chats}</label>
<label><input type="radio" name="read" value="selected"> only the chats checked below</label>
</fieldset>
<p id="read-picked" hidden><strong id="read-count">0</strong> chats picked. <span id="read-names"></span></p>
<div id="read-picker" class="picker" hidden></div>
<fieldset id="cs-send"><legend>May send to</legend>
<label><input type="radio" name="send" value="none" checked> nowhere</label>
<label><input type="radio" name="send" value="selected"> only the chats checked below (1–100)</label>
<label><input type="radio" name="send" value="all"> every chat it may read</label>
</fieldset>
<p id="send-picked" hidden><strong id="send-count">0</strong> chats picked. <span id="send-names"></span></p>
<div id="send-picker" class="picker" hidden></div>
<p class="decide"><button type="submit" id="approve">Approve</button> <button type="button" id="deny" class="danger">Deny</button></p>
</form>
</section>
<script type="application/json" id="page-data">{data}</script>"#,
        client_id = esc(&v.client_id),
        registration = registration(&v.registration),
        client_uri = claimed(&v.client_uri),
        logo_host = claimed(&v.logo_host),
        redirect_uri = esc(&v.redirect_uri),
        resource = esc(&v.resource),
        expires = when(&v.expires_at),
        default_name_attr = esc(&default_name),
        data = json_island(&data),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ConsentView {
        ConsentView {
            request: "r_1".into(),
            client_id: "cl_abc".into(),
            registration: "dcr".into(),
            client_name: Some("<script>Claude</script>".into()),
            client_uri: None,
            logo_host: Some("evil.example\"><img src=x>".into()),
            redirect_uri: "https://claude.ai/api/mcp/auth_callback".into(),
            resource: "https://wazap.example.com/mcp".into(),
            expires_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn request_ids_are_short_and_url_safe() {
        for ok in ["r", "r_1-A", &"a".repeat(64)] {
            assert!(is_request_id(ok), "{ok}");
        }
        for bad in ["", "r 1", "r/1", "r?x=1", "r%2F", "é", &"a".repeat(65)] {
            assert!(!is_request_id(bad), "{bad}");
        }
        assert_eq!(consent_path("r_1-A"), "/oauth/consent?request=r_1-A");
    }

    #[test]
    fn the_page_escapes_every_claim_and_loads_nothing_of_the_client() {
        let body = consent_body(&view(), false);
        assert!(!body.contains("<script>Claude"));
        assert!(body.contains("&lt;script&gt;Claude&lt;/script&gt;"));
        assert!(!body.contains("<img"));
        assert!(body.contains("<em>(none given)</em>"));
        assert!(body.contains(r#"value="&lt;script&gt;Claude&lt;/script&gt;""#));
        assert!(body.contains(r#"<option value="30" selected>"#));
        assert!(body.contains(r#"value="none" checked"#));
        let island = body
            .split(r#"id="page-data">"#)
            .nth(1)
            .and_then(|s| s.split("</script>").next())
            .unwrap();
        let data: serde_json::Value = serde_json::from_str(island).unwrap();
        assert_eq!(data["kind"], "consent");
        assert_eq!(data["request"], "r_1");
    }

    #[test]
    fn a_client_without_a_name_says_so_and_gets_a_default_connection_name() {
        let mut v = view();
        v.client_name = None;
        let body = consent_body(&v, true);
        assert!(body.contains("<em>(no name given)</em>"));
        assert!(body.contains(r#"value="OAuth client""#));
        assert!(body.contains("all chats of the default account"));
    }
}
