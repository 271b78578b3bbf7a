//! Where the WhatsApp client connects: WhatsApp itself (the default), or the WhatsApp test network
//! the tests and `scripts/dev --phone` run on loopback (`WAZAP_WHATSAPP_NETWORK=ws://127.0.0.1:P`).
//!
//! The test network can only work with a client built with whatsapp-rust's
//! `danger-skip-cert-chain-verify` feature (it cannot present a certificate signed by WhatsApp's
//! root). Such a build must never reach a real user, so [`Network::admit`] asks the library
//! itself, at every start, whether it checks certificates ([`certificates_checked`]): a build that
//! does not is refused anything but a loopback test network, and says so on every start.

use std::sync::Arc;

use crate::config::Network;
use whatsapp_rust::http::{HttpClient, HttpRequest, HttpResponse, UreqHttpClient};
use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::libsignal::protocol::KeyPair;
use whatsapp_rust::wacore::net::{StreamingHttpResponse, UploadBody};
use whatsapp_rust::wacore::noise::HandshakeUtils;
use whatsapp_rust::waproto::buffa::{Message as _, MessageField};
use whatsapp_rust::waproto::whatsapp::{self as wa, cert_chain::noise_certificate};

/// The app version a test network's client announces (it has no `web.whatsapp.com/sw.js`).
const TEST_NETWORK_VERSION: (u32, u32, u32) = (2, 3000, 1_000_000_000);

/// Why a network was refused.
pub const UNCHECKED_BUILD: &str = "this wazap-worker was built without WhatsApp's server certificate check \
     (a test build); it connects only to a loopback test network (WAZAP_WHATSAPP_NETWORK=ws://127.0.0.1:PORT)";

/// What the worker does with the configured [`Network`].
pub trait Connect {
    /// Check this build against this network: `Err` with one line when it must not start; when
    /// the build skips certificate checks, warn that this is a test network (every start).
    fn admit(&self) -> Result<(), &'static str>;
    /// The chat socket's URL on a test network.
    fn chat_url(&self) -> Option<String>;
    /// The chat socket's factory.
    fn transport(&self) -> TokioWebSocketTransportFactory;
    /// The HTTP client for media and the version fetch.
    fn http(&self) -> NetworkHttp;
    /// The app version to announce instead of fetching it, on a test network.
    fn version(&self) -> Option<(u32, u32, u32)>;
}

impl Connect for Network {
    fn admit(&self) -> Result<(), &'static str> {
        if certificates_checked() {
            return Ok(());
        }
        if !self.is_loopback() {
            return Err(UNCHECKED_BUILD);
        }
        tracing::warn!(
            "TEST NETWORK: this build does not check WhatsApp's server certificate; \
             the worker talks to a local WhatsApp test network, never to WhatsApp"
        );
        Ok(())
    }

    fn chat_url(&self) -> Option<String> {
        match self {
            Self::Whatsapp => None,
            Self::Local { base } => Some(format!("{base}/ws/chat")),
        }
    }

    fn transport(&self) -> TokioWebSocketTransportFactory {
        match self.chat_url() {
            None => TokioWebSocketTransportFactory::new(),
            Some(url) => TokioWebSocketTransportFactory::new().with_url(url),
        }
    }

    fn http(&self) -> NetworkHttp {
        let origin = match self {
            Self::Whatsapp => None,
            Self::Local { base } => Some(
                base.replacen("wss://", "https://", 1)
                    .replacen("ws://", "http://", 1),
            ),
        };
        NetworkHttp {
            inner: Arc::new(UreqHttpClient::new()),
            origin,
        }
    }

    fn version(&self) -> Option<(u32, u32, u32)> {
        match self {
            Self::Whatsapp => None,
            Self::Local { .. } => Some(TEST_NETWORK_VERSION),
        }
    }
}

/// Whether the linked whatsapp-rust verifies the server's certificate chain against WhatsApp's
/// root: a chain signed by a made-up root must be refused. `false` means this build carries
/// `danger-skip-cert-chain-verify`.
pub fn certificates_checked() -> bool {
    let mut rng = rand_core_rng();
    let root = KeyPair::generate(&mut rng);
    let intermediate = KeyPair::generate(&mut rng);
    let leaf = KeyPair::generate(&mut rng);
    let leaf_key: [u8; 32] = leaf
        .public_key
        .public_key_bytes()
        .try_into()
        .expect("a Curve25519 public key is 32 bytes");
    let details = |serial: u32, issuer: u32, key: &[u8]| {
        noise_certificate::Details {
            serial: Some(serial),
            issuer_serial: Some(issuer),
            key: Some(key.to_vec()),
            not_before: Some(0),
            not_after: Some(u64::MAX / 2),
        }
        .encode_to_vec()
    };
    let inter_details = details(1, 0, intermediate.public_key.public_key_bytes());
    let leaf_details = details(2, 1, &leaf_key);
    let sign = |by: &KeyPair, what: &[u8]| {
        by.private_key
            .calculate_signature(what, &mut rand_core_rng())
            .map(|s| s.to_vec())
            .unwrap_or_else(|_| vec![0; 64])
    };
    let chain = wa::CertChain {
        intermediate: MessageField::some(wa::cert_chain::NoiseCertificate {
            signature: Some(sign(&root, &inter_details)),
            details: Some(inter_details),
        }),
        leaf: MessageField::some(wa::cert_chain::NoiseCertificate {
            signature: Some(sign(&intermediate, &leaf_details)),
            details: Some(leaf_details),
        }),
    };
    HandshakeUtils::verify_server_cert(&chain.encode_to_vec(), &leaf_key).is_err()
}

