//! The `wazap-worker` command line: `serve` (the default), `migrate`, and AI connection
//! management (`connection create|list|revoke|permit`). Parsing is here and pure, so it is
//! tested without a process; [`run`] carries the commands out.

use chrono::TimeDelta;
use wazap_shared::grant::ConnectionKind;
use wazap_shared::wire::grants::{AccountSelection, ChatSelection, ReadScope};

pub mod account;
pub mod link;
pub mod run;
pub mod values;

use values::{DayBound, parse_chat_list, parse_date, parse_duration};

/// The exit code for bad arguments or bad configuration (`EX_USAGE`).
pub const EXIT_USAGE: u8 = 64;

/// What `--help` prints.
pub const USAGE: &str = "\
wazap-worker: the wazap worker (WhatsApp connection, archive, grants)

usage:
  wazap-worker [serve]                 run the worker until SIGINT/SIGTERM
  wazap-worker migrate                 apply database migrations and exit
  wazap-worker set-owner-password      read one line from stdin and make it the owner's
                                       dashboard password (8+ characters); ends all sessions
  wazap-worker link [--account ID] [--phone DIGITS]
                                       link a phone to an account's WhatsApp device (stop the
                                       worker first; default: the default account): shows a
                                       QR code in the terminal, or with --phone a code to
                                       type on the phone; waits until linked
  wazap-worker account add --id ID [--name NAME] [--connector whatsapp|demo|sim]
                                       add a WhatsApp account (ID: 1-32 of a-z 0-9 -)
  wazap-worker account list            list the accounts
  wazap-worker account remove --id ID [--delete-archive [--confirm ID]]
                                       remove an account, keeping its archive readable; with
                                       --delete-archive its archive goes too (shows what
                                       first; --confirm with the account's id to go ahead)
  wazap-worker connection create --name NAME --kind local|remote --expires-in DURATION
               [--chats ID,...] [--except ID,...] [--since DATE] [--until DATE]
               [--accounts all|ACCOUNT,...]
                                       create an AI connection (reading the default account
                                       unless --accounts says otherwise); its token is printed
                                       once on stdout, its id on stderr
  wazap-worker connection list         list connections (never their tokens)
  wazap-worker connection revoke --id ID
                                       revoke a connection; its tokens stop working at once
  wazap-worker connection permit --id ID --mode none|selected|all [--chats ID,...]
               [--revision N] [--expected-send-revision N]
                                       set where a connection may send (selected: 1-100
                                       chats it may read); advances its send revision
  wazap-worker --help                  show this text

  DURATION  30d, 12h or 90m
  DATE      YYYY-MM-DD (UTC; --until includes that whole day) or an RFC 3339 time
  ID        opaque chat ids (c_...), as the read tools return them

Configuration comes from the environment: WAZAP_DATABASE_URL, WAZAP_NATS_URL,
WAZAP_NATS_PREFIX, WAZAP_NATS_* credentials and TLS (docs/design.md §2), WAZAP_CONNECTOR
(whatsapp|demo|sim), WAZAP_OWNER_PASSWORD, WAZAP_DATA_DIR, RUST_LOG.
";

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run the worker.
    Serve,
    /// Apply migrations and exit.
    Migrate,
    /// Read the owner password from stdin and store it.
    SetOwnerPassword,
    /// `link [--account ID] [--phone DIGITS]`: pair a phone with an account's device store.
    Link {
        /// The account (default: `default`).
        account: String,
        /// Pair by code for this phone number instead of by QR.
        phone: Option<String>,
    },
    /// `account add|list|remove`.
    Account(account::AccountCommand),
    /// Print [`USAGE`].
    Help,
    /// `connection create`.
    CreateConnection(CreateArgs),
    /// `connection list`.
    ListConnections,
    /// `connection revoke --id ID`.
    RevokeConnection {
        /// The connection id.
        id: String,
    },
    /// `connection permit --id ID --mode …`.
    PermitConnection(crate::grants::PermissionEdit),
}

