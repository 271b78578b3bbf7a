//! The differential test of the direct route: every request shape the suite knows (both
//! protocol generations, each tool with good, refused and malformed arguments, unknown and
//! disabled tools, bad headers, bodies the route leaves alone) is sent, as the same bytes, to
//! `/mcp` (the direct route, else rmcp) and to rmcp's service alone, and the two answers must
//! have the same status, headers and body bytes. An rmcp upgrade that changes any answer the
//! direct route reproduces fails here instead of drifting. Each shape also says whether the
//! direct route takes it, so the test cannot pass by handing everything to rmcp.
//!
//! Needs NATS with JetStream (`WAZAP_TEST_NATS_URL`, as the gateway's integration tests); a
//! fake worker answers the tools ([`worker`]).

mod edges;
mod shapes;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use http::{HeaderMap, HeaderValue, StatusCode};
use tokio_util::sync::CancellationToken;
use wazap_shared::grant::VerifiedGrant;

use self::shapes::Shape;
use crate::config::Config;
use crate::http::mcp_endpoint::{Endpoint, to_rmcp};
use crate::state::AppState;

/// One answer: status, headers, body bytes.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    async fn of(response: axum::response::Response) -> Self {
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("the whole body")
            .to_vec();
        Self {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

/// The request for `shape`, as it leaves the `/mcp` guards: body buffered, grant verified.
fn request(shape: &Shape) -> axum::extract::Request {
    // Every request past the Host guard has a Host, which rmcp requires too.
    let mut req = http::Request::builder()
        .method(shape.method.clone())
        .uri("/mcp")
        .header(http::header::HOST, "127.0.0.1:8080");
    for (name, value) in &shape.headers {
        req = req.header(
            *name,
            HeaderValue::from_bytes(value).expect("a header value"),
        );
    }
    let mut req = req.body(Body::from(shape.body.clone())).expect("a request");
    req.extensions_mut().insert(VerifiedGrant {
        connection_id: "conn_differential".into(),
        revision: 3,
        loopback: true,
        token: "differential.token".into(),
    });
    req
}

/// `shape` through `/mcp` (whether the direct route took it, and the answer) and through
/// rmcp alone, at the same time.
async fn both(endpoint: &Endpoint, shape: &Shape) -> (bool, Answer, Answer) {
    let ours = async {
        match super::handle(&endpoint.server, request(shape)).await {
            Ok(response) => (true, Answer::of(response).await),
            Err(req) => (false, Answer::of(to_rmcp(endpoint, req).await).await),
        }
    };
    let rmcp = async {
        let response = endpoint.rmcp.handle(request(shape)).await.map(Body::new);
        Answer::of(response).await
    };
    let ((direct, ours), rmcp) = tokio::join!(ours, rmcp);
    (direct, ours, rmcp)
}

/// An endpoint under a fresh prefix with `env`, its fake worker, and the shutdown token that
/// ends its background work.
async fn endpoint(env: &[(&str, &str)]) -> (Endpoint, worker::FakeWorker, CancellationToken) {
    let url =
        std::env::var("WAZAP_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let mut random = [0u8; 6];
    getrandom::fill(&mut random).expect("random bytes");
    let prefix: String = std::iter::once("gwd".to_owned())
        .chain(random.iter().map(|b| format!("{b:02x}")))
        .collect();
    let mut vars: HashMap<&str, &str> = env.iter().copied().collect();
    vars.insert("WAZAP_NATS_URL", &url);
    vars.insert("WAZAP_NATS_PREFIX", &prefix);
    let config = Config::from_source(&vars).expect("config");
    let nats = async_nats::connect(&url).await.expect("NATS");
    let worker = worker::FakeWorker::start(&nats, &prefix).await;
    let shutdown = CancellationToken::new();
    let state: Arc<AppState> = AppState::new(&config, nats, &shutdown);
    (Endpoint::new(&state), worker, shutdown)
}

/// Every shape on a deployment with `env`: equal answers, and the direct route taking exactly
/// the shapes that say so.
async fn check(env: &[(&str, &str)], shapes: Vec<Shape>) {
    let (endpoint, _worker, shutdown) = endpoint(env).await;
    let mut failures = Vec::new();
    let mut taken = 0;
    for shape in &shapes {
        let (direct, ours, rmcp) = both(&endpoint, shape).await;
        taken += usize::from(direct);
        if direct != shape.direct {
            failures.push(format!(
                "{}: the direct route {} it",
                shape.what,
                if direct { "took" } else { "left" }
            ));
        }
        if ours != rmcp {
            failures.push(format!(
                "{}:\n  /mcp  {} {:?} {}\n  rmcp  {} {:?} {}",
                shape.what,
                ours.status,
                ours.headers,
                String::from_utf8_lossy(&ours.body),
                rmcp.status,
                rmcp.headers,
                String::from_utf8_lossy(&rmcp.body),
            ));
        }
    }
    shutdown.cancel();
    assert!(
        failures.is_empty(),
        "{} of {} shapes differ:\n{}",
        failures.len(),
        shapes.len(),
        failures.join("\n")
    );
    assert!(
        taken > 0,
        "the direct route took none of {} shapes",
        shapes.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_shape_gets_rmcps_answer_byte_for_byte() {
    check(&[], shapes::all()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn disabled_tools_get_rmcps_answer_byte_for_byte() {
    let env = [("WAZAP_OUTBOUND", "off"), ("WAZAP_ATTACHMENTS", "off")];
    check(&env, shapes::disabled()).await;
}
