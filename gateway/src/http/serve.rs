//! The accept loop of both listeners: HTTP/1.1 straight on hyper instead of `axum::serve`,
//! because a parked `wait_for_messages` holds its connection for up to a minute and
//! `axum::serve` has no knob for hyper's per-connection buffers (DESIGN §11: 1,000 parked waits
//! within the gateway's RSS budget).
//!
//! What it keeps from `axum::serve`: `ConnectInfo<SocketAddr>` in every request's extensions
//! (auth's loopback check reads it), keep-alive, no `TCP_NODELAY` (axum does not set it
//! either), accept errors logged and retried rather than fatal, and graceful shutdown: on
//! cancellation the listener closes, idle connections close, and in-flight requests finish
//! (bounded by [`DRAIN_LIMIT`]).
//!
//! What it changes: HTTP/1.1 only, without hyper-util's protocol-sniffing `auto` builder and
//! axum's per-connection shutdown channels, and the read buffer capped at [`READ_BUF_MAX`]
//! (hyper's minimum; a request head larger than that is answered 431). Measured with
//! `wazap-bench --only wait`: 1,000 parked waits 42.7 → 38.7 MiB RSS. Copying requests out of
//! hyper's read buffer (so a parked request would not pin it) was measured too and saved nothing;
//! the cap itself does not change that figure (it bounds what one connection can make us hold).
//!
//! And a response given before its request's body was read to the end (a 401, a refusal by
//! Host, a `busy`, a body over its limit) says `Connection: close`: hyper closes such a
//! connection anyway, and a client that was not told would send its next request into it (the
//! Python SDK's httpx did, on the 401 every OAuth flow starts with).
//!
//! And it runs hyper with a timer, so a request head must arrive within [`HEADER_READ_TIMEOUT`]
//! (else the connection is closed without an answer); the same clock closes a keep-alive
//! connection idle that long. Bodies have their own clock, after auth (`http/limit`).

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http::{HeaderValue, Request, header};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service as _;

/// How long in-flight requests may run on after shutdown begins (the longest deadline, a send,
/// is 60 s).
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(65);

/// The most a connection's read buffer may hold: hyper's minimum. A request head (Bearer token
/// and ordinary headers are 1–2 KiB) must fit; a larger one gets 431.
pub(crate) const READ_BUF_MAX: usize = 8192;

/// How long a request head may take to arrive, counted from the connection's first byte wait
/// (so also how long a keep-alive connection may sit idle). A client's head is one packet of
/// 1–2 KiB; 10 s is generous on a slow mobile link and bounds how long a client that opens a
/// connection and sends nothing (or half a head) holds it.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause after an accept error that is not about one connection (EMFILE, ENOMEM), so a
/// full descriptor table does not spin the loop; the same as `axum::serve`.
const ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Serve `app` on `listener` until `shutdown`, then stop accepting and drain (bounded by
/// [`DRAIN_LIMIT`]).
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .max_buf_size(READ_BUF_MAX)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::error!(%error, "accepting a connection failed; retrying");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let app = app.clone();
        let service = service_fn(move |req: Request<Incoming>| {
            let read = Arc::new(AtomicBool::new(req.body().is_end_stream()));
            let mut req = req.map(|inner| {
                Body::new(Tracked {
                    inner,
                    read: Arc::clone(&read),
                })
            });
            req.extensions_mut().insert(ConnectInfo(peer));
            let call = app.clone().call(req);
            async move {
                let mut response = call.await?;
                if !read.load(Ordering::Relaxed) {
                    (response.headers_mut())
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let mut conn = pin!(conn);
            let served = tokio::select! {
                served = conn.as_mut() => served,
                () = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(error) = served {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    connections.close();
    tokio::select! {
        () = connections.wait() => {}
        () = tokio::time::sleep(DRAIN_LIMIT) => {
            tracing::warn!(
                connections = connections.len(),
                "in-flight requests outlived the drain limit; stopping anyway"
            );
        }
    }
    Ok(())
}

/// A request body that notes when it has been read to the end.
struct Tracked {
    inner: Incoming,
    read: Arc<AtomicBool>,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Errors about one connection that went away before it was accepted: nothing to wait for.
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests;