fn rand_core_rng() -> impl rand::CryptoRng {
    rand::make_rng::<rand::rngs::StdRng>()
}

/// The client's HTTP, sent to the test network's origin when there is one.
pub struct NetworkHttp {
    inner: Arc<UreqHttpClient>,
    origin: Option<String>,
}

impl NetworkHttp {
    fn route(&self, mut request: HttpRequest) -> HttpRequest {
        if let Some(origin) = &self.origin {
            let rest = request
                .url
                .strip_prefix("https://")
                .or_else(|| request.url.strip_prefix("http://"))
                .unwrap_or(&request.url);
            let path = rest.find('/').map_or("/", |i| &rest[i..]);
            request.url = format!("{origin}{path}");
        }
        request
    }
}

#[whatsapp_rust::async_trait]
impl HttpClient for NetworkHttp {
    async fn execute(&self, request: HttpRequest) -> anyhow::Result<HttpResponse> {
        self.inner.execute(self.route(request)).await
    }

    fn supports_streaming(&self) -> bool {
        self.inner.supports_streaming()
    }

    fn execute_streaming(&self, request: HttpRequest) -> anyhow::Result<StreamingHttpResponse> {
        self.inner.execute_streaming(self.route(request))
    }

    fn supports_upload_streaming(&self) -> bool {
        self.inner.supports_upload_streaming()
    }

    fn execute_upload(
        &self,
        request: HttpRequest,
        body: UploadBody,
        content_length: u64,
    ) -> anyhow::Result<HttpResponse> {
        self.inner
            .execute_upload(self.route(request), body, content_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_tells_loopback() {
        assert_eq!(Network::parse(None), Ok(Network::Whatsapp));
        assert_eq!(Network::parse(Some(" ")), Ok(Network::Whatsapp));
        let n = Network::parse(Some("ws://127.0.0.1:4100/")).unwrap();
        assert!(n.is_loopback());
        assert_eq!(n.chat_url().unwrap(), "ws://127.0.0.1:4100/ws/chat");
        assert!(
            Network::parse(Some("ws://localhost:1"))
                .unwrap()
                .is_loopback()
        );
        assert!(Network::parse(Some("ws://[::1]:9")).unwrap().is_loopback());
        assert!(
            !Network::parse(Some("wss://example.org:443"))
                .unwrap()
                .is_loopback()
        );
        for bad in [
            "http://127.0.0.1:1",
            "ws://127.0.0.1",
            "ws://:1",
            "ws://a b:1",
            "ws://h:99999",
        ] {
            assert!(Network::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    /// What a build admits follows from whether it checks certificates. The workspace's test
    /// build carries the test network's switch (so the second half runs under `scripts/test`):
    /// it must refuse WhatsApp itself and any address beyond this machine, and admit only a
    /// loopback test network. A checking build admits any network.
    #[test]
    fn a_build_without_certificate_checks_admits_only_loopback() {
        let far = [
            "wss://example.org:443",
            "ws://10.0.0.7:4100",
            "ws://[2001:db8::1]:9",
        ];
        let near = ["ws://127.0.0.1:4100", "ws://localhost:1", "ws://[::1]:9"];
        let checked = certificates_checked();
        let refused = if checked {
            Ok(())
        } else {
            Err(UNCHECKED_BUILD)
        };
        assert_eq!(Network::Whatsapp.admit(), refused);
        for url in far {
            assert_eq!(Network::parse(Some(url)).unwrap().admit(), refused, "{url}");
        }
        for url in near {
            assert_eq!(Network::parse(Some(url)).unwrap().admit(), Ok(()), "{url}");
        }
    }

    #[test]
    fn test_network_http_goes_to_its_origin() {
        let http = Network::parse(Some("ws://127.0.0.1:4100")).unwrap().http();
        let r = http.route(HttpRequest::get("https://mmg.whatsapp.net/v/t62/abc?x=1"));
        assert_eq!(r.url, "http://127.0.0.1:4100/v/t62/abc?x=1");
        let r = http.route(HttpRequest::get("https://web.whatsapp.com"));
        assert_eq!(r.url, "http://127.0.0.1:4100/");
        let prod = Network::Whatsapp.http();
        let r = prod.route(HttpRequest::get("https://mmg.whatsapp.net/x"));
        assert_eq!(r.url, "https://mmg.whatsapp.net/x");
    }
}
