//! The authorization endpoint's checks and the owner's consent (#28 items 2–4).
//!
//! [`authorize`] checks a request in the order that keeps redirects safe: until the client and
//! its redirect URI are verified, a refusal is an error page and nothing is sent anywhere (no
//! open redirect); after, a refusal goes back to the redirect URI with the state. A request
//! that passes is kept for [`REQUEST_SECS`] for the owner, who sees it ([`view`]) and approves
//! or denies it ([`decide`]); a decision after the request lapsed is a denial. Approval creates the connection and a code (single use, bound to
//! client, redirect URI, PKCE challenge and resource, valid [`CODE_SECS`]) in one transaction.

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use wazap_shared::ErrorCode;
use wazap_shared::grant::ConnectionKind;
use wazap_shared::oauth::{
    CODE_SECS, OAuthError, REQUEST_SECS, check_code_challenge, check_redirect_uri,
    redirect_matches, redirect_to, uri_host,
};
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::oauth::{
    AuthorizeNext, AuthorizeRequest, ConsentDecision, ConsentOutcome, ConsentView,
};

use super::clients::{self, Client};
use super::{hash, secret};
use crate::error::{Context as _, Error};
use crate::grants::connections::{NewConnection, insert_connection};
use crate::grants::permission::{PermissionEdit, PermissionError, set_on};
use crate::grants::random_hex;

/// The longest `state` kept and returned.
const MAX_STATE_LEN: usize = 1_000;

/// Check an authorization request and keep it for the owner's decision.
pub async fn authorize(pool: &Pool, req: AuthorizeRequest) -> Result<AuthorizeNext, Error> {
    let page = |description: &str| {
        Ok(AuthorizeNext::ErrorPage {
            description: description.to_owned(),
        })
    };
    let Some(client_id) = req.client_id.as_deref().filter(|c| !c.is_empty()) else {
        return page("client_id is missing");
    };
    let db = pool.get().await.context("authorize: database")?;
    if let Some(document) = req.client_document
        && let Err(e) = clients::remember_document(&db, client_id, document).await?
    {
        return page(e.description);
    }
    let Some(client) = clients::find(&db, client_id).await? else {
        return page("the client is not registered here, or its registration lapsed");
    };
    let Some(redirect_uri) = verified_redirect(&client, req.redirect_uri.as_deref()) else {
        return page("the redirect URI is not one the client registered");
    };
    let state = req.state.as_deref();
    let back = |e: OAuthError| {
        let mut params = vec![("error", e.code), ("error_description", e.description)];
        params.extend(state.map(|s| ("state", s)));
        match redirect_to(&redirect_uri, &params) {
            Some(url) => Ok(AuthorizeNext::Redirect { url }),
            None => page("the redirect URI is not one the client registered"),
        }
    };
    if req.response_type.as_deref() != Some("code") {
        return back(OAuthError {
            code: "unsupported_response_type",
            description: "response_type must be code",
        });
    }
    if state.is_some_and(|s| s.len() > MAX_STATE_LEN) {
        return back(OAuthError {
            code: "invalid_request",
            description: "state is longer than 1000 bytes",
        });
    }
    let challenge = req.code_challenge.as_deref();
    if let Err(e) = check_code_challenge(req.code_challenge_method.as_deref(), challenge) {
        return back(e);
    }
    let resource = match req.resource.as_deref() {
        None | Some("") => {
            return back(OAuthError {
                code: "invalid_target",
                description: "resource is required: the /mcp URL the token is for",
            });
        }
        Some(r) if !req.resources.iter().any(|own| own == r) => {
            return back(OAuthError {
                code: "invalid_target",
                description: "the resource is not this server's /mcp",
            });
        }
        Some(r) => r,
    };
    let id = random_hex(16).context("authorize: request id")?;
    db.execute("delete from oauth_requests where expires_at < now()", &[])
        .await
        .context("authorize: lapse")?;
    db.execute(
        "insert into oauth_requests
            (request_id, client_id, redirect_uri, code_challenge, state, resource, expires_at)
         values ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
        &[
            &id,
            &client.id,
            &redirect_uri,
            &challenge,
            &state,
            &resource,
            &(REQUEST_SECS as f64),
        ],
    )
    .await
    .context("authorize: insert")?;
    tracing::info!(oauth.client = %client.id, "authorization request awaits the owner");
    Ok(AuthorizeNext::Consent { request: id })
}

/// The redirect URI a request may use: the one given, if well-formed and registered (a
/// loopback one's port may differ), or the only one registered when none is given.
fn verified_redirect(client: &Client, given: Option<&str>) -> Option<String> {
    let registered = &client.metadata.redirect_uris;
    match given {
        Some(uri) => (check_redirect_uri(uri).is_ok()
            && registered.iter().any(|r| redirect_matches(r, uri)))
        .then(|| uri.to_owned()),
        None if registered.len() == 1 => registered.first().cloned(),
        None => None,
    }
}

