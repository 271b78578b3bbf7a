//! `wazap-worker account add|list|remove`: the account registry from the terminal
//! ([`crate::accounts`]). Parsing is pure and tested here; carrying out opens a pool.

use crate::Config;
use crate::accounts::{self, NewAccount, Removal};
use crate::config::ConnectorKind;

use super::{Command, Options, UsageError, usage};

/// A parsed `account …` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountCommand {
    /// `account add --id ID [--name NAME] [--connector KIND]`.
    Add(NewAccount),
    /// `account list`.
    List,
    /// `account remove --id ID [--delete-archive [--confirm ID]]`.
    Remove {
        /// The account.
        id: String,
        /// Keep its archive, or delete it.
        how: Removal,
    },
}

/// Parse the words after `account`.
pub(super) fn parse(words: &[&str]) -> Result<Command, UsageError> {
    let cmd = match words {
        ["add", rest @ ..] => {
            let mut opts = Options::parse(rest, &["--id", "--name", "--connector"])?;
            let account_id = id(opts.required("--id")?)?;
            let connector = opts
                .take("--connector")
                .map(|c| {
                    ConnectorKind::parse(&c)
                        .ok_or_else(|| usage(format!("--connector: {}", ConnectorKind::RULE)))
                })
                .transpose()?;
            AccountCommand::Add(NewAccount {
                account_id,
                display_name: opts.take("--name"),
                connector,
            })
        }
        ["list"] => AccountCommand::List,
        ["list", extra, ..] => return Err(usage(format!("unexpected argument {extra}"))),
        ["remove", rest @ ..] => {
            // `--delete-archive` is a flag: give it a value for the options parser.
            let delete = rest.contains(&"--delete-archive");
            let rest: Vec<&str> = rest
                .iter()
                .copied()
                .filter(|a| *a != "--delete-archive")
                .collect();
            let mut opts = Options::parse(&rest, &["--id", "--confirm"])?;
            let id = id(opts.required("--id")?)?;
            let confirm = opts.take("--confirm");
            let how = match (delete, confirm) {
                (true, confirm) => Removal::DeleteArchive { confirm },
                (false, None) => Removal::KeepArchive,
                (false, Some(_)) => return Err(usage("--confirm goes with --delete-archive")),
            };
            AccountCommand::Remove { id, how }
        }
        [other, ..] => return Err(usage(format!("unknown account command {other}"))),
        [] => return Err(usage("account needs add, list or remove")),
    };
    Ok(Command::Account(cmd))
}

/// An `--id` or `--account` value: an account id.
pub(super) fn id(value: String) -> Result<String, UsageError> {
    if wazap_shared::ids::is_account_id(&value) {
        Ok(value)
    } else {
        Err(usage(format!(
            "account id: {}",
            wazap_shared::ids::ACCOUNT_ID_RULE
        )))
    }
}

/// Carry out `cmd`: results on stdout (`list`) or stderr.
pub(super) async fn execute(config: &Config, cmd: AccountCommand) -> anyhow::Result<()> {
    let pool = super::run::migrate(config).await?;
    let mut db = pool.get().await?;
    match cmd {
        AccountCommand::Add(new) => {
            let a = accounts::add(&db, new).await?;
            eprintln!(
                "added account {} ({}); link a phone to it with `wazap-worker link --account {}`",
                a.account_id, a.display_name, a.account_id
            );
        }
        AccountCommand::List => {
            println!("id\tname\tconnector\tphone\tadded\tremoved");
            for a in accounts::list(&db).await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    a.account_id,
                    a.display_name,
                    a.connector
                        .map_or(config.connector.as_str(), ConnectorKind::as_str),
                    a.phone.as_deref().unwrap_or("-"),
                    a.created_at.to_rfc3339(),
                    a.removed_at
                        .map_or_else(|| "-".to_owned(), |t| t.to_rfc3339()),
                );
            }
        }
        AccountCommand::Remove { id, how } => {
            let deleting = matches!(how, Removal::DeleteArchive { .. });
            match accounts::remove(&mut db, &id, how).await {
                Ok(gone) if deleting => {
                    eprintln!("deleted account {id} and its archive ({gone})");
                }
                Ok(kept) => {
                    eprintln!("removed account {id}; its archive ({kept}) is kept and readable");
                }
                Err(e @ accounts::RegistryError::Confirm { .. }) => {
                    anyhow::bail!("{e}: run again with --confirm {id}");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<AccountCommand, UsageError> {
        match parse(args)? {
            Command::Account(c) => Ok(c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn account_commands() {
        assert_eq!(
            p(&[
                "add",
                "--id",
                "work",
                "--name",
                "Work phone",
                "--connector",
                "sim"
            ])
            .unwrap(),
            AccountCommand::Add(NewAccount {
                account_id: "work".into(),
                display_name: Some("Work phone".into()),
                connector: Some(ConnectorKind::Sim),
            })
        );
        assert_eq!(p(&["list"]).unwrap(), AccountCommand::List);
        assert_eq!(
            p(&["remove", "--id", "work"]).unwrap(),
            AccountCommand::Remove {
                id: "work".into(),
                how: Removal::KeepArchive
            }
        );
        assert_eq!(
            p(&[
                "remove",
                "--delete-archive",
                "--id=work",
                "--confirm",
                "work"
            ])
            .unwrap(),
            AccountCommand::Remove {
                id: "work".into(),
                how: Removal::DeleteArchive {
                    confirm: Some("work".into())
                }
            }
        );
        assert_eq!(
            p(&["remove", "--id", "work", "--delete-archive"]).unwrap(),
            AccountCommand::Remove {
                id: "work".into(),
                how: Removal::DeleteArchive { confirm: None }
            }
        );
    }

    #[test]
    fn bad_account_commands_name_the_problem() {
        let e = |args: &[&str]| p(args).unwrap_err().0;
        assert!(e(&["add"]).contains("--id is required"));
        assert!(e(&["add", "--id", "Work"]).contains("account id: expected 1-32"));
        assert!(e(&["add", "--id", "w", "--connector", "x"]).contains("--connector"));
        assert!(e(&["remove", "--id", "w", "--confirm", "w"]).contains("--delete-archive"));
        assert!(e(&["list", "x"]).contains("unexpected argument x"));
        assert!(e(&["rename"]).contains("unknown account command"));
        assert!(e(&[]).contains("add, list or remove"));
    }
}
