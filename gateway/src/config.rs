//! The gateway's configuration (DESIGN §2), read once at start-up from a
//! [`wazap_shared::config::Source`] so tests can pass a map instead of the process environment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use wazap_shared::config::{self as cfg, ConfigError, Source};

/// `WAZAP_MCP_ADDR`.
pub const MCP_ADDR: &str = "WAZAP_MCP_ADDR";
/// `WAZAP_OWNER_ADDR`.
pub const OWNER_ADDR: &str = "WAZAP_OWNER_ADDR";
/// `WAZAP_PUBLIC_HOSTS`.
pub const PUBLIC_HOSTS: &str = "WAZAP_PUBLIC_HOSTS";
/// `WAZAP_OWNER_ORIGIN`.
pub const OWNER_ORIGIN: &str = "WAZAP_OWNER_ORIGIN";
/// `WAZAP_TRUSTED_PROXIES`.
pub const TRUSTED_PROXIES: &str = "WAZAP_TRUSTED_PROXIES";
/// `WAZAP_MCP_MAX_CONCURRENCY`.
pub const MCP_MAX_CONCURRENCY: &str = "WAZAP_MCP_MAX_CONCURRENCY";
/// `WAZAP_MCP_BODY_BUDGET_MIB`.
pub const MCP_BODY_BUDGET_MIB: &str = "WAZAP_MCP_BODY_BUDGET_MIB";
/// `WAZAP_OAUTH_PRIVATE_DOCUMENTS`: fetch OAuth client metadata documents from private and
/// loopback addresses too (tests; a client on the same private network). Off by default (SSRF).
pub const OAUTH_PRIVATE_DOCUMENTS: &str = "WAZAP_OAUTH_PRIVATE_DOCUMENTS";
/// `WAZAP_OUTBOUND`.
pub const OUTBOUND: &str = "WAZAP_OUTBOUND";
/// `WAZAP_ATTACHMENTS`.
pub const ATTACHMENTS: &str = "WAZAP_ATTACHMENTS";

/// Largest accepted `WAZAP_MCP_MAX_CONCURRENCY`.
const MAX_CONCURRENCY_CEILING: usize = 4096;

/// `WAZAP_MCP_BODY_BUDGET_MIB`'s default: one largest (12 MiB) send body and room for small ones,
/// within the gateway's 40 MiB RSS budget (DESIGN §11).
const BODY_BUDGET_DEFAULT_MIB: usize = 16;
/// `WAZAP_MCP_BODY_BUDGET_MIB`'s range: at least one largest send body, at most 1 GiB.
const BODY_BUDGET_RANGE_MIB: std::ops::RangeInclusive<usize> = 12..=1024;
const BODY_BUDGET_EXPECTED: &str = "expected a whole number of MiB from 12 to 1024";

/// Everything the gateway reads from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The NATS connection (`WAZAP_NATS_URL`, credentials, TLS), with the gateways' reply inboxes.
    pub nats: cfg::NatsConfig,
    /// NATS subject prefix of this deployment.
    pub nats_prefix: String,
    /// The MCP listener (MCP + JSON API) address.
    pub mcp_addr: SocketAddr,
    /// The owner listener (owner dashboard) address.
    pub owner_addr: SocketAddr,
    /// Exact `Host` values accepted on the MCP listener, lower-cased; entries without a port also
    /// match with the listener's bound port.
    pub public_hosts: Vec<String>,
    /// The exact `Origin` of the owner dashboard (`scheme://host[:port]`).
    pub owner_origin: String,
    /// The reverse proxies whose `X-Forwarded-For` the owner login throttle believes (none by
    /// default).
    pub trusted_proxies: TrustedProxies,
    /// Requests of one credential in flight on each listener's `/mcp` and `/api/send/*` (A's, and
    /// B's apart); each listener admits one more, for a credential with none in flight
    /// (`http/permits`). More get `busy`.
    pub mcp_max_concurrency: usize,
    /// Bytes of request bodies being read or handled at once, both listeners together; more get
    /// `busy`.
    pub body_budget_bytes: usize,
    /// Whether OAuth client metadata documents may be fetched from private and loopback
    /// addresses (`WAZAP_OAUTH_PRIVATE_DOCUMENTS`, off by default).
    pub oauth_private_documents: bool,
    /// Certificates (DER) trusted beside the system's roots when fetching OAuth client metadata
    /// documents: not read from the environment; tests serve documents under their own CA.
    pub oauth_document_roots: Vec<Vec<u8>>,
    /// Whether send tools and `/api/send/*` exist.
    pub outbound: bool,
    /// Whether the attachment tools exist.
    pub attachments: bool,
    /// How long a send waits for the worker: DESIGN §5's 60 s, not read from the environment.
    /// Tests shorten it to watch a send outlive its deadline without waiting a minute.
    pub send_deadline: std::time::Duration,
}

