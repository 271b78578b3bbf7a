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
//! What it changes: the read buffer is capped at [`READ_BUF_MAX`] (hyper's minimum, so a
//! request head larger than that is answered 431), and a request's head and body are copied
//! out of hyper's read buffer before the router sees them, so a parked request does not pin
//! that 8 KiB buffer while hyper reserves a fresh one for the connection.

use std::pin::pin;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
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
    builder.keep_alive(true).max_buf_size(READ_BUF_MAX);
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
            let mut req = detach(req);
            req.extensions_mut().insert(ConnectInfo(peer));
            app.clone().call(req)
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

/// Errors about one connection that went away before it was accepted: nothing to wait for.
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

/// `req` with its URI, header values and body data in allocations of their own. hyper hands
/// them out as slices of the connection's read buffer, so a request that stays parked would
/// otherwise keep that whole buffer alive next to the one hyper reserves for the next read.
fn detach(req: Request<Incoming>) -> Request<Body> {
    let (mut parts, body) = req.into_parts();
    parts.uri = detach_uri(&parts.uri);
    parts.headers = detach_headers(&parts.headers);
    let body = body.map_frame(|frame| frame.map_data(|data| Bytes::copy_from_slice(&data)));
    Request::from_parts(parts, Body::new(body))
}

/// A copy of `uri` that shares nothing with the read buffer.
fn detach_uri(uri: &Uri) -> Uri {
    // Re-parsing what hyper parsed cannot fail; keep the original if it somehow does.
    uri.to_string().parse().unwrap_or_else(|_| uri.clone())
}

/// A copy of `headers` whose values share nothing with the read buffer (names already do not:
/// hyper copies or interns them).
fn detach_headers(headers: &HeaderMap) -> HeaderMap {
    let mut copy = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let mut owned = HeaderValue::from_maybe_shared(Bytes::copy_from_slice(value.as_bytes()))
            .unwrap_or_else(|_| value.clone());
        owned.set_sensitive(value.is_sensitive());
        copy.append(name.clone(), owned);
    }
    copy
}

#[cfg(test)]
mod tests;
