//! The WhatsApp server of the test network: one loopback port for the chat socket and the
//! media host. It keeps accounts (phone number + LID), their devices and prekeys, routes stanzas
//! between devices, queues them for devices that are away, and injects the faults a test arms.

mod groups;
mod http;
mod iq;
mod noise;
mod pair;
mod relay;
mod session;
mod socket;
pub(crate) mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::noise::ServerKeys;
use self::state::State;

pub(crate) use self::http::handle as media;
pub(crate) use self::pair::{enter_code, scan};
pub(crate) use self::session::stream_error_conflict;

/// The server: its keys, its state and where it listens.
pub(crate) struct Server {
    keys: ServerKeys,
    /// Handshakes begun (a client hello answered) and completed (a login payload read).
    pub(crate) hellos: std::sync::atomic::AtomicU64,
    pub(crate) handshakes: std::sync::atomic::AtomicU64,
    state: Mutex<State>,
    addr: SocketAddr,
}

impl Server {
    /// Bind `addr` and serve until `stop` is cancelled.
    pub(crate) async fn start(
        addr: SocketAddr,
        stop: CancellationToken,
    ) -> anyhow::Result<Arc<Self>> {
        let listener = TcpListener::bind(addr).await?;
        let server = Arc::new(Self {
            keys: ServerKeys::generate(),
            hellos: Default::default(),
            handshakes: Default::default(),
            state: Mutex::new(State::default()),
            addr: listener.local_addr()?,
        });
        let accept = server.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    conn = listener.accept() => match conn {
                        Ok((stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            tokio::spawn(socket::serve(accept.clone(), stream));
                        }
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                    },
                }
            }
        });
        Ok(server)
    }

    /// Add the account `number` with its phone (device 0); its LID is derived from the number.
    pub(crate) fn register(&self, number: &str, name: &str) -> anyhow::Result<()> {
        let mut st = self.state();
        anyhow::ensure!(!st.accounts.contains_key(number), "the account exists");
        let mut account = state::Account {
            lid: format!("9{number}"),
            push_name: name.to_owned(),
            next_device: 1,
            ..Default::default()
        };
        account.devices.insert(0, state::Device::default());
        st.accounts.insert(number.to_owned(), account);
        Ok(())
    }

    /// Wait until the device `(number, device)` has uploaded its prekeys (others can then start
    /// sessions with it), at most `wait`.
    pub(crate) async fn keys_uploaded(
        &self,
        number: &str,
        device: u16,
        wait: std::time::Duration,
    ) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let has = self
                .state()
                .accounts
                .get(number)
                .and_then(|a| a.devices.get(&device))
                .is_some_and(|d| d.keys.is_some());
            if has {
                return Ok(());
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the device did not upload its prekeys in time"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// The message ids `(number, device)` has not acknowledged.
    pub(crate) fn unacknowledged(&self, number: &str, device: u16) -> Vec<String> {
        let addr = state::Addr {
            user: number.to_owned(),
            device,
        };
        self.state()
            .pending
            .get(&addr)
            .map(|q| {
                q.iter()
                    .filter(|s| s.class == "message")
                    .map(|s| s.id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The companion device ids of `number`.
    pub(crate) fn companions(&self, number: &str) -> Vec<u16> {
        self.state()
            .accounts
            .get(number)
            .map(|a| a.devices.keys().copied().filter(|d| *d != 0).collect())
            .unwrap_or_default()
    }

    /// Say `node` to the device's socket (if it is up), then close it.
    pub(crate) fn end_socket(
        &self,
        number: &str,
        device: u16,
        last: Option<whatsapp_rust::wacore_binary::Node>,
    ) -> bool {
        let addr = state::Addr {
            user: number.to_owned(),
            device,
        };
        let Some(out) = self.state().online.remove(&addr) else {
            return false;
        };
        if let Some(node) = last {
            let _ = out.send(socket::Out::Node(node));
        }
        let _ = out.send(socket::Out::Drop);
        true
    }

    /// The phone removes its companion `device`: the device is told it was removed (if up) and
    /// refused from then on.
    pub(crate) fn unlink(&self, number: &str, device: u16) {
        {
            let mut st = self.state();
            if let Some(a) = st.accounts.get_mut(number) {
                a.devices.remove(&device);
            }
            st.pending.remove(&state::Addr {
                user: number.to_owned(),
                device,
            });
        }
        self.end_socket(
            number,
            device,
            Some(session::stream_error_conflict("device_removed")),
        );
    }

    /// Deliver a raw stanza to `(number, device)`.
    pub(crate) fn inject(
        &self,
        number: &str,
        device: u16,
        node: whatsapp_rust::wacore_binary::Node,
    ) {
        let addr = state::Addr {
            user: number.to_owned(),
            device,
        };
        let mut st = self.state();
        match crate::node::attr(&node, "id") {
            Some(id) => {
                let class: &'static str = match node.tag.as_ref() {
                    "message" => "message",
                    "receipt" => "receipt",
                    _ => "notification",
                };
                st.deliver(&addr, id, class, node);
            }
            None => {
                if let Some(out) = st.online.get(&addr) {
                    let _ = out.send(socket::Out::Node(node));
                }
            }
        }
    }

    /// Arm a fault for the next message of `(number, device)`.
    pub(crate) fn arm(&self, number: &str, device: u16, fault: crate::Fault) {
        let addr = state::Addr {
            user: number.to_owned(),
            device,
        };
        self.state().faults.insert(addr, fault);
    }

    /// Whether `(number, device)` is logged in.
    pub(crate) fn is_online(&self, number: &str, device: u16) -> bool {
        self.state().online.contains_key(&state::Addr {
            user: number.to_owned(),
            device,
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The state (poison-tolerant: a panicking test must not wedge the others).
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