/// The arguments of `connection create`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateArgs {
    /// `--name`.
    pub name: String,
    /// `--kind`.
    pub kind: ConnectionKind,
    /// `--expires-in`, counted from the moment the connection is created.
    pub expires_in: TimeDelta,
    /// `--chats` / `--except` / `--since` / `--until`.
    pub read_scope: ReadScope,
}

/// A command line that cannot be used; its text is one line for stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} (see --help)")]
pub struct UsageError(pub String);

/// Parse the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, UsageError> {
    let args: Vec<String> = args.into_iter().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        [] | ["serve"] => Ok(Command::Serve),
        ["migrate"] => Ok(Command::Migrate),
        ["set-owner-password"] => Ok(Command::SetOwnerPassword),
        ["serve" | "migrate" | "set-owner-password", extra, ..] => {
            Err(usage(format!("unexpected argument {extra}")))
        }
        ["link", rest @ ..] => {
            let mut opts = Options::parse(rest, &["--account", "--phone"])?;
            let account = opts
                .take("--account")
                .map(account::id)
                .transpose()?
                .unwrap_or_else(|| wazap_shared::ids::DEFAULT_ACCOUNT.to_owned());
            let phone = opts.take("--phone");
            if let Some(p) = &phone
                && !(7..=15).contains(&p.len())
            {
                return Err(usage("--phone: expected 7-15 digits with the country code"));
            }
            if phone
                .as_deref()
                .is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(usage("--phone: expected digits only (country code, no +)"));
            }
            Ok(Command::Link { account, phone })
        }
        ["account", rest @ ..] => account::parse(rest),
        ["connection", "create", rest @ ..] => create(rest),
        ["connection", "list"] => Ok(Command::ListConnections),
        ["connection", "list", extra, ..] => Err(usage(format!("unexpected argument {extra}"))),
        ["connection", "revoke", rest @ ..] => {
            let mut opts = Options::parse(rest, &["--id"])?;
            let id = opts.required("--id")?;
            if !wazap_shared::ids::is_opaque(&id, "conn_") {
                return Err(usage("--id: expected a connection id (conn_...)"));
            }
            Ok(Command::RevokeConnection { id })
        }
        ["connection", "permit", rest @ ..] => permit(rest),
        ["connection", other, ..] => Err(usage(format!("unknown connection command {other}"))),
        ["connection"] => Err(usage("connection needs create, list, revoke or permit")),
        [other, ..] => Err(usage(format!("unknown command {other}"))),
    }
}

/// `connection create` options.
fn create(rest: &[&str]) -> Result<Command, UsageError> {
    let mut opts = Options::parse(
        rest,
        &[
            "--name",
            "--kind",
            "--expires-in",
            "--chats",
            "--except",
            "--since",
            "--until",
            "--accounts",
        ],
    )?;
    let name = opts.required("--name")?;
    if name.trim().is_empty() {
        return Err(usage("--name: must not be empty"));
    }
    let kind = opts
        .required("--kind")?
        .parse()
        .map_err(|_| usage("--kind: expected local or remote"))?;
    let expires_in = parse_duration(&opts.required("--expires-in")?)
        .map_err(|e| usage(format!("--expires-in: {e}")))?;
    let chats = match (opts.take("--chats"), opts.take("--except")) {
        (Some(_), Some(_)) => return Err(usage("--chats and --except exclude each other")),
        (Some(c), None) => ChatSelection::Selected {
            chats: parse_chat_list(&c).map_err(|e| usage(format!("--chats: {e}")))?,
        },
        (None, Some(c)) => ChatSelection::AllExcept {
            chats: parse_chat_list(&c).map_err(|e| usage(format!("--except: {e}")))?,
        },
        (None, None) => ChatSelection::All,
    };
    let since = opts
        .take("--since")
        .map(|s| parse_date(&s, DayBound::Start))
        .transpose()
        .map_err(|e| usage(format!("--since: {e}")))?;
    let until = opts
        .take("--until")
        .map(|s| parse_date(&s, DayBound::End))
        .transpose()
        .map_err(|e| usage(format!("--until: {e}")))?;
    if let (Some(s), Some(u)) = (since, until)
        && s >= u
    {
        return Err(usage("--until: must be after --since"));
    }
    let accounts = match opts.take("--accounts").as_deref() {
        None => AccountSelection::default(),
        Some("all") => AccountSelection::All,
        Some(list) => AccountSelection::Only {
            accounts: list
                .split(',')
                .map(|a| account::id(a.trim().to_owned()))
                .collect::<Result<_, _>>()
                .map_err(|e| usage(format!("--accounts: {}", e.0)))?,
        },
    };
    Ok(Command::CreateConnection(CreateArgs {
        name,
        kind,
        expires_in,
        read_scope: ReadScope {
            chats,
            since,
            until,
            accounts,
            per_account: Default::default(),
        },
    }))
}

