//! The token endpoint (RFC 6749 §4.1.3, §6) and revocation (RFC 7009).
//!
//! - A code is tried once: the first presentation uses it up whatever the outcome, so a wrong
//!   verifier cannot be retried; a code presented again revokes the refresh family it was
//!   redeemed into.
//! - A refresh token is single use: each use returns the next one of its family; one used twice
//!   revokes the family. It is bound to the connection's credential revision, so a rotation by
//!   the owner ends it, as a revocation or the connection's expiry does.
//! - Access tokens are the connection's grants (EdDSA JWTs) with the resource as audience, for
//!   at most [`ACCESS_TOKEN_SECS`]: nothing about them is stored, and revoking the connection
//!   ends them at once.
//!
//! Every refusal of a code or refresh token is the same `invalid_grant` wording: which check
//! failed is logged, never told.

use chrono::{DateTime, Utc};
use deadpool_postgres::{Pool, Transaction};
use wazap_shared::grant::{ConnectionKind, GrantClaims, Presented};
use wazap_shared::oauth::{ACCESS_TOKEN_SECS, OAuthError, REFRESH_SECS, pkce_verifies};
use wazap_shared::wire::oauth::{OAuthAnswer, RevokeTokenRequest, TokenRequest, TokenResponse};

use super::{hash, secret};
use crate::error::{Context as _, Error};
use crate::grants::{Tokens, issue_token, random_hex};

const INVALID_GRANT: OAuthError = OAuthError {
    code: "invalid_grant",
    description: "the code or refresh token is not valid (unknown, expired, used, revoked, \
                  or not this client's)",
};

const fn invalid_request(description: &'static str) -> OAuthError {
    OAuthError {
        code: "invalid_request",
        description,
    }
}

/// Serve the token endpoint.
pub async fn token(pool: &Pool, req: TokenRequest) -> Result<OAuthAnswer<TokenResponse>, Error> {
    let Some(client_id) = req.client_id.as_deref().filter(|c| !c.is_empty()) else {
        return Ok(invalid_request("client_id is required").into());
    };
    match req.grant_type.as_deref() {
        Some("authorization_code") => redeem(pool, client_id, &req).await,
        Some("refresh_token") => refresh(pool, client_id, &req).await,
        None => Ok(invalid_request("grant_type is required").into()),
        Some(_) => Ok(OAuthError {
            code: "unsupported_grant_type",
            description: "grant_type must be authorization_code or refresh_token",
        }
        .into()),
    }
}

/// `authorization_code`: the code, once, by its client, with its redirect URI, PKCE verifier
/// and (when given) resource.
async fn redeem(
    pool: &Pool,
    client_id: &str,
    req: &TokenRequest,
) -> Result<OAuthAnswer<TokenResponse>, Error> {
    let (Some(code), Some(verifier), Some(redirect_uri)) = (
        req.code.as_deref(),
        req.code_verifier.as_deref(),
        req.redirect_uri.as_deref(),
    ) else {
        return Ok(invalid_request("code, code_verifier and redirect_uri are required").into());
    };
    let mut db = pool.get().await.context("token: database")?;
    let tx = db.transaction().await.context("token: begin")?;
    let Some(row) = tx
        .query_opt(
            "select client_id, connection_id, redirect_uri, code_challenge, resource,
                    expires_at > now() as fresh, used_at is not null as used, family
               from oauth_codes where code_hash = $1 for update",
            &[&hash(code)],
        )
        .await
        .context("token: code")?
    else {
        return refuse(tx, "unknown code").await;
    };
    if row.get::<_, bool>("used") {
        let family: Option<String> = row.get("family");
        revoke_family(&tx, family.as_deref()).await?;
        return refuse(tx, "a code presented again: its tokens are revoked").await;
    }
    let resource: String = row.get("resource");
    let reason = if !row.get::<_, bool>("fresh") {
        Some("expired code")
    } else if let Some(elsewhere) = bound_elsewhere(&row, client_id, req) {
        Some(elsewhere)
    } else if row.get::<_, String>("redirect_uri") != redirect_uri {
        Some("another redirect URI")
    } else if !pkce_verifies(verifier, &row.get::<_, String>("code_challenge")) {
        Some("the PKCE verifier does not match")
    } else {
        None
    };
    // The code is used up either way (a wrong verifier cannot be retried); only a redeemed one
    // starts a refresh family.
    let family = match reason {
        None => Ok(random_hex(16).context("token: family")?),
        Some(reason) => Err(reason),
    };
    tx.execute(
        "update oauth_codes set used_at = now(), family = $2 where code_hash = $1",
        &[&hash(code), &family.as_ref().ok()],
    )
    .await
    .context("token: use code")?;
    let family = match family {
        Ok(family) => family,
        Err(reason) => return refuse(tx, reason).await,
    };
    let connection: String = row.get("connection_id");
    let grant = Grant {
        connection: &connection,
        client_id,
        resource: &resource,
        family: &family,
        revision: None,
    };
    issue(tx, grant).await
}