/// A pending request, for the consent page; `not_found` once decided or lapsed.
pub async fn view(pool: &Pool, request: &str) -> Result<ConsentView, Error> {
    let db = pool.get().await.context("consent: database")?;
    let row = db
        .query_opt(
            "select client_id, redirect_uri, resource, expires_at from oauth_requests
              where request_id = $1 and expires_at > now()",
            &[&request],
        )
        .await
        .context("consent: select")?
        .ok_or_else(not_found)?;
    let client_id: String = row.get("client_id");
    let client = clients::find(&db, &client_id)
        .await?
        .ok_or_else(not_found)?;
    let logo_host = (client.metadata.logo_uri.as_deref()).and_then(uri_host);
    Ok(ConsentView {
        request: request.to_owned(),
        client_id,
        registration: client.registration,
        client_name: client.metadata.client_name,
        client_uri: client.metadata.client_uri,
        logo_host,
        redirect_uri: row.get("redirect_uri"),
        resource: row.get("resource"),
        expires_at: row.get::<_, DateTime<Utc>>("expires_at"),
    })
}

fn not_found() -> Error {
    Error::new(
        ErrorCode::NotFound,
        "authorization request: not found, expired or already decided",
    )
}

/// The owner's decision: the request is used up either way. Denial sends `access_denied` to
/// the client; approval creates the connection (kind `remote`, marked with the client), its
/// first send permission, and a code, all in one transaction.
pub async fn decide(pool: &Pool, d: ConsentDecision) -> Result<ConsentOutcome, Error> {
    let mut db = pool.get().await.context("decide: database")?;
    let tx = db.transaction().await.context("decide: begin")?;
    let row = tx
        .query_opt(
            "delete from oauth_requests where request_id = $1
             returning client_id, redirect_uri, code_challenge, state, resource,
                       expires_at > now() as fresh",
            &[&d.request],
        )
        .await
        .context("decide: take")?
        .ok_or_else(not_found)?;
    let client_id: String = row.get("client_id");
    let redirect_uri: String = row.get("redirect_uri");
    let state: Option<String> = row.get("state");
    let with_state = |mut params: Vec<(&'static str, String)>| {
        params.extend(state.clone().map(|s| ("state", s)));
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        redirect_to(&redirect_uri, &params)
            .ok_or_else(|| Error::internal("decide: redirect", anyhow::anyhow!("unparsable")))
    };
    // Denied, or decided too late (the page stayed open past the request's life): the client
    // hears `access_denied` either way, and nothing is created.
    let lapsed = !row.get::<_, bool>("fresh");
    if !d.approve || lapsed {
        let why = if lapsed {
            "the request expired before the owner decided"
        } else {
            "the owner declined"
        };
        let redirect = with_state(vec![
            ("error", "access_denied".into()),
            ("error_description", why.into()),
        ])?;
        tx.commit().await.context("decide: commit")?;
        tracing::info!(oauth.client = %client_id, lapsed, "authorization request denied");
        return Ok(ConsentOutcome {
            redirect,
            connection_id: None,
        });
    }
    let client = clients::find(&tx, &client_id)
        .await?
        .ok_or_else(not_found)?;
    let new = NewConnection {
        name: (d.name.clone())
            .or(client.metadata.client_name.clone())
            .unwrap_or_else(|| "OAuth client".into()),
        kind: ConnectionKind::Remote,
        expires_at: d
            .expires_at
            .ok_or_else(|| Error::invalid("expires_at", "required to approve"))?,
        read_scope: (d.read_scope.clone())
            .ok_or_else(|| Error::invalid("read_scope", "required to approve"))?,
    };
    let conn = insert_connection(&tx, new, Some(&client_id)).await?;
    let mode = d.send_mode.unwrap_or(SendMode::None);
    if mode != SendMode::None || !d.send_chats.is_empty() {
        let edit = PermissionEdit {
            id: conn.id.clone(),
            revision: None,
            mode,
            chats: d.send_chats.clone(),
            expected_send_revision: None,
        };
        set_on(&tx, &edit).await.map_err(|e| match e {
            PermissionError::Rejected(e) => e,
            PermissionError::Stale => Error::invalid("send_mode", "changed elsewhere"),
        })?;
    }
    clients::keep(&tx, &client_id).await?;
    let code = secret("wzc_")?;
    tx.execute(
        "insert into oauth_codes
            (code_hash, client_id, connection_id, redirect_uri, code_challenge, resource, expires_at)
         values ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
        &[
            &hash(&code),
            &client_id,
            &conn.id,
            &redirect_uri,
            &row.get::<_, String>("code_challenge"),
            &row.get::<_, String>("resource"),
            &(CODE_SECS as f64),
        ],
    )
    .await
    .context("decide: code")?;
    let redirect = with_state(vec![("code", code)])?;
    tx.commit().await.context("decide: commit")?;
    tracing::info!(oauth.client = %client_id, connection.id = %conn.id, "authorization approved");
    Ok(ConsentOutcome {
        redirect,
        connection_id: Some(conn.id),
    })
}
