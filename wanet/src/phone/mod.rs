//! A simulated phone: a real whatsapp-rust client logged in as an account's primary device (0),
//! so everything it sends is Signal-encrypted exactly as a phone's would be. Tests drive it with
//! a small API: scan a QR, send to a number, read what it received.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::Notify;
use whatsapp_rust::bot::{Bot, BotHandle};
use whatsapp_rust::http::{HttpClient, HttpRequest, HttpResponse};
use whatsapp_rust::store::commands::DeviceCommand;
use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::download::MediaType;
use whatsapp_rust::wacore::libsignal::protocol::KeyPair;
use whatsapp_rust::wacore::store::InMemoryBackend;
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Client, Jid, UploadOptions};

use crate::server::Server;

mod compose;
mod reupload;
mod seen;

pub use self::seen::Received;
use self::seen::{Collect, Seen};

/// How long a phone waits to log in.
const LOGIN_WAIT: Duration = Duration::from_secs(10);

/// How a phone treats its companion's requests for older history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDemand {
    /// Answer with what it holds older than the request's oldest message (maybe nothing).
    Answer,
    /// Never answer.
    Ignore,
}

/// A phone on the network.
pub struct Phone {
    server: Arc<Server>,
    number: String,
    client: Arc<Client>,
    identity: KeyPair,
    seen: Arc<Seen>,
    handle: Mutex<Option<BotHandle>>,
    older: Arc<Mutex<(OnDemand, Vec<crate::HistoryChat>)>>,
    answered: Arc<std::sync::atomic::AtomicUsize>,
}