/// `refresh_token`: the next token of the family, once, by its client, while the connection is
/// active at the revision the token was issued under.
async fn refresh(
    pool: &Pool,
    client_id: &str,
    req: &TokenRequest,
) -> Result<OAuthAnswer<TokenResponse>, Error> {
    let Some(token) = req.refresh_token.as_deref() else {
        return Ok(invalid_request("refresh_token is required").into());
    };
    let mut db = pool.get().await.context("refresh: database")?;
    let tx = db.transaction().await.context("refresh: begin")?;
    let Some(row) = tx
        .query_opt(
            "select family, client_id, connection_id, revision, resource,
                    used_at is not null as used, revoked_at is null and expires_at > now() as live
               from oauth_refresh_tokens where token_hash = $1 for update",
            &[&hash(token)],
        )
        .await
        .context("refresh: select")?
    else {
        return refuse(tx, "unknown refresh token").await;
    };
    let family: String = row.get("family");
    if row.get::<_, bool>("used") {
        revoke_family(&tx, Some(&family)).await?;
        return refuse(tx, "a refresh token used twice: its family is revoked").await;
    }
    let resource: String = row.get("resource");
    let reason = if !row.get::<_, bool>("live") {
        Some("revoked or expired refresh token")
    } else {
        bound_elsewhere(&row, client_id, req)
    };
    if let Some(reason) = reason {
        return refuse(tx, reason).await;
    }
    tx.execute(
        "update oauth_refresh_tokens set used_at = now() where token_hash = $1",
        &[&hash(token)],
    )
    .await
    .context("refresh: use")?;
    let connection: String = row.get("connection_id");
    let grant = Grant {
        connection: &connection,
        client_id,
        resource: &resource,
        family: &family,
        revision: Some(row.get("revision")),
    };
    issue(tx, grant).await
}

/// What binds a code and a refresh token alike, checked against the request: issued to this
/// client, and for the resource it names (when it names one).
fn bound_elsewhere(
    row: &tokio_postgres::Row,
    client_id: &str,
    req: &TokenRequest,
) -> Option<&'static str> {
    if row.get::<_, String>("client_id") != client_id {
        Some("another client's")
    } else if (req.resource.as_deref()).is_some_and(|r| r != row.get::<_, String>("resource")) {
        Some("another resource")
    } else {
        None
    }
}

/// What a new pair of tokens is issued for.
struct Grant<'a> {
    connection: &'a str,
    client_id: &'a str,
    resource: &'a str,
    family: &'a str,
    /// The credential revision the refresh token was issued under (`None` for a code, which
    /// takes the current one).
    revision: Option<i32>,
}

