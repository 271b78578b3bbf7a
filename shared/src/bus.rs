//! The request/reply protocol between gateway and worker over NATS (DESIGN §8).
//!
//! Each op is a type implementing [`Rpc`]: its subject suffix, request and response types and
//! deadline live together, so both sides agree by construction. Replies are [`Reply`] envelopes.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::{Client, HeaderMap, RequestErrorKind};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::error::{ErrorCode, RpcError};
use crate::grant::VerifiedGrant;
use crate::subjects::Subjects;

/// One request/reply op on `<prefix>.rpc.<OP>`.
pub trait Rpc {
    /// The op name (a constant from [`crate::subjects::op`]).
    const OP: &'static str;
    /// How long the caller waits for the worker.
    const DEADLINE: Duration;
    /// True for the ops that may hand a message to WhatsApp (the three send tools): a call cut
    /// off after its request left cannot tell whether the message went out, and says so
    /// (`send_outcome_unknown`) instead of a plain `deadline_exceeded`.
    const MAY_TRANSMIT: bool = false;
    /// The request body.
    type Request: Serialize + DeserializeOwned + Send + Sync;
    /// The successful response body.
    type Response: Serialize + DeserializeOwned + Send + Sync;

    /// The account `request` is about, which picks its subject ([`Subjects::rpc`]): the
    /// worker that owns that account answers it. `None` (the default) for ops about no
    /// account, which any worker answers.
    fn account(request: &Self::Request) -> Option<&str> {
        let _ = request;
        None
    }
}

/// A reply envelope: `{"ok": …}` or `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply<T> {
    /// The op succeeded.
    Ok(T),
    /// The op failed with a stable code.
    Error(RpcError),
}

impl<T> From<Result<T, RpcError>> for Reply<T> {
    fn from(r: Result<T, RpcError>) -> Self {
        match r {
            Ok(v) => Reply::Ok(v),
            Err(e) => Reply::Error(e),
        }
    }
}

impl<T> From<Reply<T>> for Result<T, RpcError> {
    fn from(r: Reply<T>) -> Self {
        match r {
            Reply::Ok(v) => Ok(v),
            Reply::Error(e) => Err(e),
        }
    }
}

/// Connect to NATS as `nats` says (servers, credentials, TLS, inbox prefix) without waiting for
/// the server: the client connects and reconnects in the background, and requests fail fast
/// (`worker_unavailable`) until it is up. Every server of `WAZAP_NATS_URL` is handed to the
/// client (async-nats takes a comma-separated string as one malformed address), so when its
/// server dies it reconnects to another of the cluster at once (it also learns the servers
/// the cluster advertises). One log line says when the connection is (re-)established or lost;
/// the server's errors (refused credentials, permissions violations) are logged as errors.
/// Credentials are never logged. Fails at once only when a server URL does not parse or a
/// `.creds` file cannot be read or parsed.
pub async fn connect(
    nats: &crate::config::NatsConfig,
    name: &str,
) -> Result<Client, async_nats::ConnectError> {
    use crate::config::NatsAuth;
    let servers = nats.servers().map_err(|e| {
        async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::ServerParse, e)
    })?;
    let logged_name = name.to_owned();
    let mut options = async_nats::ConnectOptions::new()
        .name(name)
        .retry_on_initial_connect()
        .request_timeout(Some(Duration::from_secs(15)));
    options = match &nats.auth {
        NatsAuth::None => options,
        NatsAuth::UserPassword { user, password } => {
            options.user_and_password(user.clone(), password.expose().to_owned())
        }
        NatsAuth::Token(token) => options.token(token.expose().to_owned()),
        NatsAuth::NKey(seed) => options.nkey(seed.expose().to_owned()),
        NatsAuth::CredsFile(path) => options.credentials_file(path).await.map_err(|e| {
            // The io error says what is wrong with the file, never its content.
            async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::Authentication, e)
        })?,
    };
    if let Some(ca) = &nats.tls.ca_file {
        options = options.add_root_certificates(ca.clone());
    }
    if let Some((cert, key)) = &nats.tls.client_cert {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    if nats.tls.required {
        options = options.require_tls(true);
    }
    if let Some(prefix) = &nats.inbox_prefix {
        options = options.custom_inbox_prefix(prefix);
    }
    options
        .event_callback(move |event| {
            let name = logged_name.clone();
            async move {
                match event {
                    async_nats::Event::Connected => {
                        tracing::info!(client = %name, "NATS connected")
                    }
                    async_nats::Event::Disconnected => {
                        tracing::warn!(client = %name, "NATS disconnected; retrying with backoff")
                    }
                    async_nats::Event::ServerError(e) => {
                        tracing::error!(client = %name, error = %e, "NATS server error")
                    }
                    other => tracing::debug!(client = %name, event = %other, "NATS event"),
                }
            }
        })
        .connect(servers)
        .await
}

