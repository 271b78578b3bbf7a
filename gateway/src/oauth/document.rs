//! Client ID Metadata Documents (#28): a client whose `client_id` is an https URL is registered
//! by the JSON document at that URL, which the gateway fetches when an authorization request
//! names it. The gateway fetches, not the worker: it is the process built to face the network
//! and it holds no data or secrets, so a fetch it is tricked into reaches less.
//!
//! The fetch is shaped against abuse, since anyone can name any URL:
//! - **no private addresses** (SSRF): the host is resolved once, every address it has must be a
//!   public one, and the connection goes to that address (no second lookup to rebind);
//!   `WAZAP_OAUTH_PRIVATE_DOCUMENTS=on` lifts this — and allows plain http on loopback — for
//!   tests and for a client on the same private network;
//! - **bounded**: [`FETCH_TIMEOUT`] for all of it, at most [`MAX_DOCUMENT_BYTES`], no redirects
//!   followed, status 200 only;
//! - **checked**: the document's `client_id` must be the URL exactly, and its metadata pass the
//!   same rules as a registration's ([`ClientMetadata::checked`]);
//! - **cached** for [`CACHE_TTL`] (at most [`CACHE_MAX`] documents), so a client's next request
//!   costs no fetch.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};
use wazap_shared::oauth::{ClientMetadata, MAX_URI_LEN};

/// The whole fetch: resolve, connect, TLS, answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document read (the MCP spec's suggested limit is 5 KiB).
pub(crate) const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// How long a fetched document is used before it is fetched again.
const CACHE_TTL: Duration = Duration::from_secs(300);
/// Documents kept at most (the cache is cleared when full).
const CACHE_MAX: usize = 256;

/// Why a document was not accepted, in one fixed wording each (shown on the error page).
pub(crate) type Refusal = &'static str;

const BAD_URL: Refusal = "a client id metadata document URL must be an https URL with a path";
const PRIVATE: Refusal = "the client's metadata document is on a private or local address";
const UNREACHABLE: Refusal = "the client's metadata document could not be fetched";
const TIMEOUT: Refusal = "the client's metadata document took too long to fetch";
const TOO_LARGE: Refusal = "the client's metadata document is larger than 5 KiB";
const NOT_JSON: Refusal = "the client's metadata document is not valid client metadata";
const MISMATCH: Refusal = "the client's metadata document names another client_id";

/// The document's fields wazap reads: its `client_id` and the registration metadata.
#[derive(Debug, Deserialize)]
struct Document {
    client_id: String,
    #[serde(flatten)]
    metadata: ClientMetadata,
}

/// The fetcher and its cache; shared by every request of the owner listener.
pub(crate) struct Documents {
    private_allowed: bool,
    /// `None` when no TLS client could be built (then only the test switch's http works).
    tls: Option<tokio_rustls::TlsConnector>,
    cache: Mutex<HashMap<String, (Instant, ClientMetadata)>>,
}

