//! NATS authenticated and authorised as shipped (#26 item 2): a throwaway nats-server runs
//! `deploy/nats.conf` itself — its users and permissions as written, address, port and store
//! from the command line — and the real worker and a gateway, each with its own user, serve a
//! read, an attachment and a media send. Then raw clients: without credentials (or with a wrong
//! password) the server refuses the connection; with the gateway's it cannot publish the
//! worker's subjects, subscribe to the worker's or anyone's inboxes, read chunks back from the
//! send-media bucket, or touch `wazap.sim.>`; with the worker's it cannot call
//! `wazap.rpc.>` nor read the gateways' replies. Each refusal is the server's own
//! "Permissions Violation" for that exact subject, seen on the client's event callback.
//!
//! The test's configuration drops the file's `store_dir` (the throwaway store is given on the
//! command line) and adds exactly two things, both for the harness:
//! the sim connector's `wazap.sim.>` for the worker (the shipped file must grant it to nobody)
//! and a `harness` user that drives the sim and mints pings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use tokio::sync::mpsc;
use wazap_shared::bus;
use wazap_shared::subjects::{Subjects, sim_op};
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::sim::Transmissions;
use wazap_tests::fault::NatsServer;
use wazap_tests::fixtures::{jpeg_b64, minutes_ago, person, photo};
use wazap_tests::{NatsUsers, Stack};
use wazap_worker::config::ConnectorKind;

const GATEWAY_PASSWORD: &str = "test-gateway-password";
const WORKER_PASSWORD: &str = "test-worker-password";
const HARNESS_PASSWORD: &str = "test-harness-password";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

/// `text` with `insert` right after the first `marker` at or after `from`.
fn insert_after(text: &str, from: &str, marker: &str, insert: &str) -> String {
    let start = text.find(from).unwrap_or_else(|| panic!("no {from:?}"));
    let at = start
        + text[start..]
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker:?} after {from:?}"))
        + marker.len();
    format!("{}{insert}{}", &text[..at], &text[at..])
}

/// The shipped configuration plus the harness's two additions.
fn test_config() -> String {
    let shipped = std::fs::read_to_string(repo().join("deploy/nats.conf")).expect("nats.conf");
    let granted: Vec<&str> = shipped
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.contains("sim"))
        .collect();
    assert!(
        granted.is_empty(),
        "the shipped file grants sim: {granted:?}"
    );
    assert!(
        !shipped.contains("no_auth_user"),
        "the shipped file lets anonymous clients in"
    );
    // The store is the throwaway server's (nats-server refuses `-sd` beside `store_dir`).
    let shipped: String = shipped
        .lines()
        .filter(|l| !l.trim_start().starts_with("store_dir"))
        .map(|l| format!("{l}\n"))
        .collect();
    let config = insert_after(
        &shipped,
        "WORKER = {",
        "subscribe = {\n      allow = [",
        "\n        \"wazap.sim.>\"",
    );
    insert_after(
        &config,
        "authorization {",
        "users = [",
        &format!(
            "\n    {{ user: harness, password: \"{HARNESS_PASSWORD}\", permissions: {{ \
             publish: [\"wazap.rpc.>\", \"wazap.sim.>\"], subscribe: [\"_INBOX.>\"] }} }}"
        ),
    )
}

async fn server() -> anyhow::Result<NatsServer> {
    NatsServer::start_configured(
        &test_config(),
        &[
            ("WAZAP_NATS_GATEWAY_PASSWORD", GATEWAY_PASSWORD),
            ("WAZAP_NATS_WORKER_PASSWORD", WORKER_PASSWORD),
        ],
    )
    .await
}

/// A raw client whose server errors (permissions violations) arrive on `errors`.
struct Probe {
    client: async_nats::Client,
    errors: mpsc::UnboundedReceiver<String>,
}

impl Probe {
    async fn connect(
        url: &str,
        user: Option<(&str, &str)>,
        inbox: Option<String>,
    ) -> Result<Self, async_nats::ConnectError> {
        let (tx, errors) = mpsc::unbounded_channel();
        let mut options = async_nats::ConnectOptions::new()
            .event_callback(move |event| {
                let tx = tx.clone();
                async move {
                    if let async_nats::Event::ServerError(e) = event {
                        let _ = tx.send(e.to_string());
                    }
                }
            })
            .request_timeout(Some(Duration::from_secs(2)));
        if let Some((user, password)) = user {
            options = options.user_and_password(user.into(), password.into());
        }
        if let Some(inbox) = inbox {
            options = options.custom_inbox_prefix(inbox);
        }
        let client = options.connect(url).await?;
        Ok(Self { client, errors })
    }

