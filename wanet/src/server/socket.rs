//! One TCP connection: the chat socket (`GET /ws/chat`, a websocket carrying Noise frames) or
//! plain HTTP (the media host and `sw.js`), told apart by the request line.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use futures::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_websockets::{Message, ServerBuilder};
use whatsapp_rust::wacore_binary::Node;

use super::noise::{Responder, Step};
use super::{Server, session};

/// What the session asks of its socket.
#[derive(Debug)]
pub(crate) enum Out {
    /// Send this node.
    Node(Node),
    /// Close the socket now (a drop, as a network fault would).
    Drop,
}

/// Serve one accepted connection.
pub(crate) async fn serve(server: Arc<Server>, stream: TcpStream) {
    let mut head = [0u8; 16];
    let chat = match stream.peek(&mut head).await {
        Ok(n) => head[..n].starts_with(b"GET /ws/chat"),
        Err(_) => return,
    };
    let result = if chat {
        chat_socket(server, stream).await
    } else {
        super::http::serve(server, stream).await
    };
    if let Err(e) = result {
        tracing::debug!(error = %format!("{e:#}"), "wanet connection ended");
    }
}

/// The chat socket: the handshake, then nodes both ways until either side closes.
async fn chat_socket(server: Arc<Server>, stream: TcpStream) -> anyhow::Result<()> {
    let (_, mut ws) = ServerBuilder::new()
        .accept(stream)
        .await
        .context("websocket upgrade")?;
    let mut responder = Responder::new(&server.keys);
    let (mut framed, payload) = loop {
        let msg = ws
            .next()
            .await
            .context("closed during the handshake")?
            .context("read")?;
        if !msg.is_binary() {
            continue;
        }
        if server.state().stalled {
            // A stalled server takes the client's hello and never answers.
            continue;
        }
        match responder.feed(msg.as_payload())? {
            Step::More => {}
            Step::Reply(bytes) => {
                server.hellos.fetch_add(1, Ordering::Relaxed);
                ws.send(Message::binary(bytes)).await?;
            }
            Step::Done(framed, payload) => {
                server.handshakes.fetch_add(1, Ordering::Relaxed);
                break (framed, payload);
            }
        }
    };
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Out>();
    let (in_tx, in_rx) = mpsc::unbounded_channel::<Node>();
    let session = tokio::spawn(session::run(server.clone(), *payload, out_tx, in_rx));
    let result = async {
        loop {
            tokio::select! {
                out = out_rx.recv() => match out {
                    Some(Out::Node(node)) => {
                        let bytes = framed.encode(&node)?;
                        ws.send(Message::binary(bytes)).await?;
                    }
                    Some(Out::Drop) | None => return Ok(()),
                },
                msg = ws.next() => {
                    let Some(msg) = msg else { return Ok(()) };
                    let msg = msg?;
                    if msg.is_close() {
                        return Ok(());
                    }
                    if !msg.is_binary() {
                        continue;
                    }
                    framed.feed(msg.as_payload());
                    while let Some(node) = framed.next_node()? {
                        if in_tx.send(node).is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
    .await;
    drop(in_tx);
    let _ = session.await;
    result
}