impl Config {
    /// Read the configuration; a bad value names its variable, never the value.
    pub fn from_source(src: &impl Source) -> Result<Config, ConfigError> {
        let mcp_max_concurrency = cfg::parsed::<usize>(
            src,
            MCP_MAX_CONCURRENCY,
            2,
            "expected a whole number from 1 to 4096",
        )?;
        if !(1..=MAX_CONCURRENCY_CEILING).contains(&mcp_max_concurrency) {
            return Err(ConfigError::new(
                MCP_MAX_CONCURRENCY,
                "expected a whole number from 1 to 4096",
            ));
        }
        let nats_prefix = cfg::nats_prefix(src)?;
        let body_budget_mib = cfg::parsed::<usize>(
            src,
            MCP_BODY_BUDGET_MIB,
            BODY_BUDGET_DEFAULT_MIB,
            BODY_BUDGET_EXPECTED,
        )?;
        if !BODY_BUDGET_RANGE_MIB.contains(&body_budget_mib) {
            return Err(ConfigError::new(MCP_BODY_BUDGET_MIB, BODY_BUDGET_EXPECTED));
        }
        Ok(Config {
            nats: cfg::NatsConfig::from_source(src)?.with_inbox_prefix(
                wazap_shared::subjects::Subjects::new(&nats_prefix).gateway_inbox(),
            ),
            nats_prefix,
            mcp_addr: cfg::parsed(
                src,
                MCP_ADDR,
                SocketAddr::from(([127, 0, 0, 1], 8080)),
                "expected ip:port, e.g. 127.0.0.1:8080",
            )?,
            owner_addr: cfg::parsed(
                src,
                OWNER_ADDR,
                SocketAddr::from(([127, 0, 0, 1], 8081)),
                "expected ip:port, e.g. 127.0.0.1:8081",
            )?,
            public_hosts: public_hosts(src)?,
            owner_origin: owner_origin(src)?,
            trusted_proxies: trusted_proxies(src)?,
            mcp_max_concurrency,
            body_budget_bytes: body_budget_mib * 1024 * 1024,
            oauth_private_documents: cfg::switch(src, OAUTH_PRIVATE_DOCUMENTS, false)?,
            oauth_document_roots: Vec::new(),
            outbound: cfg::switch(src, OUTBOUND, true)?,
            attachments: cfg::switch(src, ATTACHMENTS, true)?,
            send_deadline: wazap_shared::wire::send::SEND_DEADLINE,
        })
    }
}

/// `WAZAP_PUBLIC_HOSTS`: comma-separated `host` or `host:port` authorities.
fn public_hosts(src: &impl Source) -> Result<Vec<String>, ConfigError> {
    let raw = cfg::string(src, PUBLIC_HOSTS, "localhost,127.0.0.1");
    let bad = || ConfigError::new(PUBLIC_HOSTS, "expected comma-separated host or host:port");
    let mut hosts = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let authority = http::uri::Authority::try_from(entry).map_err(|_| bad())?;
        if entry.contains('@') || authority.host().is_empty() {
            return Err(bad());
        }
        let entry = entry.to_ascii_lowercase();
        if !hosts.contains(&entry) {
            hosts.push(entry);
        }
    }
    if hosts.is_empty() {
        return Err(bad());
    }
    Ok(hosts)
}

