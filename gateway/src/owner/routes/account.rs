//! The account page: the connector's state, linking by QR code (drawn here as SVG from the
//! connector's pairing payload; the payload is sent nowhere else) or by pairing code,
//! pause/resume and unlink. `demo` and `sim` show their own states.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::Query;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::owner::{
    AccountActionCall, AccountRef, AccountView, Empty, OwnerAccount, OwnerAccountAction,
    OwnerListAccounts,
};

use super::{OwnerError, json, page_session};
use crate::owner::OwnerState;
use crate::owner::html::{esc, page as frame};

/// `GET /api/account[?account_id=ID]` → `{"account_id", "state", "qr"?, "pairing_code"?,
/// "detail"?, "notes"?}` of that account (`default` when none is named).
pub(super) async fn get(
    State(state): State<Arc<OwnerState>>,
    Query(which): Query<AccountRef>,
    headers: HeaderMap,
) -> Result<Json<AccountView>, OwnerError> {
    Ok(Json(
        state.call::<OwnerAccount, _, _>(&headers, which).await?,
    ))
}

/// `POST /api/account` `{"account_id"?, "action": "pause" | "resume" | "unlink" |
/// "pair_with_qr" | "pair_with_code", "phone"?}` → the account afterwards.
pub(super) async fn act(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<AccountView>, OwnerError> {
    let req: AccountActionCall = json(&body)?;
    Ok(Json(
        state
            .call::<OwnerAccountAction, _, _>(&headers, req)
            .await?,
    ))
}

/// `payload` as an inline SVG QR code, or `None` when it cannot be encoded.
fn qr_svg(payload: &str) -> Option<String> {
    let code = qrcode::QrCode::new(payload.as_bytes()).ok()?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(240, 240)
        .quiet_zone(true)
        .build();
    // Drop the XML declaration: the SVG is inlined into HTML.
    let start = svg.find("<svg")?;
    Some(svg[start..].replacen(
        "<svg",
        r#"<svg role="img" aria-label="QR code to link your phone""#,
        1,
    ))
}

/// `GET /account[?account_id=ID]`: one account's state, linking and controls (`default`
/// when none is named), and the list of accounts.
pub(super) async fn page(
    State(state): State<Arc<OwnerState>>,
    Query(which): Query<AccountRef>,
    headers: HeaderMap,
) -> Response {
    let csrf = match page_session(&state, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let account = match state.call::<OwnerAccount, _, _>(&headers, which).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let st = account.state;
    let explain = match st {
        SyncState::Live => "Linked and up to date.",
        SyncState::CatchingUp => "Linked; still receiving history.",
        SyncState::Offline => "Linked but not connected right now.",
        SyncState::Paused => "Paused: no messages in or out until you resume.",
        SyncState::Unpaired => "No phone is linked.",
        SyncState::Demo => "The demo connector: a built-in sample archive.",
    };
    let mut body = format!(
        r#"<section class="card" id="account-card" data-account="{id}"><p>Account <code>{id}</code>: <span class="state {s}" id="account-state">{s}</span></p><p>{explain}</p>{detail}{notes}</section>"#,
        id = esc(&account.account_id),
        s = st.as_str(),
        detail = account
            .detail
            .as_deref()
            .map(|d| format!("<p>{}</p>", esc(d)))
            .unwrap_or_default(),
        notes = account
            .notes
            .iter()
            .map(|n| format!(r#"<p class="note" role="status">{}</p>"#, esc(n)))
            .collect::<String>(),
    );
    if st == SyncState::Unpaired {
        body.push_str(
            r#"<section class="card" aria-labelledby="link-h"><h2 id="link-h">Link a phone</h2>"#,
        );
        match account.qr.as_deref().and_then(qr_svg) {
            Some(svg) => {
                body.push_str(r#"<p>On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan:</p><figure class="qr">"#);
                body.push_str(&svg);
                body.push_str("</figure>");
                // The same payload as text, for a phone that cannot point a camera at the screen
                // (the simulated phones of the WhatsApp test network, `scripts/dev --phone`).
                body.push_str(&format!(
                    r#"<details><summary>The QR code as text</summary><code id="qr-text">{}</code></details>"#,
                    esc(account.qr.as_deref().unwrap_or_default())
                ));
            }
            None => body.push_str(
                r#"<p><button type="button" class="account-action" data-action="pair_with_qr">Show a QR code</button></p>"#,
            ),
        }
        if let Some(code) = &account.pairing_code {
            body.push_str(&format!(
                r#"<p>Pairing code: <strong class="code" id="pairing-code">{}</strong> — type it on the phone under Linked devices → Link with phone number.</p>"#,
                esc(code)
            ));
        }
        body.push_str(
            r#"<form id="pair-code-form"><label for="phone">Or link with a pairing code: the phone's number with country code</label>
<input id="phone" name="phone" inputmode="numeric" autocomplete="tel" required pattern="\+?[0-9]{7,15}">
<button type="submit">Get a pairing code</button></form></section>"#,
        );
    }
    body.push_str(
        r#"<section class="card" aria-labelledby="ctl-h"><h2 id="ctl-h">Connection</h2><p>"#,
    );
    match st {
        SyncState::Paused => body.push_str(
            r#"<button type="button" class="account-action" data-action="resume">Resume</button> "#,
        ),
        SyncState::Live | SyncState::CatchingUp | SyncState::Offline => body.push_str(
            r#"<button type="button" class="account-action" data-action="pause">Pause</button> "#,
        ),
        SyncState::Unpaired | SyncState::Demo => {}
    }
    if !matches!(st, SyncState::Unpaired | SyncState::Demo) {
        body.push_str(r#"<button type="button" class="account-action danger" data-action="unlink" data-confirm="Unlink this phone? The archive stays; new messages stop until you link again.">Unlink</button>"#);
    }
    if st == SyncState::Demo {
        body.push_str("The demo connector has nothing to pause or unlink.");
    }
    body.push_str("</p></section>");
    match state
        .call::<OwnerListAccounts, _, _>(&headers, Empty {})
        .await
    {
        Ok(list) => body.push_str(&super::accounts::section(&list)),
        Err(e) => return e.into_response(),
    }
    frame("Account", "/account", Some(&csrf), &body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qr_codes_render_as_inline_svg() {
        let svg = qr_svg("wazap-sim-pairing:default").unwrap();
        assert!(svg.starts_with("<svg role=\"img\""));
        assert!(svg.contains("<path") || svg.contains("<rect"));
    }
}
