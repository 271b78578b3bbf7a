//! A TCP proxy a test puts between a client and a server (the worker and Postgres, say) to make
//! the link misbehave at a chosen moment: pass bytes, delay them, stall (a blackhole: the
//! sockets stay open and nothing moves, so neither side sees an error until its own timeout),
//! or reset every connection at once. Tokio only: the fault is in the test's hands, not the
//! kernel's, so it needs no privileges and touches no other test's traffic.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
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

/// A one-shot cut armed by [`Proxy::lose_reply_to`] or [`Proxy::drop_request`]: the first
/// chunk from a client that holds `needle` (within one read: a test's needle is short) ends
/// its connection.
#[derive(Debug)]
struct Cut {
    needle: Vec<u8>,
    /// The chunk still reaches the server (only the answer is lost).
    deliver: bool,
    /// Every connection stalls from then on ([`Proxy::stall`]).
    then_stall: bool,
}

/// The armed cut, shared with every connection; `None` once it fired.
type Armed = Arc<Mutex<Option<Cut>>>;

/// A proxy on `127.0.0.1:<port>` to one target; dropping it closes every connection.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    state: watch::Sender<State>,
    armed: Armed,
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
        let armed = Armed::default();
        let accept = tokio::spawn(accept_loop(listener, target, state.clone(), armed.clone()));
        Ok(Self {
            addr,
            state,
            armed,
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

    /// Lose the answer to the next request that carries `needle` (a lost COMMIT reply, say):
    /// the request reaches the server, which runs it, but its connection is reset on the
    /// client's side at once and whatever the server answers is read and thrown away.
    pub fn lose_reply_to(&self, needle: &[u8]) {
        self.arm(needle, true, false);
    }

    /// Drop the next request that carries `needle` and reset its connection: the server never
    /// sees it, the client sees the link cut.
    pub fn drop_request(&self, needle: &[u8]) {
        self.arm(needle, false, false);
    }

    /// [`Proxy::drop_request`], and the link stalls at the same moment, so the client's next
    /// attempt (on a new connection too) hangs until [`Proxy::pass`] or [`Proxy::reset`].
    pub fn drop_request_then_stall(&self, needle: &[u8]) {
        self.arm(needle, false, true);
    }

    /// Whether the armed cut has fired.
    pub fn cut_fired(&self) -> bool {
        self.armed.lock().unwrap().is_none()
    }

    fn arm(&self, needle: &[u8], deliver: bool, then_stall: bool) {
        *self.armed.lock().unwrap() = Some(Cut {
            needle: needle.to_vec(),
            deliver,
            then_stall,
        });
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

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    state: watch::Sender<State>,
    armed: Armed,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (state, armed) = (state.clone(), armed.clone());
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(target).await {
                connection(client, server, state, armed).await;
            }
        });
    }
}

/// How a proxied connection ended.
enum End {
    /// Either side closed or failed.
    Closed,
    /// [`Proxy::reset`].
    Reset,
    /// An armed cut fired.
    Cut,
}

/// One proxied connection, until either side closes, a reset or a cut.
async fn connection(
    mut client: TcpStream,
    mut server: TcpStream,
    control: watch::Sender<State>,
    armed: Armed,
) {
    let mut state = control.subscribe();
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let born = state.borrow().resets;
    let end = {
        let (mut cr, mut cw) = client.split();
        let (mut sr, mut sw) = server.split();
        let mut up_state = state.clone();
        let mut down_state = state.clone();
        tokio::select! {
            end = pipe(&mut cr, &mut sw, &mut up_state, Some((&armed, &control))) => end,
            end = pipe(&mut sr, &mut cw, &mut down_state, None) => end,
            _ = state.wait_for(|s| s.resets != born) => End::Reset,
        }
    };
    // Zero linger: closing sends RST, so a side sees the link cut, not a clean end.
    match end {
        End::Closed => {}
        End::Reset => {
            let _ = client.set_zero_linger();
            let _ = server.set_zero_linger();
        }
        End::Cut => {
            let _ = client.set_zero_linger();
            drop(client);
            // The server runs what it was given and answers into the void; then it sees a
            // clean end, as when its client went away.
            let mut void = tokio::io::sink();
            let drain = tokio::io::copy(&mut server, &mut void);
            let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
        }
    }
}

/// Copy `from` → `to` honouring the mode, and `armed` when given; returns when `from` ends,
/// either side fails or the cut fires.
async fn pipe<R, W>(
    from: &mut R,
    to: &mut W,
    state: &mut watch::Receiver<State>,
    armed: Option<(&Armed, &watch::Sender<State>)>,
) -> End
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // A stalled link reads nothing either, so the sender's buffers fill as on a dead path.
        if state.wait_for(|s| s.mode != Mode::Stall).await.is_err() {
            return End::Closed;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return End::Closed;
            }
            Ok(n) => n,
        };
        if let Some((cut, control)) =
            armed.and_then(|(a, control)| Some((take_if_holds(a, &buf[..n])?, control)))
        {
            if cut.then_stall {
                control.send_modify(|s| s.mode = Mode::Stall);
            }
            if cut.deliver {
                let _ = to.write_all(&buf[..n]).await;
            }
            return End::Cut;
        }
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
                        return End::Closed;
                    }
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return End::Closed;
        }
    }
}

/// The armed cut, disarmed, when `chunk` holds its needle.
fn take_if_holds(armed: &Armed, chunk: &[u8]) -> Option<Cut> {
    let mut armed = armed.lock().unwrap();
    let needle = &armed.as_ref()?.needle;
    if chunk.windows(needle.len()).any(|w| w == needle.as_slice()) {
        armed.take()
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