impl std::fmt::Debug for Documents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Documents")
            .field("private_allowed", &self.private_allowed)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Documents {
    /// A fetcher; `private_allowed` is `WAZAP_OAUTH_PRIVATE_DOCUMENTS`, `extra_roots` (DER)
    /// are trusted beside the system's.
    pub(crate) fn new(private_allowed: bool, extra_roots: &[Vec<u8>]) -> Arc<Self> {
        let mut roots = rustls::RootCertStore::empty();
        let mut found = rustls_native_certs::load_native_certs().certs;
        found.extend(extra_roots.iter().map(|der| der.clone().into()));
        let (added, _) = roots.add_parsable_certificates(found);
        if added == 0 {
            tracing::warn!(
                "no system CA certificates: client metadata documents cannot be fetched"
            );
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(roots).with_no_client_auth())
            .map(|config| tokio_rustls::TlsConnector::from(Arc::new(config)))
            .inspect_err(|_| tracing::warn!("no TLS client: metadata documents cannot be fetched"))
            .ok();
        Arc::new(Self {
            private_allowed,
            tls,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `client_id` names a metadata document (rather than a registered client id).
    pub(crate) fn is_document_url(client_id: &str) -> bool {
        client_id.starts_with("https://") || client_id.starts_with("http://")
    }

    /// The checked metadata of the client whose id is the URL `client_id`.
    pub(crate) async fn fetch(&self, client_id: &str) -> Result<ClientMetadata, Refusal> {
        let target = self.target(client_id)?;
        if let Some(m) = self.cached(client_id) {
            return Ok(m);
        }
        let body = tokio::time::timeout(FETCH_TIMEOUT, self.get(&target))
            .await
            .map_err(|_| TIMEOUT)??;
        let doc: Document = serde_json::from_slice(&body).map_err(|_| NOT_JSON)?;
        if doc.client_id != client_id {
            return Err(MISMATCH);
        }
        let metadata = doc.metadata.checked().map_err(|e| e.description)?;
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
            cache.insert(client_id.to_owned(), (Instant::now(), metadata.clone()));
        }
        Ok(metadata)
    }

    fn cached(&self, client_id: &str) -> Option<ClientMetadata> {
        let cache = self.cache.lock().ok()?;
        let (at, m) = cache.get(client_id)?;
        (at.elapsed() < CACHE_TTL).then(|| m.clone())
    }

    /// Where to fetch `client_id` from: https with a path (http only on loopback when private
    /// addresses are allowed), no user info, no fragment.
    fn target(&self, client_id: &str) -> Result<Target, Refusal> {
        if client_id.len() > MAX_URI_LEN {
            return Err(BAD_URL);
        }
        let uri: http::Uri = client_id.parse().map_err(|_| BAD_URL)?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") if self.private_allowed => false,
            _ => return Err(BAD_URL),
        };
        let authority = uri.authority().ok_or(BAD_URL)?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        if authority.as_str().contains('@') || client_id.contains('#') || uri.path() == "/" {
            return Err(BAD_URL);
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if !tls && !wazap_shared::grant::is_loopback_host(host) {
            return Err(BAD_URL);
        }
        Ok(Target {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
            authority: authority.as_str().to_owned(),
            path: path.to_owned(),
            tls,
        })
    }

    /// Resolve, check every address, connect to the first, and GET the document.
    async fn get(&self, t: &Target) -> Result<Bytes, Refusal> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((t.host.as_str(), t.port))
            .await
            .map_err(|_| UNREACHABLE)?
            .collect();
        if addrs.is_empty() {
            return Err(UNREACHABLE);
        }
        if !self.private_allowed && !addrs.iter().all(|a| is_public(a.ip())) {
            return Err(PRIVATE);
        }
        let tcp = tokio::net::TcpStream::connect(addrs[0])
            .await
            .map_err(|_| UNREACHABLE)?;
        if t.tls {
            let name =
                rustls::pki_types::ServerName::try_from(t.host.clone()).map_err(|_| BAD_URL)?;
            let connector = self.tls.as_ref().ok_or(UNREACHABLE)?;
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|_| UNREACHABLE)?;
            request(tls, t).await
        } else {
            request(tcp, t).await
        }
    }
}

/// A document's location.
#[derive(Debug)]
struct Target {
    host: String,
    port: u16,
    authority: String,
    path: String,
    tls: bool,
}

/// One HTTP/1.1 GET over `io`; the body when the answer is 200 and small enough.
async fn request<T>(io: T, t: &Target) -> Result<Bytes, Refusal>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(|_| UNREACHABLE)?;
    let driver = tokio::spawn(conn);
    let req = http::Request::get(t.path.as_str())
        .header(http::header::HOST, t.authority.as_str())
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "wazap")
        .body(Empty::<Bytes>::new())
        .map_err(|_| BAD_URL)?;
    let outcome = async {
        let resp = sender.send_request(req).await.map_err(|_| UNREACHABLE)?;
        if resp.status() != http::StatusCode::OK {
            return Err(UNREACHABLE);
        }
        let declared = resp
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > MAX_DOCUMENT_BYTES) {
            return Err(TOO_LARGE);
        }
        Limited::new(resp.into_body(), MAX_DOCUMENT_BYTES)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    TOO_LARGE
                } else {
                    UNREACHABLE
                }
            })
    }
    .await;
    driver.abort();
    outcome
}

/// Whether `ip` is a public address: not loopback, private, link-local, shared (CGNAT),
/// unspecified, multicast, broadcast or documentation, nor an IPv6 form of one.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8
                || first == 0x0064)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_fetched_from() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn a_document_url_is_https_with_a_path_unless_private_ones_are_allowed() {
        let strict = Documents::new(false, &[]);
        assert!(strict.target("https://client.example/oauth.json").is_ok());
        for bad in [
            "https://client.example",
            "https://client.example/",
            "http://client.example/doc",
            "http://127.0.0.1:9/doc",
            "https://user@client.example/doc",
            "https://client.example/doc#x",
            "ftp://client.example/doc",
        ] {
            assert_eq!(strict.target(bad).err(), Some(BAD_URL), "{bad}");
        }
        let open = Documents::new(true, &[]);
        let t = open.target("http://127.0.0.1:9/doc?v=1").unwrap();
        assert_eq!((t.port, t.path.as_str(), t.tls), (9, "/doc?v=1", false));
        assert_eq!(
            open.target("http://client.example/doc").err(),
            Some(BAD_URL)
        );
    }
}
