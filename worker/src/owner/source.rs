//! Where a login came from, as the failed-login throttle keys it ([`super::throttle`]): the
//! client's IPv4 address, or the /64 prefix of its IPv6 address (one subscriber usually holds a
//! whole /64, so counting single IPv6 addresses would give each guesser 2⁶⁴ fresh allowances).
//!
//! Only the gateway sees the client's socket; it reports the peer address of the owner
//! listener's connection, never `X-Forwarded-For` (anyone can write that header). The worker
//! believes the report only when nobody but a gateway can publish requests on its NATS (the rule
//! that also guards the loopback fact, `grants::verify::loopback_trusted`); otherwise every
//! login counts as the one source [`Source::unknown`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A throttle key: `203.0.113.9`, `2001:db8:1:2::/64`, or `unknown`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    key: String,
    coarse: String,
}

impl Source {
    /// The source of a login the gateway reported from `peer`, believed only when `believed`.
    pub fn new(peer: Option<IpAddr>, believed: bool) -> Self {
        match peer.filter(|_| believed).map(|ip| ip.to_canonical()) {
            Some(IpAddr::V4(v4)) => Self {
                key: v4.to_string(),
                coarse: format!("{}/24", masked_v4(v4, 24)),
            },
            Some(IpAddr::V6(v6)) => Self {
                key: format!("{}/64", masked_v6(v6, 64)),
                coarse: format!("{}/48", masked_v6(v6, 48)),
            },
            None => Self::unknown(),
        }
    }

    /// Every login whose source the worker cannot believe.
    pub fn unknown() -> Self {
        Self {
            key: "unknown".into(),
            coarse: "unknown".into(),
        }
    }

    /// The key stored in `owner_login_sources`.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// For logs: the /24 of an IPv4 source, the /48 of an IPv6 one (never the whole address).
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.coarse)
    }
}

fn masked_v4(ip: Ipv4Addr, bits: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(ip) & (u32::MAX << (32 - bits)))
}

fn masked_v6(ip: Ipv6Addr, bits: u32) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(ip) & (u128::MAX << (128 - bits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(peer: &str) -> Source {
        Source::new(Some(peer.parse().unwrap()), true)
    }

    #[test]
    fn ipv4_is_one_address_and_ipv6_its_64() {
        assert_eq!(of("203.0.113.9").key(), "203.0.113.9");
        assert_eq!(of("203.0.113.9").to_string(), "203.0.113.0/24");
        assert_ne!(of("203.0.113.9"), of("203.0.113.10"));
        let a = of("2001:db8:1:2:aaaa::1");
        assert_eq!(a.key(), "2001:db8:1:2::/64");
        assert_eq!(a, of("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(a, of("2001:db8:1:3::1"));
        assert_eq!(a.to_string(), "2001:db8:1::/48");
        // An IPv4 client on a dual-stack socket is still its IPv4 address.
        assert_eq!(of("::ffff:203.0.113.9"), of("203.0.113.9"));
    }

    #[test]
    fn an_unbelieved_or_missing_peer_is_the_one_unknown_source() {
        let ip = "203.0.113.9".parse().ok();
        assert_eq!(Source::new(ip, false), Source::unknown());
        assert_eq!(Source::new(None, true), Source::unknown());
        assert_eq!(Source::unknown().key(), "unknown");
    }
}