/// `WAZAP_TRUSTED_PROXIES`: comma-separated IP addresses or CIDR blocks; empty or unset, none.
fn trusted_proxies(src: &impl Source) -> Result<TrustedProxies, ConfigError> {
    let raw = cfg::string(src, TRUSTED_PROXIES, "");
    let mut blocks = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let block = Block::parse(entry).ok_or_else(|| {
            ConfigError::new(
                TRUSTED_PROXIES,
                "expected comma-separated IP addresses or CIDR blocks, e.g. 172.16.0.0/12,::1",
            )
        })?;
        if !blocks.contains(&block) {
            blocks.push(block);
        }
    }
    Ok(TrustedProxies { blocks })
}

/// The reverse proxies in front of the owner listener (`WAZAP_TRUSTED_PROXIES`): addresses and
/// CIDR blocks, IPv4 or IPv6. An IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`, as a
/// dual-stack socket reports it) is matched as the IPv4 address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    blocks: Vec<Block>,
}

impl TrustedProxies {
    /// Whether `ip` is one of them.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.blocks.iter().any(|b| b.contains(ip))
    }

    /// Whether there are none (the default).
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// One CIDR block, its address masked to its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    network: IpAddr,
    prefix: u8,
}

impl Block {
    /// `ip` or `ip/prefix` (host bits past the prefix are ignored).
    fn parse(entry: &str) -> Option<Block> {
        let (ip, prefix) = match entry.split_once('/') {
            Some((ip, prefix))
                if !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()) =>
            {
                (ip.parse::<IpAddr>().ok()?, Some(prefix.parse::<u8>().ok()?))
            }
            Some(_) => return None,
            None => (entry.parse::<IpAddr>().ok()?, None),
        };
        let ip = ip.to_canonical();
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(bits);
        if prefix > bits {
            return None;
        }
        Some(Block {
            network: mask(ip, prefix),
            prefix,
        })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.prefix) == self.network
    }
}

/// `ip` with the bits past its first `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let keep = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & keep))
        }
        IpAddr::V6(v6) => {
            let keep = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & keep))
        }
    }
}