/// `connection permit` options.
fn permit(rest: &[&str]) -> Result<Command, UsageError> {
    use wazap_shared::wire::grants::SendMode;
    let mut opts = Options::parse(
        rest,
        &[
            "--id",
            "--mode",
            "--chats",
            "--revision",
            "--expected-send-revision",
        ],
    )?;
    let id = opts.required("--id")?;
    if !wazap_shared::ids::is_opaque(&id, "conn_") {
        return Err(usage("--id: expected a connection id (conn_...)"));
    }
    let mode = match opts.required("--mode")?.as_str() {
        "none" => SendMode::None,
        "selected" => SendMode::Selected,
        "all" => SendMode::All,
        _ => return Err(usage("--mode: expected none, selected or all")),
    };
    let chats = match (mode, opts.take("--chats")) {
        (SendMode::Selected, Some(c)) => {
            parse_chat_list(&c).map_err(|e| usage(format!("--chats: {e}")))?
        }
        (SendMode::Selected, None) => {
            return Err(usage("--chats is required with --mode selected"));
        }
        (_, Some(_)) => return Err(usage("--chats: only with --mode selected")),
        (_, None) => Vec::new(),
    };
    let number = |opts: &mut Options, key: &'static str| {
        opts.take(key)
            .map(|v| v.parse::<u32>())
            .transpose()
            .map_err(|_| usage(format!("{key}: expected a whole number")))
    };
    let revision = number(&mut opts, "--revision")?;
    let expected_send_revision = number(&mut opts, "--expected-send-revision")?;
    Ok(Command::PermitConnection(crate::grants::PermissionEdit {
        id,
        revision,
        mode,
        chats,
        expected_send_revision,
    }))
}

/// `--option value` / `--option=value` pairs, each allowed once.
struct Options(Vec<(&'static str, String)>);

impl Options {
    /// Parse `args`, accepting only the options in `known`.
    fn parse(args: &[&str], known: &[&'static str]) -> Result<Self, UsageError> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
                _ => (*arg, None),
            };
            let Some(&key) = known.iter().find(|k| **k == name) else {
                return Err(if name.starts_with('-') {
                    usage(format!("unknown option {name}"))
                } else {
                    usage(format!("unexpected argument {name}"))
                });
            };
            let value = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .map(|v| (*v).to_owned())
                    .ok_or_else(|| usage(format!("{key} needs a value")))?,
            };
            if out.iter().any(|(k, _)| *k == key) {
                return Err(usage(format!("{key} given twice")));
            }
            out.push((key, value));
        }
        Ok(Self(out))
    }

    /// Remove and return the value of `key`, if given.
    fn take(&mut self, key: &str) -> Option<String> {
        let i = self.0.iter().position(|(k, _)| *k == key)?;
        Some(self.0.remove(i).1)
    }

    /// Remove and return the value of `key`, which must be given.
    fn required(&mut self, key: &'static str) -> Result<String, UsageError> {
        self.take(key)
            .ok_or_else(|| usage(format!("{key} is required")))
    }
}