/// Call op `R` on the worker with an optional verified grant, waiting at most `deadline`
/// (`R::DEADLINE` when `None`); the absolute deadline travels with the request
/// ([`Deadline::to_headers`]), so the worker does not begin a send nobody waits for. Failures:
/// [`request_error`].
pub async fn call<R: Rpc>(
    client: &Client,
    subjects: &Subjects,
    grant: Option<&VerifiedGrant>,
    request: &R::Request,
    deadline: Option<Duration>,
) -> Result<R::Response, RpcError> {
    let body = serde_json::to_vec(request)
        .map_err(|_| RpcError::new(ErrorCode::Internal, "request could not be encoded"))?;
    let timeout = deadline.unwrap_or(R::DEADLINE);
    let mut headers = HeaderMap::new();
    if let Some(g) = grant {
        g.to_headers(&mut headers);
    }
    Deadline::after(timeout).to_headers(&mut headers);
    crate::telemetry::propagation::inject_current(&mut headers);
    let body = bytes::Bytes::from(body);
    let request_to = |account: Option<&str>| {
        let req = async_nats::Request::new()
            .headers(headers.clone())
            .payload(body.clone())
            .timeout(Some(timeout));
        client.send_request(subjects.rpc(account, R::OP), req)
    };
    let connects = client.statistics().connects.load(Ordering::Relaxed);
    let account = R::account(request);
    let msg = tokio::select! {
        biased;
        reply = async {
            match request_to(account).await {
                // Nobody serves the account right now (unknown, removed, or between two
                // workers): any worker says which, instead of a bare "no worker answered".
                Err(e) if account.is_some() && e.kind() == RequestErrorKind::NoResponders => {
                    request_to(None).await
                }
                other => other,
            }
        } => reply.map_err(|e| request_error(e.kind(), R::MAY_TRANSMIT))?,
        () = reconnected_since(client, connects) => {
            return Err(request_error(RequestErrorKind::Other, R::MAY_TRANSMIT));
        }
    };
    decode_reply::<R::Response>(&msg.payload)
}

/// How long a request still waits for its reply once its client has reconnected since the
/// request left.
const AFTER_RECONNECT: Duration = Duration::from_secs(2);