/// `WAZAP_OWNER_ORIGIN`: `http(s)://host[:port]`, nothing else.
fn owner_origin(src: &impl Source) -> Result<String, ConfigError> {
    let raw = cfg::string(src, OWNER_ORIGIN, "http://localhost:8081");
    let bad = || ConfigError::new(OWNER_ORIGIN, "expected http(s)://host[:port]");
    let uri = http::Uri::try_from(raw.as_str()).map_err(|_| bad())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let authority = uri.authority().ok_or_else(bad)?;
    let bare = uri.path_and_query().is_none_or(|p| p.as_str() == "/") && !raw.ends_with('/');
    if !scheme_ok || authority.as_str().contains('@') || !bare {
        return Err(bad());
    }
    Ok(raw.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn from(pairs: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        Config::from_source(&map)
    }

    #[test]
    fn defaults_follow_the_design_table() {
        let c = from(&[]).unwrap();
        assert_eq!(c.nats.url, "nats://127.0.0.1:4222");
        assert!(!c.nats.is_authenticated());
        assert_eq!(c.nats.inbox_prefix.as_deref(), Some("_INBOX.wazap.gateway"));
        assert_eq!(c.nats_prefix, "wazap");
        assert_eq!(c.mcp_addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.owner_addr, "127.0.0.1:8081".parse().unwrap());
        assert_eq!(c.public_hosts, vec!["localhost", "127.0.0.1"]);
        assert_eq!(c.owner_origin, "http://localhost:8081");
        assert_eq!(c.mcp_max_concurrency, 2);
        assert_eq!(c.body_budget_bytes, 16 * 1024 * 1024);
        assert!(c.outbound && c.attachments);
        assert!(c.trusted_proxies.is_empty());
    }

    #[test]
    fn trusted_proxies_are_addresses_and_cidr_blocks() {
        let c = from(&[(
            TRUSTED_PROXIES,
            " 10.1.2.3 , 172.16.0.0/12,fd00::/8, ::1, 192.168.7.9/24,",
        )])
        .unwrap();
        let p = &c.trusted_proxies;
        let yes = |ip: &str| p.contains(ip.parse().unwrap());
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "fd12:3456::1",
            "::1",
            "192.168.7.200",
            "::ffff:10.1.2.3",
            "::ffff:172.20.0.5",
        ] {
            assert!(yes(ip), "{ip}");
        }
        for ip in [
            "10.1.2.4",
            "172.32.0.1",
            "fe80::1",
            "::2",
            "192.168.8.1",
            "127.0.0.1",
            "::ffff:10.1.2.4",
        ] {
            assert!(!yes(ip), "{ip}");
        }
        let all = from(&[(TRUSTED_PROXIES, "0.0.0.0/0")]).unwrap();
        assert!(all.trusted_proxies.contains("203.0.113.9".parse().unwrap()));
        assert!(!all.trusted_proxies.contains("2001:db8::1".parse().unwrap()));
        assert!(
            from(&[(TRUSTED_PROXIES, " ")])
                .unwrap()
                .trusted_proxies
                .is_empty()
        );
    }

    #[test]
    fn values_are_parsed() {
        let c = from(&[
            (PUBLIC_HOSTS, " Wazap.Example.com , localhost:9000,"),
            (MCP_MAX_CONCURRENCY, "7"),
            (MCP_BODY_BUDGET_MIB, "64"),
            (OUTBOUND, "off"),
            (ATTACHMENTS, "false"),
            (MCP_ADDR, "0.0.0.0:9000"),
            (OWNER_ORIGIN, "https://owner.example.com"),
        ])
        .unwrap();
        assert_eq!(c.public_hosts, vec!["wazap.example.com", "localhost:9000"]);
        assert_eq!(c.mcp_max_concurrency, 7);
        assert_eq!(c.body_budget_bytes, 64 * 1024 * 1024);
        assert!(!c.outbound && !c.attachments);
        assert_eq!(c.mcp_addr.port(), 9000);
        assert_eq!(c.owner_origin, "https://owner.example.com");
    }

    #[test]
    fn bad_values_name_the_variable_only() {
        for (var, value) in [
            (MCP_MAX_CONCURRENCY, "0"),
            (MCP_MAX_CONCURRENCY, "lots"),
            (MCP_BODY_BUDGET_MIB, "11"),
            (MCP_BODY_BUDGET_MIB, "2048"),
            (MCP_ADDR, "nowhere"),
            (OWNER_ADDR, "1.2.3.4"),
            (PUBLIC_HOSTS, " , "),
            (PUBLIC_HOSTS, "user@secret-host"),
            (PUBLIC_HOSTS, "bad host"),
            (OWNER_ORIGIN, "ftp://x"),
            (OWNER_ORIGIN, "http://x/path"),
            (OUTBOUND, "sometimes"),
            (TRUSTED_PROXIES, "proxy.internal"),
            (TRUSTED_PROXIES, "10.0.0.0/33"),
            (TRUSTED_PROXIES, "fd00::/129"),
            (TRUSTED_PROXIES, "10.0.0.1/"),
            (TRUSTED_PROXIES, "10.0.0.1/+8"),
            (TRUSTED_PROXIES, "10.0.0.1:443"),
            (TRUSTED_PROXIES, "10.0.0.1 10.0.0.2"),
        ] {
            let e = from(&[(var, value)]).unwrap_err();
            assert_eq!(e.var, var, "{var}={value}");
            if value.len() > 2 {
                assert!(
                    !e.to_string().contains(value.trim()),
                    "{var} echoed its value"
                );
            }
        }
    }
}
