//! Signing keys: one Ed25519 key created on the worker's first start and kept in Postgres, the
//! public half published as a JWKS for gateways, and the EdDSA tokens it signs.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use deadpool_postgres::{GenericClient, Pool};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use wazap_shared::grant::GrantClaims;
use wazap_shared::wire::system::{Jwk, JwksResponse};

use super::random_hex;
use crate::error::{Context as _, Error};

/// PKCS#8 v1 DER prefix of an Ed25519 private key; the 32-byte seed follows it.
const PKCS8_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// Advisory lock id that keeps two starting workers from both creating a key.
const KEY_LOCK: i64 = 7_342_002;

/// The newest key that is not retired: tokens are signed with it.
const CURRENT_KEY: &str = "select kid, private_pkcs8 from signing_keys
     where retired_at is null order by created_at desc, kid limit 1";

/// Make sure a current signing key exists, creating one on first start; returns its `kid`.
/// Later starts reuse the stored key, so tokens stay valid across restarts.
pub async fn ensure_signing_key(pool: &Pool) -> anyhow::Result<String> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    tx.execute("select pg_advisory_xact_lock($1)", &[&KEY_LOCK])
        .await?;
    if let Some(row) = tx.query_opt(CURRENT_KEY, &[]).await? {
        tx.commit().await?;
        return Ok(row.get(0));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let public = ed25519_dalek::SigningKey::from_bytes(&seed)
        .verifying_key()
        .to_bytes();
    let mut der = PKCS8_ED25519_PREFIX.to_vec();
    der.extend_from_slice(&seed);
    let kid = random_hex(8)?;
    tx.execute(
        "insert into signing_keys (kid, private_pkcs8, public_x) values ($1, $2, $3)",
        &[&kid, &der, &URL_SAFE_NO_PAD.encode(public)],
    )
    .await?;
    tx.commit().await?;
    tracing::info!(kid = %kid, "signing key created");
    Ok(kid)
}

/// The public keys a current token may be signed with (RFC 8037 OKP), for gateways.
pub async fn jwks(pool: &Pool) -> Result<JwksResponse, Error> {
    let client = pool.get().await.context("jwks: database")?;
    let stmt = client
        .prepare_cached(
            "select kid, public_x from signing_keys where retired_at is null
             order by created_at desc, kid",
        )
        .await
        .context("jwks: prepare")?;
    let rows = client.query(&stmt, &[]).await.context("jwks: query")?;
    Ok(JwksResponse {
        keys: rows
            .iter()
            .map(|r| Jwk {
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: r.get(1),
                kid: r.get(0),
                alg: "EdDSA".into(),
                use_: "sig".into(),
            })
            .collect(),
    })
}

/// Sign `claims` with the current key (header `alg: EdDSA`, `kid`). Fails when no key exists
/// yet, i.e. before [`ensure_signing_key`] ever ran on this database.
pub async fn issue_token(db: &impl GenericClient, claims: &GrantClaims) -> anyhow::Result<String> {
    let row = db
        .query_opt(CURRENT_KEY, &[])
        .await?
        .ok_or_else(|| anyhow::anyhow!("no signing key; start the worker once"))?;
    let kid: String = row.get(0);
    let der: Vec<u8> = row.get(1);
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid);
    Ok(jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_ed_der(&der),
    )?)
}
