//! A TCP proxy a test puts between a client and a server (the worker and Postgres, say) to make
//! the link misbehave at a chosen moment: pass bytes, delay them, stall (a blackhole: the
//! sockets stay open and nothing moves, so neither side sees an error until its own timeout),
//! or reset every connection at once. Tokio only: the fault is in the test's hands, not the
//! kernel's, so it needs no privileges and touches no other test's traffic.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does with the bytes of every connection, new and existing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward at once.
    Pass,
    /// Forward each chunk after this long (in each direction).
    Delay(Duration),
    /// Forward nothing and read nothing, keeping every socket open.
    Stall,
}

#[derive(Debug, Clone, Copy)]
struct State {
    mode: Mode,
    /// Bumped by [`Proxy::reset`]: connections opened under an older value close.
    resets: u64,
}

/// A proxy on `127.0.0.1:<port>` to one target; dropping it closes every connection.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    state: watch::Sender<State>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listen on a free port and forward every connection to `target`, passing bytes.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (state, _) = watch::channel(State {
            mode: Mode::Pass,
            resets: 0,
        });
        let accept = tokio::spawn(accept_loop(listener, target, state.clone()));
        Ok(Self {
            addr,
            state,
            accept,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Forward at once (also: resume after [`Proxy::stall`] or [`Proxy::delay`]).
    pub fn pass(&self) {
        self.set(Mode::Pass);
    }

    /// Hold each chunk `d` before forwarding it.
    pub fn delay(&self, d: Duration) {
        self.set(Mode::Delay(d));
    }

    /// Stop moving bytes, keeping every socket open (new connections are accepted and stall).
    pub fn stall(&self) {
        self.set(Mode::Stall);
    }

    /// Close every open connection now, with a reset (RST) on both sides; later connections
    /// are served in the current mode.
    pub fn reset(&self) {
        self.state.send_modify(|s| s.resets += 1);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.state.borrow().mode
    }

    fn set(&self, mode: Mode) {
        self.state.send_modify(|s| s.mode = mode);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Connections see the state's sender gone and close.
        self.reset();
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, state: watch::Sender<State>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let state = state.subscribe();
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(target).await {
                connection(client, server, state).await;
            }
        });
    }
}

/// One proxied connection, until either side closes or a reset.
async fn connection(
    mut client: TcpStream,
    mut server: TcpStream,
    mut state: watch::Receiver<State>,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let born = state.borrow().resets;
    let reset = {
        let (mut cr, mut cw) = client.split();
        let (mut sr, mut sw) = server.split();
        let mut up_state = state.clone();
        let mut down_state = state.clone();
        tokio::select! {
            _ = pipe(&mut cr, &mut sw, &mut up_state) => false,
            _ = pipe(&mut sr, &mut cw, &mut down_state) => false,
            _ = state.wait_for(|s| s.resets != born) => true,
        }
    };
    if reset {
        // Zero linger: closing sends RST, so both sides see the link cut, not a clean end.
        let _ = client.set_zero_linger();
        let _ = server.set_zero_linger();
    }
}

/// Copy `from` → `to` honouring the mode; returns when `from` ends or either side fails.
async fn pipe<R, W>(from: &mut R, to: &mut W, state: &mut watch::Receiver<State>)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // A stalled link reads nothing either, so the sender's buffers fill as on a dead path.
        if state.wait_for(|s| s.mode != Mode::Stall).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        loop {
            let mode = state.borrow().mode;
            match mode {
                Mode::Pass => break,
                Mode::Delay(d) => {
                    tokio::time::sleep(d).await;
                    break;
                }
                // Bytes already read wait for the link to pass again.
                Mode::Stall => {
                    if state.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// An echo server on a free port.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn round_trip(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
        s.write_all(b"ping").await.ok()?;
        let mut got = [0u8; 4];
        match tokio::time::timeout(within, s.read_exact(&mut got)).await {
            Ok(Ok(_)) => Some(got.to_vec()),
            _ => None,
        }
    }

    #[tokio::test]
    async fn passes_delays_stalls_resumes_and_resets() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        let second = Duration::from_secs(1);
        assert_eq!(
            round_trip(&mut s, second).await.as_deref(),
            Some(&b"ping"[..])
        );

        proxy.delay(Duration::from_millis(150));
        let t = Instant::now();
        assert!(round_trip(&mut s, second).await.is_some());
        // One delay each way.
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );

        proxy.stall();
        assert!(
            round_trip(&mut s, Duration::from_millis(300))
                .await
                .is_none()
        );
        // A connection opened while stalled stalls too.
        let mut late = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(
            round_trip(&mut late, Duration::from_millis(300))
                .await
                .is_none()
        );
        proxy.pass();
        // What waited is delivered once the link passes again, in order.
        let mut got = [0u8; 4];
        tokio::time::timeout(second, s.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got, b"ping");
        tokio::time::timeout(second, late.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            round_trip(&mut s, second).await.as_deref(),
            Some(&b"ping"[..])
        );

        proxy.reset();
        let mut rest = [0u8; 1];
        let cut = tokio::time::timeout(second, s.read(&mut rest))
            .await
            .unwrap();
        assert!(
            matches!(cut, Ok(0) | Err(_)),
            "the connection survived a reset"
        );
        // New connections are served after a reset.
        let mut again = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(round_trip(&mut again, second).await.is_some());
    }

    #[tokio::test]
    async fn a_reset_while_stalled_cuts_the_blackholed_link() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        proxy.stall();
        assert!(
            round_trip(&mut s, Duration::from_millis(200))
                .await
                .is_none()
        );
        proxy.reset();
        let mut rest = [0u8; 1];
        let cut = tokio::time::timeout(Duration::from_secs(1), s.read(&mut rest))
            .await
            .unwrap();
        assert!(matches!(cut, Ok(0) | Err(_)));
        assert_eq!(proxy.mode(), Mode::Stall);
    }
}