/// A usage error with `msg`.
fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn commands() {
        assert_eq!(p(&[]).unwrap(), Command::Serve);
        assert_eq!(p(&["serve"]).unwrap(), Command::Serve);
        assert_eq!(
            p(&["set-owner-password"]).unwrap(),
            Command::SetOwnerPassword
        );
        assert!(p(&["set-owner-password", "hunter22"]).is_err());
        assert_eq!(p(&["migrate"]).unwrap(), Command::Migrate);
        assert_eq!(
            p(&["link"]).unwrap(),
            Command::Link {
                account: "default".into(),
                phone: None
            }
        );
        assert_eq!(
            p(&["link", "--account", "work"]).unwrap(),
            Command::Link {
                account: "work".into(),
                phone: None
            }
        );
        assert_eq!(
            p(&["link", "--phone", "15550001111"]).unwrap(),
            Command::Link {
                account: "default".into(),
                phone: Some("15550001111".into())
            }
        );
        assert!(
            p(&["link", "--phone", "+1555000111"])
                .unwrap_err()
                .0
                .contains("digits")
        );
        assert!(
            p(&["link", "--phone", "12"])
                .unwrap_err()
                .0
                .contains("7-15")
        );
        assert!(
            p(&["link", "now"])
                .unwrap_err()
                .0
                .contains("unexpected argument")
        );
        assert_eq!(p(&["--help"]).unwrap(), Command::Help);
        assert_eq!(p(&["connection", "create", "-h"]).unwrap(), Command::Help);
        assert_eq!(
            p(&["connection", "list"]).unwrap(),
            Command::ListConnections
        );
        assert_eq!(
            p(&["connection", "revoke", "--id", "conn_0123456789abcdef"]).unwrap(),
            Command::RevokeConnection {
                id: "conn_0123456789abcdef".into()
            }
        );
        assert_eq!(
            p(&["connection", "revoke", "--id=conn_1"]).unwrap(),
            Command::RevokeConnection {
                id: "conn_1".into()
            }
        );
    }

    #[test]
    fn permit_parses_modes_and_revisions() {
        use wazap_shared::wire::grants::SendMode;
        let c = p(&[
            "connection",
            "permit",
            "--id",
            "conn_1",
            "--mode",
            "selected",
            "--chats",
            "c_1,c_2",
            "--expected-send-revision",
            "3",
        ])
        .unwrap();
        let Command::PermitConnection(e) = c else {
            panic!("not a permit: {c:?}")
        };
        assert_eq!(e.mode, SendMode::Selected);
        assert_eq!(e.chats, vec!["c_1".to_owned(), "c_2".to_owned()]);
        assert_eq!(e.expected_send_revision, Some(3));
        assert_eq!(e.revision, None);
        let Command::PermitConnection(e) =
            p(&["connection", "permit", "--id=conn_1", "--mode=none"]).unwrap()
        else {
            panic!("not a permit")
        };
        assert_eq!(e.mode, SendMode::None);
        assert!(e.chats.is_empty());
    }

    #[test]
    fn create_with_every_option() {
        let c = p(&[
            "connection",
            "create",
            "--name",
            "my bot",
            "--kind",
            "remote",
            "--expires-in=30d",
            "--except",
            "c_1,c_2",
            "--since",
            "2026-01-01",
            "--until",
            "2026-01-31",
            "--accounts",
            "default,work",
        ])
        .unwrap();
        let Command::CreateConnection(a) = c else {
            panic!("not a create: {c:?}")
        };
        assert_eq!(
            a.read_scope.accounts,
            AccountSelection::Only {
                accounts: vec!["default".into(), "work".into()]
            }
        );
        assert_eq!(a.name, "my bot");
        assert_eq!(a.kind, ConnectionKind::Remote);
        assert_eq!(a.expires_in, TimeDelta::days(30));
        assert_eq!(
            a.read_scope.chats,
            ChatSelection::AllExcept {
                chats: vec!["c_1".into(), "c_2".into()]
            }
        );
        assert_eq!(
            a.read_scope.since,
            Some("2026-01-01T00:00:00Z".parse().unwrap())
        );
        assert_eq!(
            a.read_scope.until,
            Some("2026-02-01T00:00:00Z".parse().unwrap())
        );

        let c = p(&[
            "connection",
            "create",
            "--name",
            "x",
            "--kind",
            "local",
            "--expires-in",
            "90m",
        ]);
        let Ok(Command::CreateConnection(a)) = c else {
            panic!("{c:?}")
        };
        // Every chat of the default account only, unless --accounts says otherwise.
        assert_eq!(
            a.read_scope,
            ReadScope {
                accounts: AccountSelection::default(),
                ..ReadScope::all()
            }
        );
        assert_eq!(a.expires_in, TimeDelta::minutes(90));
    }

    #[test]
    fn bad_input_names_the_problem() {
        let base = [
            "connection",
            "create",
            "--name",
            "x",
            "--kind",
            "local",
            "--expires-in",
            "1d",
        ];
        let with = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            p(&v).unwrap_err().0
        };
        assert!(with(&["--chats", "c_1", "--except", "c_2"]).contains("exclude"));
        assert!(with(&["--chats", "+972501234567"]).starts_with("--chats:"));
        assert!(with(&["--since", "2026-02-01", "--until", "2026-01-01"]).starts_with("--until:"));
        assert!(with(&["--since", "soon"]).starts_with("--since:"));
        assert!(with(&["--name", "y"]).contains("twice"));
        assert!(with(&["--color", "red"]).contains("unknown option --color"));
        assert!(with(&["stray"]).contains("unexpected argument"));
        assert!(with(&["--until"]).contains("needs a value"));
        assert!(with(&["--accounts", "default,Work"]).starts_with("--accounts: account id"));
        for (args, needle) in [
            (
                &[
                    "connection",
                    "create",
                    "--kind",
                    "local",
                    "--expires-in",
                    "1d",
                ][..],
                "--name is required",
            ),
            (
                &["connection", "create", "--name", "x", "--kind", "local"],
                "--expires-in is required",
            ),
            (
                &[
                    "connection",
                    "create",
                    "--name",
                    "x",
                    "--kind",
                    "lan",
                    "--expires-in",
                    "1d",
                ],
                "--kind",
            ),
            (
                &[
                    "connection",
                    "create",
                    "--name",
                    "x",
                    "--kind",
                    "local",
                    "--expires-in",
                    "1y",
                ],
                "--expires-in",
            ),
            (&["connection", "revoke"], "--id is required"),
            (&["connection", "revoke", "--id", "c_1"], "--id"),
            (&["connection", "rotate"], "unknown connection command"),
            (&["connection"], "create, list, revoke or permit"),
            (
                &["connection", "permit", "--id", "conn_1"],
                "--mode is required",
            ),
            (
                &[
                    "connection",
                    "permit",
                    "--id",
                    "conn_1",
                    "--mode",
                    "selected",
                ],
                "--chats is required",
            ),
            (
                &[
                    "connection",
                    "permit",
                    "--id",
                    "conn_1",
                    "--mode",
                    "all",
                    "--chats",
                    "c_1",
                ],
                "only with --mode selected",
            ),
            (
                &["connection", "permit", "--id", "conn_1", "--mode", "some"],
                "--mode",
            ),
            (&["serve", "now"], "unexpected argument"),
            (&["launch"], "unknown command"),
        ] {
            let e = p(args).unwrap_err();
            assert!(e.0.contains(needle), "{args:?}: {e}");
            assert!(e.to_string().ends_with("(see --help)"));
        }
    }
}