/// Resolves [`AFTER_RECONNECT`] after `client` reconnected (its connection count passed
/// `connects`, read as the request left; the first connection of a client that had none is not
/// a reconnection). A reply crossing a restarted NATS server is often lost — the worker's
/// answer flushed before this client subscribed again, or the request gone with the server —
/// and would otherwise hold the caller until its deadline (30 s for a read); by then a live
/// reply has had time to come.
async fn reconnected_since(client: &Client, connects: u64) {
    let statistics = client.statistics();
    while statistics.connects.load(Ordering::Relaxed) <= connects.max(1) {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(AFTER_RECONNECT).await;
}

/// What a failed request means to the caller. No responders: nothing took it
/// (`worker_unavailable`, at once). A timeout, or a client that lost its connection while
/// waiting: the worker may have taken it — for an op that may transmit
/// ([`Rpc::MAY_TRANSMIT`]) the send's outcome is unknown (`send_outcome_unknown`, which says
/// how to learn it), for any other op `deadline_exceeded` / `worker_unavailable`.
pub fn request_error(kind: RequestErrorKind, may_transmit: bool) -> RpcError {
    use RequestErrorKind as K;
    match kind {
        K::NoResponders => RpcError::new(ErrorCode::WorkerUnavailable, "no worker answered"),
        K::TimedOut | K::Other if may_transmit => RpcError::send_outcome_unknown(),
        K::TimedOut => RpcError::new(
            ErrorCode::DeadlineExceeded,
            "the worker did not answer in time",
        ),
        K::MaxPayloadExceeded => {
            RpcError::new(ErrorCode::RequestTooLarge, "the request is too large")
        }
        K::InvalidSubject => RpcError::new(ErrorCode::Internal, "invalid subject"),
        K::Other => RpcError::new(
            ErrorCode::WorkerUnavailable,
            "the message bus is unavailable",
        ),
    }
}

/// The NATS header that carries a request's deadline: the instant after which its caller no
/// longer waits for the answer, in Unix milliseconds. Absolute rather than a duration, so the
/// time a request spends queued (in a client that is reconnecting, say) counts against it; the
/// gateway's and the worker's clocks are taken to agree, as NTP keeps them, to well within the
/// seconds a deadline spans.
pub const DEADLINE_HEADER: &str = "Wazap-Deadline";

/// A request's deadline ([`DEADLINE_HEADER`]). The worker's dispatcher runs each request inside
/// [`Deadline::scope`], so the code that is about to transmit can ask [`Deadline::current`]
/// whether anyone still waits for it without every layer in between carrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(SystemTime);

tokio::task_local! {
    static CURRENT: Option<Deadline>;
}

impl Deadline {
    /// The deadline `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self(SystemTime::now() + timeout)
    }

    /// The deadline at `at`.
    pub fn at(at: SystemTime) -> Self {
        Self(at)
    }

    /// Put the deadline in a request's headers.
    pub fn to_headers(self, headers: &mut HeaderMap) {
        let ms = self
            .0
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        headers.insert(DEADLINE_HEADER, ms.to_string().as_str());
    }

    /// The deadline a request carries: `None` without the header (an older gateway) or with a
    /// value that is not Unix milliseconds, which then holds the request to no deadline, as
    /// before deadlines travelled.
    pub fn from_headers(headers: Option<&HeaderMap>) -> Option<Self> {
        let ms: u64 = headers?
            .get(DEADLINE_HEADER)?
            .as_str()
            .trim()
            .parse()
            .ok()?;
        UNIX_EPOCH.checked_add(Duration::from_millis(ms)).map(Self)
    }

    /// True once the deadline is past.
    pub fn passed(self) -> bool {
        SystemTime::now() >= self.0
    }

    /// Run `work` with `deadline` as its [`Deadline::current`].
    pub async fn scope<F: std::future::Future>(deadline: Option<Self>, work: F) -> F::Output {
        CURRENT.scope(deadline, work).await
    }

    /// The deadline of the request this task serves: `None` outside [`Deadline::scope`] or for
    /// a request that carried none.
    pub fn current() -> Option<Self> {
        CURRENT.try_with(|d| *d).ok().flatten()
    }
}

/// Wait until the NATS server has processed every command this client sent before, e.g. an
/// unsubscribe: a request to a subject nobody serves is answered "no responders" only after
/// the server has read what came before it on this connection. Returns whether that answer came
/// (within 5 s); a worker stopping uses it so that, once it has stopped, callers are told at
/// once that no worker answers instead of waiting out their deadline.
pub async fn server_caught_up(client: &Client) -> bool {
    let req = async_nats::Request::new().timeout(Some(Duration::from_secs(5)));
    match client.send_request(client.new_inbox(), req).await {
        Err(e) => e.kind() == async_nats::RequestErrorKind::NoResponders,
        Ok(_) => false,
    }
}

/// Decode a reply envelope; a body that is not one is `internal`.
pub fn decode_reply<T: DeserializeOwned>(payload: &[u8]) -> Result<T, RpcError> {
    serde_json::from_slice::<Reply<T>>(payload)
        .map_err(|_| RpcError::new(ErrorCode::Internal, "the worker sent an unreadable reply"))?
        .into()
}

/// Decode a request body (the worker's RPC edge and the sim's control ops alike); an empty
/// body is `{}`. A bad body is `invalid_argument` naming a missing field when serde says
/// which, never echoing a value (serde's other messages can quote them).
pub fn decode_request<T: DeserializeOwned>(payload: &[u8]) -> Result<T, RpcError> {
    let payload: &[u8] = if payload.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        payload
    };
    serde_json::from_slice(payload).map_err(|e| {
        let msg = e.to_string();
        match msg
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
        {
            Some((field, _)) => RpcError::invalid(field, "required"),
            None => RpcError::invalid("body", "not a valid request for this operation"),
        }
    })
}

/// Encode a reply envelope.
pub fn encode_reply<T: Serialize>(reply: &Reply<T>) -> bytes::Bytes {
    serde_json::to_vec(reply)
        .unwrap_or_else(|_| {
            br#"{"error":{"code":"internal","message":"reply could not be encoded"}}"#.to_vec()
        })
        .into()
}

