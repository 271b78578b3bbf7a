//! Test harness: a gateway on a random port and NATS prefix, a fake worker that answers the
//! `jwks`/`ping`/tool subjects and signs tokens with a generated Ed25519 key (as the real worker
//! does), and a small MCP-over-HTTP client built on reqwest.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use wazap_shared::bus::{Reply, encode_reply};
use wazap_shared::grant::{AUDIENCE, ConnectionKind, GrantClaims, Presented, VerifiedGrant};
use wazap_shared::subjects::{Subjects, op};
use wazap_shared::wire::read::*;
use wazap_shared::wire::system::{Jwk, JwksResponse, PingResponse};
use wazap_shared::wire::{ChatKind, SyncState};
use wazap_shared::{ErrorCode, RpcError};

/// The NATS server: `WAZAP_TEST_NATS_URL` (JetStream-capable, needed by the send tests' object
/// store), else the machine's default server.
pub(crate) fn nats_url() -> String {
    std::env::var("WAZAP_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// `n` random bytes as lower-case hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("random bytes");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A fresh NATS prefix for one test.
pub(crate) fn prefix() -> String {
    format!("gwt{}", random_hex(6))
}

/// An Ed25519 signing key with its JWK, signing tokens like the worker.
pub(crate) struct Signer {
    pub(crate) kid: String,
    key: EncodingKey,
    pub(crate) jwk: Jwk,
}

impl Signer {
    pub(crate) fn generate() -> Self {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("random seed");
        let public = ed25519_dalek::SigningKey::from_bytes(&seed)
            .verifying_key()
            .to_bytes();
        // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410).
        let mut der = hex_bytes("302e020100300506032b657004220420");
        der.extend_from_slice(&seed);
        let kid = format!("k_{}", random_hex(4));
        Self {
            jwk: Jwk {
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public),
                kid: kid.clone(),
                alg: "EdDSA".into(),
                use_: "sig".into(),
            },
            key: EncodingKey::from_ed_der(&der),
            kid,
        }
    }

    /// Claims for connection `sub`, valid for an hour.
    pub(crate) fn claims(sub: &str) -> GrantClaims {
        let now = chrono::Utc::now().timestamp();
        GrantClaims {
            sub: sub.into(),
            rev: 3,
            aud: AUDIENCE.into(),
            exp: now + 3600,
            iat: now,
            kind: ConnectionKind::Local,
        }
    }

    /// A signed token for `claims`.
    pub(crate) fn sign(&self, claims: &GrantClaims) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        let token = jsonwebtoken::encode(&header, claims, &self.key).expect("sign");
        wazap_shared::leak::record_token("bearer token", &token);
        token
    }

    /// A valid token for connection `conn_test`.
    pub(crate) fn token(&self) -> String {
        self.sign(&Self::claims("conn_test"))
    }
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// What the fake worker saw and how it behaves.
pub(crate) struct FakeState {
    /// Grants received with tool calls, in order.
    pub(crate) grants: Mutex<Vec<VerifiedGrant>>,
    /// How many `list_chats` calls with `query: "hold"` are being held.
    pub(crate) held: watch::Sender<usize>,
    /// Wakes held calls.
    pub(crate) release: Notify,
    /// Send-op RPCs received: (op, JSON body), in order.
    pub(crate) sends: Mutex<Vec<(String, Value)>>,
    /// When set, `ping` answers `worker_unavailable` with this message (a worker whose
    /// supervised task is down).
    pub(crate) not_ready: Mutex<Option<String>>,
    /// OAuth and owner RPCs received: (op, JSON body), in order.
    pub(crate) oauth: Mutex<Vec<(String, Value)>>,
}

/// A fake worker answering `<prefix>.rpc.*`.
pub(crate) struct FakeWorker {
    pub(crate) state: Arc<FakeState>,
    ping_subject: String,
    stop: CancellationToken,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl FakeWorker {
    /// Start answering under `prefix` with `keys` as the JWKS.
    pub(crate) async fn start(prefix: &str, keys: Vec<Jwk>) -> Self {
        let client = async_nats::connect(nats_url()).await.expect("NATS");
        let subjects = Subjects::new(prefix);
        let mut sub = client
            .subscribe(subjects.rpc_all())
            .await
            .expect("subscribe");
        client.flush().await.expect("flush");
        let state = Arc::new(FakeState {
            grants: Mutex::new(Vec::new()),
            held: watch::Sender::new(0),
            release: Notify::new(),
            sends: Mutex::new(Vec::new()),
            not_ready: Mutex::new(None),
            oauth: Mutex::new(Vec::new()),
        });
        let stop = CancellationToken::new();
        let (st, stop2) = (Arc::clone(&state), stop.clone());
        let done = tokio::spawn(async move {
            loop {
                let msg = tokio::select! {
                    _ = stop2.cancelled() => break,
                    m = sub.next() => match m { Some(m) => m, None => break },
                };
                let Some(reply) = msg.reply.clone() else {
                    continue;
                };
                let op = subjects
                    .rpc_route(&msg.subject)
                    .map_or("", |(_, op)| op)
                    .to_owned();
                let (client, st, keys) = (client.clone(), Arc::clone(&st), keys.clone());
                tokio::spawn(async move {
                    if let Some(p) = Presented::from_headers(msg.headers.as_ref()) {
                        st.grants.lock().unwrap().push(forwarded(p));
                    }
                    let body = answer(&op, &msg.payload, &st, keys).await;
                    let _ = client.publish(reply, body).await;
                });
            }
            let _ = sub.unsubscribe().await;
            let _ = client.flush().await;
        });
        Self {
            state,
            ping_subject: Subjects::new(prefix).rpc(None, op::PING),
            stop,
            done: Some(done),
        }
    }

    /// Stop answering; returns once the NATS server itself reports no responders (an
    /// unsubscribe is only flushed to the socket, not yet applied, when `flush` returns).
    pub(crate) async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
        let probe = async_nats::connect(nats_url()).await.expect("NATS");
        for _ in 0..200 {
            let req = async_nats::Request::new()
                .payload(bytes::Bytes::from_static(b"{}"))
                .timeout(Some(Duration::from_millis(200)));
            match probe.send_request(self.ping_subject.clone(), req).await {
                Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders => return,
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        panic!("the fake worker's subscription never went away");
    }

    /// Wait until `n` calls are held.
    pub(crate) async fn wait_held(&self, n: usize) {
        let mut rx = self.state.held.subscribe();
        tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|h| *h >= n))
            .await
            .expect("held calls in time")
            .expect("watch");
    }
}

impl Drop for FakeWorker {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The fake worker's answer to one op.
async fn answer(op: &str, payload: &[u8], st: &FakeState, keys: Vec<Jwk>) -> bytes::Bytes {
    fn ok<T: serde::Serialize>(v: T) -> bytes::Bytes {
        encode_reply(&Reply::Ok(v))
    }
    match op {
        op::JWKS => ok(JwksResponse { keys }),
        op::PING => match st.not_ready.lock().unwrap().clone() {
            Some(why) => encode_reply::<()>(&Reply::Error(RpcError::new(
                ErrorCode::WorkerUnavailable,
                why,
            ))),
            None => ok(PingResponse {
                archive_id: "a_test".into(),
                sync: SyncState::Demo,
                database: true,
            }),
        },
        op::LIST_CHATS => {
            let req: ListChatsRequest = serde_json::from_slice(payload).unwrap();
            if req.query.as_deref() == Some("hold") {
                let released = st.release.notified();
                st.held.send_modify(|h| *h += 1);
                released.await;
            }
            ok(ListChatsResponse {
                account_id: "default".into(),
                chats: vec![ChatSummary {
                    chat_id: "c_family".into(),
                    name: "Family".into(),
                    kind: ChatKind::Group,
                    last_message_at: None,
                    unread_count: 2,
                    can_send: false,
                }],
            })
        }
        op::SEARCH_CONTACTS => {
            let req: SearchContactsRequest = serde_json::from_slice(payload).unwrap();
            if req.query == "nobody" {
                return encode_reply::<()>(&Reply::Error(RpcError::new(
                    ErrorCode::AccountNotFound,
                    "account_id: unknown account",
                )));
            }
            ok(SearchContactsResponse {
                account_id: "default".into(),
                contacts: vec![],
            })
        }
        op::SEARCH_GROUPS => ok(SearchGroupsResponse {
            account_id: "default".into(),
            groups: vec![GroupSummary {
                chat_id: "c_family".into(),
                name: "Family".into(),
                participant_count: 4,
            }],
        }),
        op::READ_MESSAGES => {
            let req: ReadMessagesRequest = serde_json::from_slice(payload).unwrap();
            if req.chat_id == "c_gone" {
                return encode_reply::<()>(&Reply::Error(RpcError::new(
                    ErrorCode::ChatNotFound,
                    "chat_id: no such chat",
                )));
            }
            let previews: Vec<Preview> = if req.include_previews == Some(true) {
                ["/9j/AAAA", "/9j/BBBB"]
                    .iter()
                    .map(|d| Preview {
                        message_id: "m_1".into(),
                        mime_type: "image/jpeg".into(),
                        data_base64: (*d).into(),
                    })
                    .collect()
            } else {
                vec![]
            };
            ok(ReadMessagesResponse {
                account_id: "default".into(),
                chat_id: req.chat_id,
                count: 0,
                messages: vec![],
                sync: SyncState::Demo,
                preview_count: previews.len() as u32,
                notes: vec![],
                unconfirmed_sends: vec![],
                older: None,
                omitted: None,
                types: None,
                hours: None,
                previews,
            })
        }
        op::SEND_CHECK => crate::send_support::check(payload),
        op::OAUTH_REGISTER
        | op::OAUTH_AUTHORIZE
        | op::OAUTH_TOKEN
        | op::OAUTH_REVOKE
        | op::OWNER_SESSION
        | op::OWNER_OAUTH_REQUEST
        | op::OWNER_OAUTH_DECIDE => crate::oauth_support::answer(op, payload, st),
        op::SEND_MESSAGE | op::SEND_MEDIA | op::SEND_VOICE_NOTE | op::GET_SEND_STATUS => {
            crate::send_support::answer(op, payload, st).await
        }
        _ => encode_reply::<()>(&Reply::Error(RpcError::new(
            ErrorCode::NotFound,
            "unknown op",
        ))),
    }
}

/// A gateway running in this process.
pub(crate) struct Gateway {
    pub(crate) addr: SocketAddr,
    /// The owner listener's address, when it serves one ([`Gateway::start_with_owner`]).
    pub(crate) owner: Option<SocketAddr>,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Gateway {
    /// Start a gateway under `prefix` with extra environment `env`.
    pub(crate) async fn start(prefix: &str, env: &[(&str, &str)]) -> Self {
        Self::launch(prefix, env, false).await
    }

    /// The same with an owner listener too, on another random port of 127.0.0.1, which is
    /// `WAZAP_OWNER_ORIGIN`'s.
    pub(crate) async fn start_with_owner(prefix: &str, env: &[(&str, &str)]) -> Self {
        Self::launch(prefix, env, true).await
    }

    async fn launch(prefix: &str, env: &[(&str, &str)], with_owner: bool) -> Self {
        // Logs on stderr with TEST_LOG; the leak scan's capture whenever WAZAP_LEAK_DIR is set.
        wazap_shared::telemetry::init_for_tests(
            "gateway-test",
            std::env::var_os("TEST_LOG").is_some(),
        );
        let mut vars: HashMap<String, String> = HashMap::new();
        vars.insert("WAZAP_NATS_URL".into(), nats_url());
        vars.insert("WAZAP_NATS_PREFIX".into(), prefix.into());
        for (k, v) in env {
            vars.insert((*k).into(), (*v).into());
        }
        let owner = if with_owner {
            let owner = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let origin = format!("http://{}", owner.local_addr().unwrap());
            vars.insert("WAZAP_OWNER_ORIGIN".into(), origin);
            Some(owner)
        } else {
            None
        };
        let owner_addr = owner.as_ref().map(|o| o.local_addr().unwrap());
        let config = wazap_gateway::Config::from_source(&vars).expect("config");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let listeners = wazap_gateway::Listeners {
            mcp: listener,
            owner,
        };
        let task = tokio::spawn(wazap_gateway::run(config, listeners, shutdown.clone()));
        Self {
            addr,
            owner: owner_addr,
            shutdown,
            task: Some(task),
        }
    }

    /// Wait until `/readyz` answers 200 (NATS connected, worker answering).
    pub(crate) async fn wait_ready(&self) {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let url = format!("http://{}/readyz", self.addr);
        for _ in 0..100 {
            if let Ok(r) = http.get(&url).send().await
                && r.status() == 200
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the gateway never became ready");
    }

    /// The `/mcp` URL with Host `127.0.0.1:<port>`.
    pub(crate) fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stop and wait for the gateway to exit.
    pub(crate) async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("gateway stops in time")
                .expect("join")
                .expect("run");
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// An HTTP answer: status, headers, JSON body (`Null` when not JSON).
pub(crate) struct Answer {
    pub(crate) status: reqwest::StatusCode,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
}

impl Answer {
    /// `error.code` of an HTTP error body.
    pub(crate) fn error_code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// A minimal MCP client over Streamable HTTP (stateless, JSON responses).
///
/// Legacy shape (protocol 2025-11-25): POST `/mcp` with `Accept: application/json,
/// text/event-stream`, `Content-Type: application/json`, `MCP-Protocol-Version: 2025-11-25`,
/// `Authorization: Bearer <jwt>` and a JSON-RPC body; no `initialize` is needed.
pub(crate) struct Mcp {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
    pub(crate) token: Option<String>,
}

impl Mcp {
    pub(crate) fn new(url: String, token: Option<String>) -> Self {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        Self { http, url, token }
    }

    /// POST one JSON-RPC request with the legacy headers plus `extra` headers (an `extra`
    /// `MCP-Protocol-Version` replaces the default one).
    pub(crate) async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Answer {
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if !extra
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("MCP-Protocol-Version"))
        {
            req = req.header("MCP-Protocol-Version", "2025-11-25");
        }
        if let Some(t) = &self.token {
            wazap_shared::leak::record_token("bearer token", t);
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        for (k, v) in extra {
            if let Some(t) = v.strip_prefix("Bearer ") {
                wazap_shared::leak::record_token("bearer token", t);
            }
            req = req.header(*k, *v);
        }
        for field in ["text", "caption"] {
            if let Some(t) = body["params"]["arguments"][field].as_str() {
                wazap_shared::leak::record_secret("message text", t);
            }
        }
        let resp = req.send().await.expect("HTTP request");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        record_error_body(status.as_u16(), &text);
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// `tools/call`: returns the whole HTTP answer.
    pub(crate) async fn call_raw(&self, tool: &str, args: Value) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": tool, "arguments": args}});
        self.post(&body, &[]).await
    }

    /// `tools/call`: the JSON-RPC `result` (panics on HTTP or protocol errors).
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Value {
        let a = self.call_raw(tool, args).await;
        assert_eq!(a.status, 200, "HTTP status; body {}", a.body);
        assert!(a.body.get("result").is_some(), "no result: {}", a.body);
        a.body["result"].clone()
    }

    /// `tools/list`: the JSON-RPC `result`.
    pub(crate) async fn list_tools(&self) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let a = self.post(&body, &[]).await;
        assert_eq!(a.status, 200, "HTTP status; body {}", a.body);
        a.body["result"].clone()
    }
}

/// An error answer (HTTP, JSON-RPC or tool error) is captured for the leak scan: a user sees it.
pub(crate) fn record_error_body(status: u16, text: &str) {
    let inside = serde_json::from_str::<Value>(text)
        .is_ok_and(|v| v.get("error").is_some() || v["result"]["isError"] == true);
    if status >= 400 || inside {
        wazap_shared::leak::record_body("gateway it", status, text);
    }
}

/// The JSON inside the first text block of a tool result.
pub(crate) fn text_json(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().expect("text block");
    serde_json::from_str(text).expect("JSON text")
}

/// What a presented token says (its claims read, not verified: this worker is a fake), as the
/// grant the real worker would make of it.
fn forwarded(p: Presented) -> VerifiedGrant {
    use base64::Engine as _;
    let payload = p.token.split('.').nth(1).expect("a JWT");
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url claims");
    let claims: GrantClaims = serde_json::from_slice(&json).expect("grant claims");
    VerifiedGrant {
        connection_id: claims.sub,
        revision: claims.rev,
        loopback: p.loopback,
        token: p.token,
    }
}
