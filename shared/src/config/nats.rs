//! The NATS connection of a gateway or the worker: server URL(s), credentials and TLS, read once
//! from the `WAZAP_NATS_*` variables ([`NatsConfig::from_source`]) and applied by
//! [`crate::bus::connect`].
//!
//! `WAZAP_NATS_URL` may list several servers of one cluster: the client starts on any of them and
//! moves to another when its server goes away. `WAZAP_NATS_REPLICAS` is how many of the cluster's
//! servers keep a copy of the JetStream media buckets this client creates
//! ([`NatsConfig::replicas`]).
//!
//! None of it is required: a developer's loopback NATS takes anonymous clients. A deployment's
//! server gives the gateway and the worker users of their own (`deploy/nats.conf`). Secrets
//! (password, token, NKey seed) are kept in [`Secret`], whose `Debug` never shows them, and a bad
//! value is a [`ConfigError`] naming the variable, never its value.

use std::path::{Path, PathBuf};

use super::{ConfigError, Source, nats_url, parsed, string, switch};

/// `WAZAP_NATS_USER`: user name (with `WAZAP_NATS_PASSWORD`).
pub const NATS_USER: &str = "WAZAP_NATS_USER";
/// `WAZAP_NATS_PASSWORD`: password (with `WAZAP_NATS_USER`).
pub const NATS_PASSWORD: &str = "WAZAP_NATS_PASSWORD";
/// `WAZAP_NATS_TOKEN`: an authentication token.
pub const NATS_TOKEN: &str = "WAZAP_NATS_TOKEN";
/// `WAZAP_NATS_NKEY_SEED`: a user NKey seed (`SU…`).
pub const NATS_NKEY_SEED: &str = "WAZAP_NATS_NKEY_SEED";
/// `WAZAP_NATS_CREDS_FILE`: a `.creds` file (user JWT + NKey seed, decentralized auth).
pub const NATS_CREDS_FILE: &str = "WAZAP_NATS_CREDS_FILE";
/// `WAZAP_NATS_TLS_CA_FILE`: PEM root certificates to trust for the server.
pub const NATS_TLS_CA_FILE: &str = "WAZAP_NATS_TLS_CA_FILE";
/// `WAZAP_NATS_TLS_CERT_FILE`: PEM client certificate (with `WAZAP_NATS_TLS_KEY_FILE`).
pub const NATS_TLS_CERT_FILE: &str = "WAZAP_NATS_TLS_CERT_FILE";
/// `WAZAP_NATS_TLS_KEY_FILE`: PEM client key (with `WAZAP_NATS_TLS_CERT_FILE`).
pub const NATS_TLS_KEY_FILE: &str = "WAZAP_NATS_TLS_KEY_FILE";
/// `WAZAP_NATS_TLS_REQUIRED`: `on` refuses a server that does not speak TLS.
pub const NATS_TLS_REQUIRED: &str = "WAZAP_NATS_TLS_REQUIRED";
/// `WAZAP_NATS_REPLICAS`: copies of each JetStream media bucket, 1 to 5 (default 1).
pub const NATS_REPLICAS: &str = "WAZAP_NATS_REPLICAS";

/// The most copies JetStream keeps of a stream.
const MAX_REPLICAS: usize = 5;

/// The credential variables, at most one kind of which may be set.
const AUTH_VARS: &str = "WAZAP_NATS_USER/WAZAP_NATS_PASSWORD, WAZAP_NATS_TOKEN, WAZAP_NATS_NKEY_SEED, WAZAP_NATS_CREDS_FILE";

/// A secret value: shown as `<redacted>` by `Debug`, read only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that hands it to the NATS client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How the client proves who it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NatsAuth {
    /// Anonymous (a developer's loopback server).
    #[default]
    None,
    /// `WAZAP_NATS_USER` + `WAZAP_NATS_PASSWORD`.
    UserPassword {
        /// The user name (not secret).
        user: String,
        /// The password.
        password: Secret,
    },
    /// `WAZAP_NATS_TOKEN`.
    Token(Secret),
    /// `WAZAP_NATS_NKEY_SEED`: the seed signs the server's nonce.
    NKey(Secret),
    /// `WAZAP_NATS_CREDS_FILE`: read when connecting.
    CredsFile(PathBuf),
}