/// How long media bytes wait in the object store between gateway and worker (either way).
pub const MEDIA_TTL: Duration = Duration::from_secs(3600);

/// The most a media bucket holds (its stream's `max_bytes`): a gateway storing for many sends at
/// once, or a credential filling it, meets a refused put instead of the server's whole
/// JetStream store. 512 MiB is 64 sends of 8 MiB in flight; sent bytes are deleted at once and
/// the rest go with [`MEDIA_TTL`]. A bucket made before this limit gets it when next opened
/// ([`media_store_with`]).
pub const MEDIA_MAX_BYTES: i64 = 512 * 1024 * 1024;

/// Open the media bucket `bucket` ([`Subjects::media_bucket`] when a gateway puts a send's
/// bytes, [`Subjects::attachment_bucket`] when the worker puts an attachment's), creating it
/// with a [`MEDIA_TTL`], [`MEDIA_MAX_BYTES`] and `replicas` copies
/// ([`crate::config::NatsConfig::replicas`]: on a cluster, a bucket of one copy lives on one
/// server, and media sends fail while that server is down) when it does not exist yet. Gateways
/// may race to create theirs: the loser opens what the winner made. A bucket that exists is
/// fitted to both ([`fit_media_bucket`]). When creation fails and there is still no bucket, the
/// creation's error is returned: JetStream's reason (more copies than its servers, say) tells
/// the operator more than "not found".
pub async fn media_store_with(
    js: &async_nats::jetstream::Context,
    bucket: &str,
    replicas: usize,
) -> Result<async_nats::jetstream::object_store::ObjectStore, async_nats::Error> {
    if let Ok(store) = js.get_object_store(bucket).await {
        fit_media_bucket(js, bucket, replicas).await;
        return Ok(store);
    }
    let created = js
        .create_object_store(async_nats::jetstream::object_store::Config {
            bucket: bucket.to_owned(),
            description: Some("wazap media between gateways and the worker".into()),
            max_age: MEDIA_TTL,
            max_bytes: MEDIA_MAX_BYTES,
            num_replicas: replicas,
            ..Default::default()
        })
        .await;
    match created {
        Ok(store) => Ok(store),
        Err(create) => match js.get_object_store(bucket).await {
            Ok(store) => Ok(store),
            Err(_) => Err(create.into()),
        },
    }
}

/// [`media_store_with`] one copy, for a caller that has no [`crate::config::NatsConfig`] at
/// hand; it never takes copies away from a bucket that has more.
pub async fn media_store(
    js: &async_nats::jetstream::Context,
    bucket: &str,
) -> Result<async_nats::jetstream::object_store::ObjectStore, async_nats::Error> {
    media_store_with(js, bucket, 1).await
}

