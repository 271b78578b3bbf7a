//! The owner password from the command line and at start-up: `wazap-worker
//! set-owner-password` reads one line from stdin, stores argon2id and ends every session;
//! `WAZAP_OWNER_PASSWORD` sets it only when none is set yet. Failed logins: [`throttle`].

use std::io::Write as _;
use std::process::{Command, Stdio};

mod common;
#[path = "owner/throttle.rs"]
mod throttle;

async fn stored_hash(pool: &deadpool_postgres::Pool) -> Option<String> {
    pool.get()
        .await
        .unwrap()
        .query_opt("select password_hash from owner_credentials", &[])
        .await
        .unwrap()
        .map(|r| r.get(0))
}

fn set_password(url: &str, stdin: &str) -> std::process::Output {
    let password = stdin.lines().next().unwrap_or_default();
    wazap_shared::leak::record_secret("owner password", password);
    let mut child = Command::new(env!("CARGO_BIN_EXE_wazap-worker"))
        .arg("set-owner-password")
        .env("WAZAP_DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn set_owner_password_reads_one_line_and_ends_sessions() {
    let (url, pool) = common::fresh_db(2).await;
    pool.get()
        .await
        .unwrap()
        .execute(
            "insert into owner_sessions (id_sha256, csrf, expires_at)
             values ('\\x00', 'x', now() + interval '1 hour')",
            &[],
        )
        .await
        .unwrap();
    let out = set_password(&url, "short\n");
    assert!(!out.status.success(), "a 5-character password was accepted");
    assert!(stored_hash(&pool).await.is_none());

    let out = set_password(&url, "a long enough secret\r\nsecond line ignored\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let phc = stored_hash(&pool).await.unwrap();
    assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
    assert!(
        wazap_worker::owner::password::verify("a long enough secret", &phc)
            .await
            .unwrap()
    );
    let sessions: i64 = pool
        .get()
        .await
        .unwrap()
        .query_one("select count(*) from owner_sessions", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(sessions, 0, "old sessions survived a password change");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !printed.contains("long enough secret"),
        "the password was echoed"
    );
}

#[tokio::test]
async fn the_start_up_password_never_replaces_one_already_set() {
    let (_, pool) = common::fresh_db(2).await;
    assert!(
        !wazap_worker::owner::bootstrap_password(&pool, None)
            .await
            .unwrap()
    );
    assert!(
        wazap_worker::owner::bootstrap_password(&pool, Some("first password"))
            .await
            .unwrap()
    );
    for password in ["first password", "second password"] {
        wazap_shared::leak::record_secret("owner password", password);
    }
    let first = stored_hash(&pool).await.unwrap();
    assert!(
        !wazap_worker::owner::bootstrap_password(&pool, Some("second password"))
            .await
            .unwrap()
    );
    assert_eq!(stored_hash(&pool).await.unwrap(), first);
    let (_, empty) = common::fresh_db(2).await;
    assert!(
        wazap_worker::owner::bootstrap_password(&empty, Some("2short"))
            .await
            .is_err()
    );
}