impl Phone {
    /// Start the primary device of the account `number` (registered on `server` already) and wait
    /// until it is logged in.
    pub(crate) async fn start(
        server: Arc<Server>,
        number: &str,
        name: &str,
    ) -> anyhow::Result<Self> {
        let (requests, mut incoming) = tokio::sync::mpsc::unbounded_channel();
        let (to_keep, keep) = tokio::sync::mpsc::unbounded_channel();
        let seen = Arc::new(Seen {
            messages: Mutex::default(),
            bodies: Mutex::default(),
            files: Mutex::default(),
            to_keep,
            changed: Notify::new(),
            requests,
        });
        let url = format!("ws://{}/ws/chat", server.addr());
        let bot = Bot::builder()
            .with_backend(InMemoryBackend::new())
            .with_transport_factory(TokioWebSocketTransportFactory::new().with_url(url))
            .with_http_client(InProcessHttp(server.clone()))
            .with_event_handler(Collect(seen.clone()))
            .with_version(crate::VERSION)
            .with_push_name(name)
            .build()
            .await
            .context("build the phone's client")?;
        let client = bot.client();
        let pm = client.persistence_manager();
        let lid = server
            .state()
            .accounts
            .get(number)
            .map(|a| a.lid.clone())
            .context("no such account")?;
        pm.process_command(DeviceCommand::SetId(Some(Jid::pn(number))))
            .await;
        pm.process_command(DeviceCommand::SetLid(Some(Jid::lid(lid))))
            .await;
        pm.flush().await.context("flush the phone's store")?;
        let identity = pm.get_device_snapshot().identity_key.clone();
        let handle = bot.spawn();
        client
            .wait_for_connected(LOGIN_WAIT)
            .await
            .map_err(|e| anyhow::anyhow!("the phone did not log in: {e:?}"))?;
        server.keys_uploaded(number, 0, LOGIN_WAIT).await?;
        reupload::keep_files(client.clone(), seen.clone(), keep);
        reupload::answer_retries(client.clone(), seen.clone());
        let older = Arc::new(Mutex::new((OnDemand::Answer, Vec::new())));
        let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (c, o, n, own) = (
            client.clone(),
            older.clone(),
            answered.clone(),
            number.to_owned(),
        );
        tokio::spawn(async move {
            while let Some(r) = incoming.recv().await {
                let page = {
                    let o = o.lock().unwrap_or_else(|p| p.into_inner());
                    (o.0 == OnDemand::Answer).then(|| crate::history::older_than(&o.1, &r))
                };
                if let Some(page) = page {
                    let msg = crate::history::on_demand(&page, &r.id);
                    if c.send_message(Jid::pn(&own), msg).await.is_ok() {
                        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        });
        Ok(Self {
            server,
            number: number.to_owned(),
            client,
            identity,
            seen,
            handle: Mutex::new(Some(handle)),
            older,
            answered,
        })
    }

    /// The phone number (digits).
    pub fn number(&self) -> &str {
        &self.number
    }

    /// The underlying client, for flows this API does not cover yet.
    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }

    /// Scan a linking QR payload: the device showing it becomes a companion of this account.
    /// As a phone does, this one then shares its app-state key with the new device (once the
    /// device is up), which spares the device the wait for a share that would never come.
    pub fn scan(&self, qr: &str) -> anyhow::Result<()> {
        let before = self.server.companions(&self.number).into_iter().max();
        crate::server::scan(&self.server, &self.number, &self.identity, qr)?;
        self.share_key_when_up(before);
        Ok(())
    }

    /// Once a companion newer than `before` is up, share the app-state key with it, as a phone
    /// does.
    fn share_key_when_up(&self, before: Option<u16>) {
        let (server, client, number) = (
            self.server.clone(),
            self.client.clone(),
            self.number.clone(),
        );
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + LOGIN_WAIT;
            let device = loop {
                match server.companions(&number).into_iter().max() {
                    Some(d) if Some(d) > before => break d,
                    _ if tokio::time::Instant::now() >= deadline => return,
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            };
            if server
                .keys_uploaded(&number, device, LOGIN_WAIT)
                .await
                .is_ok()
                && let Err(e) = client.send_message(Jid::pn(&number), key_share()).await
            {
                tracing::warn!(error = ?e, "wanet: the phone could not share its app-state key");
            }
        });
    }

    /// Type a pairing code shown by a device linking with this phone's number (Linked devices →
    /// Link with phone number).
    pub fn enter_code(&self, code: &str) -> anyhow::Result<()> {
        let before = self.server.companions(&self.number).into_iter().max();
        crate::server::enter_code(&self.server, &self.number, &self.identity, code)?;
        self.share_key_when_up(before);
        Ok(())
    }

    /// Send a text to `to` (an account's digits or a group JID); the message id.
    pub async fn send_text(&self, to: &str, text: &str) -> anyhow::Result<String> {
        crate::secret(crate::MESSAGE_TEXT, text);
        self.send(
            to,
            wa::Message {
                conversation: Some(text.to_owned()),
                ..Default::default()
            },
        )
        .await
    }

    /// Push `chats` to this account's companions as the history a phone sends after linking
    /// (one initial-bootstrap page, inline, the sync done).
    pub async fn push_history(&self, chats: &[crate::HistoryChat]) -> anyhow::Result<()> {
        self.push_history_page(chats, 1, 100).await
    }

    /// Push `chats` as initial-bootstrap page number `chunk`, the sync `progress` percent done
    /// after it (a phone sends several pages, the last at 100).
    pub async fn push_history_page(
        &self,
        chats: &[crate::HistoryChat],
        chunk: u32,
        progress: u32,
    ) -> anyhow::Result<()> {
        crate::history_secrets(chats);
        let page = crate::history::notification(chats, chunk, progress);
        self.send(&self.number.clone(), page).await.map(|_| ())
    }

    /// Push a history page that inflates past `inflated` bytes (a zlib bomb, a few hundred KiB
    /// on the wire) to this account's companions.
    pub async fn push_oversize_history(&self, inflated: u64) -> anyhow::Result<()> {
        self.send(&self.number.clone(), crate::history::oversize(inflated))
            .await
            .map(|_| ())
    }

    /// Send a JPEG photo (with its caption and thumbnail) to `to`; the message id.
    pub async fn send_image(
        &self,
        to: &str,
        jpeg: Vec<u8>,
        caption: &str,
        thumbnail: Vec<u8>,
    ) -> anyhow::Result<String> {
        crate::secret(crate::MESSAGE_TEXT, caption);
        let up = self
            .client
            .upload(jpeg, MediaType::Image, UploadOptions::default())
            .await
            .context("upload")?;
        let msg = whatsapp_rust::media::image_message(
            up,
            whatsapp_rust::media::ImageOptions {
                caption: Some(caption.to_owned()),
                jpeg_thumbnail: Some(thumbnail),
                ..Default::default()
            },
        );
        self.send(to, msg).await
    }

    /// Download and decrypt the file of the received message `id` (from the media host).
    pub async fn download(&self, id: &str) -> anyhow::Result<Vec<u8>> {
        let msg = self.seen.body(id).context("no such message")?;
        let (file, _) = reupload::file_of(&msg).context("the message carries no file")?;
        self.client.download(file).await.context("download")
    }

    /// Whether the phone holds the file of the received message `id` (it downloads each file
    /// it receives, so it can upload it again when a companion asks).
    pub fn holds_file(&self, id: &str) -> bool {
        self.seen.file(id).is_some()
    }

    /// Keep `chats` as older history the phone hands out on request, and how it answers.
    pub fn hold_older(&self, mode: OnDemand, chats: Vec<crate::HistoryChat>) {
        crate::history_secrets(&chats);
        *self.older.lock().unwrap_or_else(|p| p.into_inner()) = (mode, chats);
    }

    /// How many on-demand history requests the phone answered.
    pub fn answered(&self) -> usize {
        self.answered.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every message received so far (a redelivered one counts once per delivery).
    pub fn received(&self) -> Vec<Received> {
        self.seen
            .messages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Wait until a received message matches `pred`, at most `wait`.
    pub async fn wait_for(
        &self,
        wait: Duration,
        pred: impl Fn(&Received) -> bool,
    ) -> anyhow::Result<Received> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = self.seen.changed.notified();
            if let Some(m) = self
                .seen
                .messages
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find(|m| pred(m))
            {
                return Ok(m.clone());
            }
            tokio::time::timeout_at(deadline, changed)
                .await
                .context("no such message arrived in time")?;
        }
    }

    /// Stop the phone's client.
    pub async fn stop(&self) {
        let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = tokio::time::timeout(Duration::from_secs(5), h.shutdown()).await;
        }
    }
}