/// Fit the existing bucket `bucket` to what [`media_store_with`] creates: [`MEDIA_MAX_BYTES`]
/// when its stream has no size limit (`max_bytes` -1: made before the limit existed), so one
/// full bucket never takes the server's whole store; and at least `replicas` copies, so a
/// deployment that moves to a cluster, or raises `WAZAP_NATS_REPLICAS`, needs no manual step
/// (JetStream copies the stream to the new peers). Copies are never lowered: an operator may
/// have raised them by hand. Best effort: a server or user that refuses the update
/// (`deploy/nats.conf` grants `STREAM.UPDATE` on the buckets' streams; a single server refuses
/// a second copy) leaves the bucket as it was, with one warning.
pub async fn fit_media_bucket(js: &async_nats::jetstream::Context, bucket: &str, replicas: usize) {
    let fitted = async {
        let stream = js.get_stream(format!("OBJ_{bucket}")).await?;
        let mut config = stream.cached_info().config.clone();
        let copies = config.num_replicas.max(1);
        if config.max_bytes >= 0 && copies >= replicas {
            return Ok::<_, async_nats::Error>(None);
        }
        if config.max_bytes < 0 {
            config.max_bytes = MEDIA_MAX_BYTES;
        }
        config.num_replicas = copies.max(replicas);
        js.update_stream(config).await?;
        Ok(Some(copies))
    }
    .await;
    match fitted {
        Ok(Some(had)) => tracing::info!(
            bucket,
            max_bytes = MEDIA_MAX_BYTES,
            replicas_before = had,
            replicas = had.max(replicas),
            "media bucket updated"
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!(
            bucket,
            replicas,
            error = %e,
            "media bucket could not be given its size limit or WAZAP_NATS_REPLICAS copies; it stays as it was"
        ),
    }
}

/// Read object `name` of `store` (the bucket `bucket`) whole (refused when larger than `max` bytes),
/// without a consumer: its metadata and each chunk by JetStream direct gets. The object store's own `get` creates an ordered
/// consumer per read that the server keeps for 30 s after use; at a few hundred reads a second
/// they hit the server's consumer limit (JetStream error 10026) and reads fail.
pub async fn read_object(
    js: &async_nats::jetstream::Context,
    store: &async_nats::jetstream::object_store::ObjectStore,
    bucket: &str,
    name: &str,
    max: usize,
) -> Result<Vec<u8>, async_nats::Error> {
    let info = store.info(name).await?;
    if info.deleted {
        return Err("the object was deleted".into());
    }
    if info.size > max {
        return Err("the object is larger than allowed".into());
    }
    let stream = js.get_stream(format!("OBJ_{bucket}")).await?;
    let chunks = format!("$O.{bucket}.C.{}", info.nuid);
    let mut data = Vec::with_capacity(info.size);
    let mut next = None;
    for _ in 0..info.chunks {
        let chunk = stream
            .direct_get_next_for_subject(chunks.as_str(), next)
            .await?;
        data.extend_from_slice(&chunk.payload);
        next = Some(chunk.sequence + 1);
    }
    if data.len() != info.size {
        return Err("the object's chunks do not add up to its size".into());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_envelopes_round_trip() {
        let ok: Reply<u32> = Reply::Ok(7);
        assert_eq!(serde_json::to_string(&ok).unwrap(), r#"{"ok":7}"#);
        let err: Reply<u32> = Reply::Error(RpcError::new(ErrorCode::Busy, "x"));
        let json = serde_json::to_string(&err).unwrap();
        assert_eq!(json, r#"{"error":{"code":"busy","message":"x"}}"#);
        assert_eq!(
            decode_reply::<u32>(json.as_bytes()).unwrap_err().code,
            ErrorCode::Busy
        );
        assert_eq!(
            decode_reply::<u32>(b"garbage").unwrap_err().code,
            ErrorCode::Internal
        );
    }

    #[test]
    fn deadlines_round_trip_through_headers() {
        let d = Deadline::at(UNIX_EPOCH + Duration::from_millis(1_764_000_000_123));
        let mut h = HeaderMap::new();
        d.to_headers(&mut h);
        assert_eq!(
            h.get(DEADLINE_HEADER).map(|v| v.as_str()),
            Some("1764000000123")
        );
        assert_eq!(Deadline::from_headers(Some(&h)), Some(d));
        assert!(d.passed());
        assert!(!Deadline::after(Duration::from_secs(60)).passed());
        // No header, or one that is not Unix milliseconds: no deadline.
        assert_eq!(Deadline::from_headers(None), None);
        assert_eq!(Deadline::from_headers(Some(&HeaderMap::new())), None);
        for bad in ["-5", "soon", "", "1.5"] {
            let mut h = HeaderMap::new();
            h.insert(DEADLINE_HEADER, bad);
            assert_eq!(Deadline::from_headers(Some(&h)), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn the_current_deadline_is_the_scope_s() {
        assert_eq!(Deadline::current(), None);
        let d = Deadline::after(Duration::from_secs(5));
        let inner = Deadline::scope(Some(d), async { Deadline::current() }).await;
        assert_eq!(inner, Some(d));
        let none = Deadline::scope(None, async { Deadline::current() }).await;
        assert_eq!(none, None);
    }

    #[test]
    fn a_cut_send_is_outcome_unknown_and_a_cut_read_late() {
        use RequestErrorKind as K;
        for kind in [K::TimedOut, K::Other] {
            let e = request_error(kind, true);
            assert_eq!(e, RpcError::send_outcome_unknown());
            assert!(e.message.contains("same request_id"));
            assert!(e.message.contains("get_send_status"));
        }
        assert_eq!(
            request_error(K::TimedOut, false).code,
            ErrorCode::DeadlineExceeded
        );
        assert_eq!(
            request_error(K::Other, false).code,
            ErrorCode::WorkerUnavailable
        );
        // Nothing took it: known not sent.
        for may_transmit in [true, false] {
            assert_eq!(
                request_error(K::NoResponders, may_transmit).code,
                ErrorCode::WorkerUnavailable
            );
        }
    }
}
