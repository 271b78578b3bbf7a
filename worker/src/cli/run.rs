//! Carrying out a parsed [`Command`]: serving until a signal, migrating, and managing AI
//! connections. Only a new token ever goes to stdout; everything else goes to stderr.

use std::process::ExitCode;

use chrono::Utc;
use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use super::{Command, CreateArgs};
use crate::grants::{self, NewConnection};
use crate::{Config, db, server};

/// Connections a one-shot command needs.
const CLI_POOL_SIZE: usize = 2;

/// Run `command` with `config`; the process exit code.
pub async fn execute(command: Command, config: Config) -> ExitCode {
    let result = match command {
        Command::Help => {
            print!("{}", super::USAGE);
            Ok(())
        }
        Command::Serve => {
            let shutdown = CancellationToken::new();
            cancel_on_signals(shutdown.clone());
            server::run(config, shutdown).await
        }
        Command::Migrate => migrate(&config).await.map(|_| ()),
        Command::SetOwnerPassword => set_owner_password(&config).await,
        Command::Link { account, phone } => super::link::link(&config, &account, phone).await,
        Command::Account(cmd) => super::account::execute(&config, cmd).await,
        Command::CreateConnection(args) => create(&config, args).await,
        Command::ListConnections => list(&config).await,
        Command::RevokeConnection { id } => revoke(&config, &id).await,
        Command::PermitConnection(edit) => permit(&config, edit).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wazap-worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Cancel `shutdown` on the first SIGINT or SIGTERM.
pub fn cancel_on_signals(shutdown: CancellationToken) {
    tokio::spawn(async move {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => {
                if let Err(e) = r {
                    tracing::warn!(error = %e, "cannot listen for SIGINT");
                    return;
                }
            }
            () = terminate => {}
        }
        tracing::info!("shutdown requested; draining");
        shutdown.cancel();
    });
}

/// A pool with the schema up to date (no waiting: a one-shot command fails fast).
pub(super) async fn migrate(config: &Config) -> anyhow::Result<Pool> {
    let pool = db::pool(&config.database_url, CLI_POOL_SIZE)?;
    db::migrate(&pool).await?;
    Ok(pool)
}

/// `connection create`: the token on stdout, the id on stderr.
async fn create(config: &Config, args: CreateArgs) -> anyhow::Result<()> {
    let pool = migrate(config).await?;
    grants::ensure_signing_key(&pool).await?;
    let (conn, token) = grants::create_connection(
        &pool,
        NewConnection {
            name: args.name,
            kind: args.kind,
            expires_at: Utc::now() + args.expires_in,
            read_scope: args.read_scope,
        },
    )
    .await?;
    println!("{token}");
    eprintln!(
        "created connection {} ({}, expires {})",
        conn.id,
        conn.kind.as_str(),
        conn.expires_at.to_rfc3339()
    );
    Ok(())
}

/// `set-owner-password`: one line from stdin (the newline dropped), never echoed or logged.
async fn set_owner_password(config: &Config) -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    let mut line = String::new();
    tokio::io::BufReader::new(tokio::io::stdin())
        .take(crate::owner::password::MAX_BYTES as u64 + 2)
        .read_line(&mut line)
        .await?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    let pool = migrate(config).await?;
    crate::owner::set_password(&pool, password).await?;
    eprintln!("owner password set; every owner session has ended");
    Ok(())
}

/// `connection list`: one line per connection, never a token.
async fn list(config: &Config) -> anyhow::Result<()> {
    let pool = migrate(config).await?;
    let conns = grants::list_connections(&pool).await?;
    println!("id\tname\tkind\trevision\texpires\trevoked");
    for c in conns {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            c.id,
            c.name,
            c.kind.as_str(),
            c.revision,
            c.expires_at.to_rfc3339(),
            c.revoked_at
                .map_or_else(|| "-".to_owned(), |t| t.to_rfc3339()),
        );
    }
    Ok(())
}

/// `connection revoke --id ID`.
async fn revoke(config: &Config, id: &str) -> anyhow::Result<()> {
    let pool = migrate(config).await?;
    grants::revoke_connection(&pool, id).await?;
    eprintln!("revoked connection {id}");
    Ok(())
}

/// `connection permit`: the new send permission on stderr.
async fn permit(config: &Config, edit: grants::PermissionEdit) -> anyhow::Result<()> {
    let pool = migrate(config).await?;
    let id = edit.id.clone();
    let p = grants::set_send_permission(&pool, edit).await?;
    eprintln!(
        "connection {id}: send permission {:?} ({} chats), send revision {}",
        p.mode,
        p.chats.len(),
        p.revision
    );
    Ok(())
}