    /// The server's permissions violation for `kind` ("Publish" or "Subscription") to a
    /// subject starting with `subject`, within 5 s.
    async fn refused(&mut self, kind: &str, subject: &str) -> anyhow::Result<()> {
        let wanted = format!("Permissions Violation for {kind} to \"{subject}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match tokio::time::timeout_at(deadline, self.errors.recv()).await {
                Ok(Some(e)) if e.contains(&wanted) => return Ok(()),
                Ok(Some(_)) => {}
                _ => anyhow::bail!("no permissions violation for {kind} to {subject}"),
            }
        }
    }

    async fn publish_refused(&mut self, subject: &str) -> anyhow::Result<()> {
        self.client.publish(subject.to_owned(), "{}".into()).await?;
        self.client.flush().await?;
        self.refused("Publish", subject).await
    }

    async fn subscribe_refused(&mut self, subject: &str) -> anyhow::Result<()> {
        let _sub = self.client.subscribe(subject.to_owned()).await?;
        self.client.flush().await?;
        self.refused("Subscription", subject).await
    }

    /// No server error has come (what was allowed stayed allowed).
    fn quiet(&mut self) -> anyhow::Result<()> {
        match self.errors.try_recv() {
            Ok(e) => anyhow::bail!("unexpected server error: {e}"),
            Err(_) => Ok(()),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shipped_nats_permissions_serve_wazap_and_refuse_everything_else() -> anyhow::Result<()>
{
    let server = server().await?;
    let url = server.url();
    let subjects = Subjects::new("wazap");
    let users = NatsUsers {
        url: url.clone(),
        prefix: "wazap".into(),
        worker: ("worker".into(), WORKER_PASSWORD.into()),
        harness: ("harness".into(), HARNESS_PASSWORD.into()),
    };
    let stack = Stack::start_authenticated(&users, ConnectorKind::Sim).await?;

    // The real binaries with their users: a read, an attachment, a media send.
    let chat = stack.contact(&person("972503331111"), None, "Dana").await?;
    stack
        .inject(photo(
            &person("972503331111"),
            "P1",
            minutes_ago(5),
            "sunset",
        ))
        .await?;
    let token = stack.sending_connection(SendMode::All, vec![]).await?.1;
    // Both buckets as made before they had a size limit: each is given one when its user opens
    // it (the gateway's and the worker's `STREAM.UPDATE`).
    let old_buckets = [
        (
            "gateway",
            GATEWAY_PASSWORD,
            subjects.gateway_inbox(),
            subjects.media_bucket(),
        ),
        (
            "worker",
            WORKER_PASSWORD,
            subjects.worker_inbox(),
            subjects.attachment_bucket(),
        ),
    ];
    for (user, password, inbox, bucket) in &old_buckets {
        let p = Probe::connect(&url, Some((user, password)), Some(inbox.clone())).await?;
        jetstream::new(p.client.clone())
            .create_object_store(jetstream::object_store::Config {
                bucket: bucket.clone(),
                ..Default::default()
            })
            .await?;
    }
    let gw = stack
        .gateway(&[
            ("WAZAP_NATS_USER", "gateway"),
            ("WAZAP_NATS_PASSWORD", GATEWAY_PASSWORD),
        ])
        .await?;
    let mcp = gw.mcp(&token).await?;
    let read = mcp.call("read_messages", json!({"chat_id": chat})).await?;
    assert_eq!(read.ok()["messages"].as_array().map(Vec::len), Some(1));
    let found = mcp
        .call("search_attachments", json!({"chat_id": chat}))
        .await?;
    let attachment = found.ok()["attachments"][0]["attachment_id"].clone();
    let got = mcp
        .call("get_attachment", json!({"attachment_id": attachment}))
        .await?;
    assert_eq!(got.ok()["mime_type"], "image/jpeg");
    assert_eq!(got.images.len(), 1);
    let photo_b64 = jpeg_b64(32, 24);
    let sent = mcp
        .call(
            "send_media",
            json!({"chat_id": chat, "request_id": "auth-1", "kind": "image",
                   "data_base64": photo_b64, "mime_type": "image/jpeg"}),
        )
        .await?;
    let violations: Vec<String> = server
        .log()
        .lines()
        .filter(|l| l.contains("Violation"))
        .map(str::to_owned)
        .collect();
    assert!(
        violations.is_empty(),
        "wazap itself was refused: {violations:#?}"
    );
    assert_eq!(sent.ok()["state"], "accepted");
    for (user, password, inbox, bucket) in &old_buckets {
        let p = Probe::connect(&url, Some((user, password)), Some(inbox.clone())).await?;
        let mut stream = jetstream::new(p.client.clone())
            .get_stream(format!("OBJ_{bucket}"))
            .await?;
        assert_eq!(
            stream.info().await?.config.max_bytes,
            bus::MEDIA_MAX_BYTES,
            "{bucket}"
        );
    }
    let log: Transmissions = stack
        .sim_raw(sim_op::TRANSMISSIONS, &json!({}))
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    assert_eq!(log.transmissions.len(), 1);
    assert_eq!(log.transmissions[0].kind, "image");

    // No credentials, or a wrong password: no connection at all.
    for user in [None, Some(("gateway", "wrong-password"))] {
        let refused = Probe::connect(&url, user, None).await.err();
        assert_eq!(
            refused.map(|e| e.kind()),
            Some(async_nats::ConnectErrorKind::AuthorizationViolation),
            "{user:?}"
        );
    }

    // The gateway's credentials.
    let mut g = Probe::connect(
        &url,
        Some(("gateway", GATEWAY_PASSWORD)),
        Some(subjects.gateway_inbox()),
    )
    .await?;
    // What a gateway does still works (the refusals below are not the probe's own fault).
    bus::call::<wazap_shared::wire::system::Ping>(
        &g.client,
        &subjects,
        None,
        &Default::default(),
        None,
    )
    .await
    .map_err(|e| anyhow::anyhow!("ping as the gateway: {e:?}"))?;
    g.quiet()?;
    g.publish_refused("wazap.events.archive").await?;
    g.publish_refused("_INBOX.wazap.worker.forged").await?;
    g.publish_refused("wazap.sim.inject_message").await?;
    g.subscribe_refused("wazap.rpc.>").await?;
    g.subscribe_refused("_INBOX.wazap.worker.>").await?;
    g.subscribe_refused("_INBOX.>").await?;
    g.subscribe_refused("wazap.sim.>").await?;
    g.subscribe_refused("$O.wazap-media.>").await?;
    // The send-media bucket: a gateway puts, and reads nothing back — not even its own.
    let js = jetstream::new(g.client.clone());
    let store = bus::media_store(&js, &subjects.media_bucket())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store.put("probe", &mut &b"someone's photo"[..]).await?;
    g.quiet()?;
    let read = bus::read_object(&js, &store, &subjects.media_bucket(), "probe", 1 << 20).await;
    assert!(
        read.is_err(),
        "a gateway read chunks of the send-media bucket"
    );
    g.refused("Publish", "$JS.API.DIRECT.GET.OBJ_wazap-media\"")
        .await?;
    assert!(
        store_read_fails(&store).await,
        "a gateway read an object back"
    );
    g.refused("Publish", "$JS.API.CONSUMER.CREATE.OBJ_wazap-media")
        .await?;
    g.publish_refused("$JS.API.STREAM.MSG.GET.OBJ_wazap-media")
        .await?;
    g.publish_refused("$JS.API.STREAM.DELETE.OBJ_wazap-media")
        .await?;

    // The worker's credentials.
    let mut w = Probe::connect(
        &url,
        Some(("worker", WORKER_PASSWORD)),
        Some(subjects.worker_inbox()),
    )
    .await?;
    // The worker reads a large object a gateway put (many chunks: the ordered consumer's flow
    // control answers go out as responses) and deletes it.
    let big: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    store.put("probe-big", &mut &big[..]).await?;
    let wjs = jetstream::new(w.client.clone());
    let wstore = wjs.get_object_store(subjects.media_bucket()).await?;
    let mut object = wstore.get("probe-big").await?;
    let mut data = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut object, &mut data).await?;
    assert!(data == big, "the worker read {} bytes", data.len());
    wstore.delete("probe-big").await?;
    w.quiet()?;
    g.quiet()?;
    w.publish_refused("wazap.rpc.ping").await?;
    w.publish_refused("wazap.sim.inject_message").await?;
    w.subscribe_refused("_INBOX.wazap.gateway.>").await?;
    w.subscribe_refused("wazap.events.>").await?;
    w.publish_refused("$JS.API.DIRECT.GET.OBJ_wazap-attachments")
        .await?;

    // The worker deleted the send's object (after its grace period), and neither binary was
    // refused anything meanwhile (the probes' refusals are theirs: unnamed clients).
    let sent_object = hex::encode(Sha256::digest(B64.decode(&photo_b64)?));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while wstore.info(&sent_object).await.is_ok_and(|i| !i.deleted) {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the sent object stayed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    w.quiet()?;
    let refused: Vec<String> = server
        .log()
        .lines()
        .filter(|l| l.contains("Violation") && l.contains("rust:wazap-"))
        .map(str::to_owned)
        .collect();
    assert!(refused.is_empty(), "wazap itself was refused: {refused:#?}");

    mcp.close().await;
    gw.stop().await?;
    Ok(())
}

/// Reading a handle got from the store fails (the ordered consumer behind it was refused).
async fn store_read_fails(store: &jetstream::object_store::ObjectStore) -> bool {
    use tokio::io::AsyncReadExt as _;
    let Ok(mut object) = store.get("probe").await else {
        return true;
    };
    let mut data = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), object.read_to_end(&mut data))
        .await
        .map_or(true, |r| r.is_err() || data.is_empty())
}
