//! The worker's configuration, read once from the environment (DESIGN §2).

use wazap_shared::config::{self, ConfigError, Source};

/// `WAZAP_DATABASE_URL`.
pub const DATABASE_URL: &str = "WAZAP_DATABASE_URL";
/// `WAZAP_CONNECTOR`.
pub const CONNECTOR: &str = "WAZAP_CONNECTOR";
/// `WAZAP_OWNER_PASSWORD`.
pub const OWNER_PASSWORD: &str = "WAZAP_OWNER_PASSWORD";
/// `WAZAP_DATA_DIR`.
pub const DATA_DIR: &str = "WAZAP_DATA_DIR";

/// `WAZAP_WHATSAPP_NETWORK`.
pub const WHATSAPP_NETWORK: &str = "WAZAP_WHATSAPP_NETWORK";

/// The network the client talks to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// WhatsApp's own servers.
    #[default]
    Whatsapp,
    /// A test network: its chat socket at `{base}/ws/chat`, and every HTTPS request the client
    /// makes (media, version) sent to the same host and port instead.
    Local {
        /// `ws://host:port` or `wss://host:port`, without a trailing slash.
        base: String,
    },
}

impl Network {
    /// Parse `WAZAP_WHATSAPP_NETWORK`: `ws://host:port` or `wss://host:port` (a trailing `/` is
    /// dropped), or `None` for WhatsApp.
    pub fn parse(raw: Option<&str>) -> Result<Self, &'static str> {
        let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(Self::Whatsapp);
        };
        let base = raw.trim_end_matches('/');
        let rest = base
            .strip_prefix("ws://")
            .or_else(|| base.strip_prefix("wss://"))
            .ok_or("expected ws://HOST:PORT or wss://HOST:PORT")?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or("expected ws://HOST:PORT or wss://HOST:PORT")?;
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-[]:".contains(&b));
        if !host_ok || port.parse::<u16>().is_err() {
            return Err("expected ws://HOST:PORT or wss://HOST:PORT");
        }
        Ok(Self::Local {
            base: base.to_owned(),
        })
    }

    /// Whether this network is on this machine.
    pub fn is_loopback(&self) -> bool {
        match self {
            Self::Whatsapp => false,
            Self::Local { base } => {
                let host = base.split_once("://").map_or("", |(_, r)| r);
                let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                host == "localhost"
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
        }
    }
}

/// Which WhatsApp side the worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectorKind {
    /// The real WhatsApp connection.
    Whatsapp,
    /// A built-in sample archive that cannot send.
    Demo,
    /// A deterministic test peer driven over NATS `<prefix>.sim.<op>`.
    Sim,
}

impl ConnectorKind {
    /// What a connector's name may be, in the words every refusal uses.
    pub const RULE: &'static str = "expected whatsapp, demo or sim";

    /// The name `WAZAP_CONNECTOR` and the account registry use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Whatsapp => "whatsapp",
            Self::Demo => "demo",
            Self::Sim => "sim",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Whatsapp, Self::Demo, Self::Sim]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

/// Everything the worker reads from the environment.
#[derive(Clone)]
pub struct Config {
    /// The NATS connection (`WAZAP_NATS_URL`, credentials, TLS), with the worker's reply
    /// inboxes.
    pub nats: config::NatsConfig,
    /// Subject prefix.
    pub nats_prefix: String,
    /// Postgres URL.
    pub database_url: String,
    /// The connector.
    pub connector: ConnectorKind,
    /// The first owner password, if given.
    pub owner_password: Option<String>,
    /// The worker's own files: the WhatsApp device store (keys of the linked device) lives here.
    pub data_dir: std::path::PathBuf,
    /// Where the `whatsapp` connector connects.
    pub whatsapp_network: Network,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("nats", &self.nats)
            .field("nats_prefix", &self.nats_prefix)
            .field("connector", &self.connector)
            .field(
                "owner_password",
                &self.owner_password.as_ref().map(|_| "<set>"),
            )
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Read the configuration from `src`.
    pub fn from_source(src: &impl Source) -> Result<Self, ConfigError> {
        let database_url = config::string(
            src,
            DATABASE_URL,
            "postgres://postgres@127.0.0.1:5432/wazap",
        );
        if database_url.parse::<tokio_postgres::Config>().is_err() {
            return Err(ConfigError::new(DATABASE_URL, "expected a postgres:// URL"));
        }
        let connector = ConnectorKind::parse(&config::string(src, CONNECTOR, "whatsapp"))
            .ok_or_else(|| ConfigError::new(CONNECTOR, ConnectorKind::RULE))?;
        let nats_prefix = config::nats_prefix(src)?;
        Ok(Self {
            nats: config::NatsConfig::from_source(src)?.with_inbox_prefix(
                wazap_shared::subjects::Subjects::new(&nats_prefix).worker_inbox(),
            ),
            nats_prefix,
            database_url,
            connector,
            owner_password: src.get(OWNER_PASSWORD).filter(|p| !p.is_empty()),
            data_dir: config::string(src, DATA_DIR, "data").into(),
            whatsapp_network: Network::parse(src.get(WHATSAPP_NETWORK).as_deref())
                .map_err(|e| ConfigError::new(WHATSAPP_NETWORK, e))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn reads_defaults_and_rejects_bad_values() {
        let empty: HashMap<&str, &str> = HashMap::new();
        let c = Config::from_source(&empty).unwrap();
        assert_eq!(c.connector, ConnectorKind::Whatsapp);
        assert_eq!(c.nats_prefix, "wazap");
        assert!(!c.nats.is_authenticated());
        assert_eq!(c.nats.inbox_prefix.as_deref(), Some("_INBOX.wazap.worker"));
        assert_eq!(c.data_dir, std::path::PathBuf::from("data"));
        let bad: HashMap<&str, &str> = [(CONNECTOR, "fax")].into_iter().collect();
        assert_eq!(Config::from_source(&bad).unwrap_err().var, CONNECTOR);
        let bad: HashMap<&str, &str> = [(DATABASE_URL, "mysql:/x y")].into_iter().collect();
        assert_eq!(Config::from_source(&bad).unwrap_err().var, DATABASE_URL);
    }
}