/// The app-state key share a phone sends its new companion (the key itself is never used: every
/// app-state collection on this network is empty).
fn key_share() -> wa::Message {
    let mut key = [0u8; 32];
    rand::fill(&mut key);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    wa::Message {
        protocol_message: MessageField::some(wa::message::ProtocolMessage {
            r#type: Some(wa::message::protocol_message::Type::APP_STATE_SYNC_KEY_SHARE),
            app_state_sync_key_share: MessageField::some(wa::message::AppStateSyncKeyShare {
                keys: vec![wa::message::AppStateSyncKey {
                    key_id: MessageField::some(wa::message::AppStateSyncKeyId {
                        key_id: Some(vec![0, 0, 0, 1, 0, 0]),
                    }),
                    key_data: MessageField::some(wa::message::AppStateSyncKeyData {
                        key_data: Some(key.to_vec()),
                        fingerprint: MessageField::some(wa::message::AppStateSyncKeyFingerprint {
                            raw_id: Some(1),
                            current_index: Some(0),
                            device_indexes: vec![0],
                        }),
                        timestamp: Some(now_ms),
                    }),
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The phone's HTTP: straight to the server's media host, in process.
struct InProcessHttp(Arc<Server>);

#[whatsapp_rust::async_trait]
impl HttpClient for InProcessHttp {
    async fn execute(&self, request: HttpRequest) -> anyhow::Result<HttpResponse> {
        let rest = request
            .url
            .split_once("://")
            .map_or(request.url.as_str(), |(_, r)| r);
        let path = rest.find('/').map_or("/", |i| &rest[i..]);
        let path = path.split('?').next().unwrap_or("/");
        let method = if request.method == "POST" {
            http::Method::POST
        } else {
            http::Method::GET
        };
        let (status, body) =
            crate::server::media(&self.0, &method, path, request.body.unwrap_or_default());
        Ok(HttpResponse {
            status_code: status.as_u16(),
            body: body.to_vec(),
        })
    }
}