/// Issue an access token and the family's next refresh token, and commit; `invalid_grant` when
/// the connection is revoked, expired or at another revision.
async fn issue(tx: Transaction<'_>, grant: Grant<'_>) -> Result<OAuthAnswer<TokenResponse>, Error> {
    let row = tx
        .query_opt(
            "select revision, expires_at, (revoked_at is null and expires_at > now()) as active
               from connections where connection_id = $1 for share",
            &[&grant.connection],
        )
        .await
        .context("token: connection")?;
    let Some(row) = row.filter(|r| r.get::<_, bool>("active")) else {
        return refuse(tx, "the connection is revoked or expired").await;
    };
    let revision: i32 = row.get("revision");
    if grant.revision.is_some_and(|r| r != revision) {
        return refuse(tx, "the connection was rotated").await;
    }
    let connection_expires: DateTime<Utc> = row.get("expires_at");
    let now = Utc::now();
    let exp = (now.timestamp() + ACCESS_TOKEN_SECS).min(connection_expires.timestamp());
    let refresh = secret("wzr_")?;
    tx.execute(
        "insert into oauth_refresh_tokens
            (token_hash, family, client_id, connection_id, revision, resource, expires_at)
         values ($1, $2, $3, $4, $5, $6, least(now() + make_interval(secs => $7), $8))",
        &[
            &hash(&refresh),
            &grant.family,
            &grant.client_id,
            &grant.connection,
            &revision,
            &grant.resource,
            &(REFRESH_SECS as f64),
            &connection_expires,
        ],
    )
    .await
    .context("token: refresh token")?;
    let claims = GrantClaims {
        sub: grant.connection.to_owned(),
        rev: u32::try_from(revision).unwrap_or_default(),
        aud: grant.resource.to_owned(),
        exp,
        iat: now.timestamp(),
        kind: ConnectionKind::Remote,
    };
    let access_token = issue_token(&tx, &claims).await.context("token: sign")?;
    tx.commit().await.context("token: commit")?;
    tracing::info!(connection.id = %grant.connection, "oauth tokens issued");
    Ok(OAuthAnswer::Done(TokenResponse {
        access_token,
        token_type: "Bearer".into(),
        expires_in: exp - now.timestamp(),
        refresh_token: refresh,
        scope: "mcp".into(),
    }))
}

/// Commit what the refusal changed (a code used up, a family revoked) and refuse.
async fn refuse(
    tx: Transaction<'_>,
    reason: &'static str,
) -> Result<OAuthAnswer<TokenResponse>, Error> {
    tx.commit().await.context("token: commit refusal")?;
    tracing::info!(reason, "token request refused");
    Ok(INVALID_GRANT.into())
}

/// Revoke every refresh token of `family`.
async fn revoke_family(tx: &Transaction<'_>, family: Option<&str>) -> Result<(), Error> {
    let Some(family) = family else {
        return Ok(());
    };
    let n = tx
        .execute(
            "update oauth_refresh_tokens set revoked_at = now()
              where family = $1 and revoked_at is null",
            &[&family],
        )
        .await
        .context("token: revoke family")?;
    tracing::warn!(revoked = n, "oauth refresh family revoked after a replay");
    Ok(())
}

/// Revocation (RFC 7009): a refresh token, or an access token, of an OAuth connection of this
/// client revokes the connection — the grant both are based on, so its access tokens end at
/// once too. Anything else (unknown, another client's, a token of `connection create`) changes
/// nothing, and the answer is the same.
pub async fn revoke(
    pool: &Pool,
    tokens: &Tokens,
    req: RevokeTokenRequest,
) -> Result<OAuthAnswer<wazap_shared::wire::owner::Empty>, Error> {
    let (Some(token), Some(client_id)) = (req.token, req.client_id) else {
        return Ok(invalid_request("token and client_id are required").into());
    };
    let db = pool.get().await.context("revoke: database")?;
    let by_refresh = db
        .query_opt(
            "select connection_id from oauth_refresh_tokens where token_hash = $1",
            &[&hash(&token)],
        )
        .await
        .context("revoke: refresh token")?
        .map(|r| r.get::<_, String>(0));
    let connection = match by_refresh {
        Some(c) => Some(c),
        None => tokens
            .verify(Presented {
                token,
                loopback: false,
            })
            .await
            .map(|g| g.connection_id),
    };
    if let Some(connection) = connection {
        let n = db
            .execute(
                "update connections set revoked_at = coalesce(revoked_at, now())
                  where connection_id = $1 and oauth_client_id = $2",
                &[&connection, &client_id],
            )
            .await
            .context("revoke: connection")?;
        if n > 0 {
            tracing::info!(connection.id = %connection, "oauth client revoked its connection");
        }
    }
    Ok(OAuthAnswer::Done(wazap_shared::wire::owner::Empty {}))
}