/// TLS towards the server. A `tls://` URL, a CA file or a client certificate turns it on
/// as well.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NatsTls {
    /// Root certificates (PEM) the server's certificate must chain to, beside the system's.
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key (PEM), for servers that verify clients.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Refuse a connection without TLS.
    pub required: bool,
}

/// Everything [`crate::bus::connect`] needs to reach NATS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsConfig {
    /// Server URL(s), comma-separated (`WAZAP_NATS_URL`; never with credentials in it); the
    /// client is given every one ([`Self::servers`]).
    pub url: String,
    /// Credentials.
    pub auth: NatsAuth,
    /// TLS.
    pub tls: NatsTls,
    /// The subject prefix of this client's reply inboxes (`_INBOX` when `None`). Not read from
    /// the environment: each binary sets its role's ([`crate::subjects::Subjects::inbox`]) so
    /// that a server's permissions can give each role its own inboxes only.
    pub inbox_prefix: Option<String>,
    /// How many servers keep a copy of a media bucket this client creates
    /// (`WAZAP_NATS_REPLICAS`, 1..=5, default 1). Set by the operator rather than guessed from
    /// the servers the client sees: a cluster with a node down at creation time, or one whose
    /// servers do not advertise each other, would otherwise get fewer copies without a word, and
    /// JetStream refuses more than one on a single server, which should fail loudly at the first
    /// media send rather than quietly keep one.
    pub replicas: usize,
}

impl NatsConfig {
    /// An anonymous, plain connection to `url` (tests, a developer's loopback server).
    pub fn plain(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            auth: NatsAuth::None,
            tls: NatsTls::default(),
            inbox_prefix: None,
            replicas: 1,
        }
    }

    /// Every server of [`Self::url`], in the order given (the client shuffles them when it
    /// connects, and adds the servers they advertise).
    pub fn servers(&self) -> Result<Vec<async_nats::ServerAddr>, ConfigError> {
        servers(&self.url)
    }

    /// The same connection with `user`/`password`.
    pub fn with_user(mut self, user: &str, password: &str) -> Self {
        self.auth = NatsAuth::UserPassword {
            user: user.to_owned(),
            password: Secret::new(password),
        };
        self
    }

    /// The same connection with its reply inboxes under `prefix`.
    pub fn with_inbox_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.inbox_prefix = Some(prefix.into());
        self
    }

    /// Whether this client connects with credentials of its own (any [`NatsAuth`] but `None`).
    /// A server that accepted them has identified the client as the user they name, so what it
    /// delivers on subjects only that user's permissions reach came through that user.
    pub fn is_authenticated(&self) -> bool {
        self.auth != NatsAuth::None
    }

    /// Read `WAZAP_NATS_URL` and the credential and TLS variables; a bad value names its
    /// variable, never the value.
    pub fn from_source(src: &impl Source) -> Result<Self, ConfigError> {
        let url = nats_url(src)?;
        if url.split(',').any(|u| u.contains('@')) {
            return Err(ConfigError::new(
                super::NATS_URL,
                "expected a URL without credentials (use WAZAP_NATS_USER and WAZAP_NATS_PASSWORD)",
            ));
        }
        servers(&url)?;
        let replicas = parsed(src, NATS_REPLICAS, 1, REPLICAS_EXPECTED)?;
        if !(1..=MAX_REPLICAS).contains(&replicas) {
            return Err(ConfigError::new(NATS_REPLICAS, REPLICAS_EXPECTED));
        }
        let tls_url = url.split(',').any(|u| u.trim().starts_with("tls://"));
        let auth = auth(src)?;
        let ca_file = file(src, NATS_TLS_CA_FILE, "expected a readable PEM file")?;
        let cert = file(src, NATS_TLS_CERT_FILE, "expected a readable PEM file")?;
        let key = file(src, NATS_TLS_KEY_FILE, "expected a readable PEM file")?;
        let client_cert = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => {
                return Err(ConfigError::new(
                    NATS_TLS_KEY_FILE,
                    "required with WAZAP_NATS_TLS_CERT_FILE",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    NATS_TLS_CERT_FILE,
                    "required with WAZAP_NATS_TLS_KEY_FILE",
                ));
            }
        };
        let implied = tls_url || ca_file.is_some() || client_cert.is_some();
        let required = switch(src, NATS_TLS_REQUIRED, implied)?;
        if implied && !required {
            return Err(ConfigError::new(
                NATS_TLS_REQUIRED,
                "cannot be off with a tls:// URL, a CA file or a client certificate",
            ));
        }
        Ok(Self {
            url,
            auth,
            tls: NatsTls {
                ca_file,
                client_cert,
                required,
            },
            inbox_prefix: None,
            replicas,
        })
    }
}

