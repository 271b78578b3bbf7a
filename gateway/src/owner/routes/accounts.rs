//! The account registry on the account page and the owner API: every account with its state,
//! adding one, removing one (keeping its archive, or deleting it once its id is typed again).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use http::HeaderMap;
use wazap_shared::wire::accounts::{
    AccountList, AccountSummary, AddAccountRequest, RemoveAccountRequest, RemovedAccount,
};
use wazap_shared::wire::owner::{Empty, OwnerAddAccount, OwnerListAccounts, OwnerRemoveAccount};

use super::{OwnerError, json};
use crate::owner::OwnerState;
use crate::owner::html::{esc, when};

/// `GET /api/accounts` → `{"accounts": [{"account_id", "display_name", "connector"?, "state",
/// "since"?, "history"?: {"pages", "messages", "percent"?}, "archive"?: {"messages", "chats",
/// "media", "newest_at"?, "disk_bytes", "counted_at"}, "phone"?, "created_at",
/// "removed_at"?}]}`, `default` first.
pub(super) async fn list(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
) -> Result<Json<AccountList>, OwnerError> {
    Ok(Json(
        state
            .call::<OwnerListAccounts, _, _>(&headers, Empty {})
            .await?,
    ))
}

/// `POST /api/accounts` `{"account_id", "display_name"?, "connector"?}` → the account added.
pub(super) async fn add(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<AccountSummary>, OwnerError> {
    let req: AddAccountRequest = json(&body)?;
    Ok(Json(
        state.call::<OwnerAddAccount, _, _>(&headers, req).await?,
    ))
}

/// `POST /api/accounts/remove` `{"account_id", "delete_archive"?, "confirm"?}` → what was
/// kept or deleted; deleting without `confirm` equal to the id is a 400 saying what would go.
pub(super) async fn remove(
    State(state): State<Arc<OwnerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<RemovedAccount>, OwnerError> {
    let req: RemoveAccountRequest = json(&body)?;
    Ok(Json(
        state
            .call::<OwnerRemoveAccount, _, _>(&headers, req)
            .await?,
    ))
}

/// An account's state as the owner reads it: since when, and the history sync while it lasts.
fn state_cell(a: &AccountSummary) -> String {
    if a.removed_at.is_some() {
        return r#"<span class="state removed">removed</span>"#.into();
    }
    let mut cell = format!(
        r#"<span class="state {s}">{s}</span>"#,
        s = a.state.as_str()
    );
    if let Some(since) = &a.since {
        cell.push_str(&format!(" since {}", when(since)));
    }
    if let Some(h) = a.history.filter(|h| h.pages > 0) {
        let percent = h.percent.map(|p| format!(", {p} %")).unwrap_or_default();
        cell.push_str(&format!(
            r#"<br><span class="history">history: {}, {}{percent}</span>"#,
            count(i64::from(h.pages), "page"),
            count(h.messages as i64, "message")
        ));
    }
    cell
}

/// What an account's archive holds, as last counted.
fn archive_cell(a: &AccountSummary) -> String {
    let mut cell = String::new();
    if a.removed_at.is_some() {
        cell.push_str("archive kept<br>");
    }
    let Some(c) = &a.archive else {
        cell.push_str("not counted yet");
        return cell;
    };
    cell.push_str(&format!(
        "{}, {}, {} media, ≈ {} on disk",
        count(c.messages, "message"),
        count(c.chats, "chat"),
        c.media,
        size(c.disk_bytes)
    ));
    if let Some(newest) = &c.newest_at {
        cell.push_str(&format!("<br>newest {}", when(newest)));
    }
    cell.push_str(&format!(
        r#"<br><span class="counted">counted {}</span>"#,
        when(&c.counted_at)
    ));
    cell
}

/// `n` and `noun`, plural unless one.
fn count(n: i64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `bytes` in the largest unit that keeps a number ≥ 1.
fn size(bytes: i64) -> String {
    let mut n = bytes.max(0) as f64;
    for unit in ["B", "KB", "MB", "GB"] {
        if n < 1024.0 {
            return format!("{n:.0} {unit}");
        }
        n /= 1024.0;
    }
    format!("{n:.1} TB")
}

/// The "Accounts" card: a row per account (id, name, connector, state since when with the
/// history sync, number, what its archive holds), a form to add one, and per account the two
/// ways to remove it.
pub(super) fn section(list: &AccountList) -> String {
    let mut rows = String::new();
    for a in &list.accounts {
        let removed = a.removed_at.is_some();
        let manage = if removed {
            String::new()
        } else {
            format!(
                r#"<a href="/account?account_id={id}">Link and control</a> "#,
                id = esc(&a.account_id)
            )
        };
        let actions = if a.account_id == wazap_shared::ids::DEFAULT_ACCOUNT {
            manage
        } else {
            let keep = if removed {
                String::new()
            } else {
                format!(
                    r#"<button type="button" class="account-remove" data-account="{id}">Remove, keep its archive</button> "#,
                    id = esc(&a.account_id)
                )
            };
            format!(
                r#"{manage}{keep}<button type="button" class="account-remove danger" data-account="{id}" data-delete="1">Delete with its archive</button>"#,
                id = esc(&a.account_id)
            )
        };
        rows.push_str(&format!(
            r#"<tr data-account="{id}"><td><code>{id}</code></td><td>{name}</td><td>{connector}</td><td>{state}</td><td>{phone}</td><td>{archive}</td><td>{actions}</td></tr>"#,
            id = esc(&a.account_id),
            name = esc(&a.display_name),
            connector = esc(a.connector.as_deref().unwrap_or("deployment's")),
            state = state_cell(a),
            phone = a.phone.as_deref().map(|p| format!("+{}", esc(p))).unwrap_or_default(),
            archive = archive_cell(a),
        ));
    }
    format!(
        r#"<section class="card" aria-labelledby="accounts-h"><h2 id="accounts-h">Accounts</h2>
<p>Each WhatsApp account this deployment keeps. Ids of another account's chats end in <code>-&lt;account&gt;</code>; an AI connection reads the accounts its read scope names (the default one unless told otherwise).</p>
<table id="accounts"><thead><tr><th>Id</th><th>Name</th><th>Connector</th><th>State</th><th>Number</th><th>Archive</th><th>Actions</th></tr></thead><tbody>{rows}</tbody></table>
<form id="account-add-form"><label for="account-id">Add an account: its id (a-z, 0-9, -)</label>
<input id="account-id" name="account_id" required pattern="[a-z0-9][a-z0-9\-]{{0,31}}">
<label for="account-name">Name</label><input id="account-name" name="display_name">
<button type="submit">Add account</button></form></section>"#
    )
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_read_in_the_largest_whole_unit() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(5 * 1024 * 1024), "5 MB");
        assert_eq!(size(3 * 1024 * 1024 * 1024), "3 GB");
        assert_eq!(size(-1), "0 B");
    }
}