const REPLICAS_EXPECTED: &str = "expected a whole number from 1 to 5";

/// Each comma-separated server of `url` as the client takes it; one that does not parse (a bad
/// port, say) or names no host (an empty entry) is refused with the wording [`nats_url`] gives
/// a bad scheme: the same rule.
fn servers(url: &str) -> Result<Vec<async_nats::ServerAddr>, ConfigError> {
    url.split(',')
        .map(|u| {
            u.trim()
                .parse::<async_nats::ServerAddr>()
                .ok()
                .filter(|s| !s.host().is_empty())
        })
        .collect::<Option<_>>()
        .ok_or_else(|| ConfigError::new(super::NATS_URL, "expected a nats:// URL"))
}

/// The one kind of credentials set, if any.
fn auth(src: &impl Source) -> Result<NatsAuth, ConfigError> {
    let raw = |var| src.get(var).filter(|v| !v.trim().is_empty());
    let user = raw(NATS_USER).map(|u| u.trim().to_owned());
    let password = raw(NATS_PASSWORD);
    let token = raw(NATS_TOKEN);
    let seed = raw(NATS_NKEY_SEED).map(|s| s.trim().to_owned());
    let creds = file(src, NATS_CREDS_FILE, "expected a readable .creds file")?;
    let mut chosen = Vec::new();
    if let Some(user) = user {
        if user
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(ConfigError::new(
                NATS_USER,
                "expected a user name without spaces",
            ));
        }
        let password = password
            .ok_or_else(|| ConfigError::new(NATS_PASSWORD, "required with WAZAP_NATS_USER"))?;
        chosen.push((
            NATS_USER,
            NatsAuth::UserPassword {
                user,
                password: Secret::new(password),
            },
        ));
    } else if password.is_some() {
        return Err(ConfigError::new(
            NATS_USER,
            "required with WAZAP_NATS_PASSWORD",
        ));
    }
    if let Some(token) = token {
        chosen.push((NATS_TOKEN, NatsAuth::Token(Secret::new(token))));
    }
    if let Some(seed) = seed {
        if !is_user_seed(&seed) {
            return Err(ConfigError::new(
                NATS_NKEY_SEED,
                "expected a user NKey seed (SU…)",
            ));
        }
        chosen.push((NATS_NKEY_SEED, NatsAuth::NKey(Secret::new(seed))));
    }
    if let Some(path) = creds {
        chosen.push((NATS_CREDS_FILE, NatsAuth::CredsFile(path)));
    }
    match chosen.len() {
        0 => Ok(NatsAuth::None),
        1 => Ok(chosen.remove(0).1),
        _ => Err(ConfigError::new(
            chosen[1].0,
            format!("set only one kind of NATS credentials ({AUTH_VARS})"),
        )),
    }
}

/// The shape of a user NKey seed: 58 characters of base32 starting `SU` (the seed's checksum
/// is checked by the client when it signs).
fn is_user_seed(seed: &str) -> bool {
    seed.len() == 58
        && seed.starts_with("SU")
        && seed
            .bytes()
            .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b))
}

/// A path in `var` that names a readable file, or `None` when unset.
fn file(
    src: &impl Source,
    var: &'static str,
    expected: &str,
) -> Result<Option<PathBuf>, ConfigError> {
    let path = string(src, var, "");
    if path.is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(path);
    if !readable(&path) {
        return Err(ConfigError::new(var, expected));
    }
    Ok(Some(path))
}

fn readable(path: &Path) -> bool {
    std::fs::File::open(path).is_ok_and(|f| f.metadata().is_ok_and(|m| m.is_file()))
}

#[cfg(test)]
mod tests;
