//! The media host: clients upload encrypted media (`POST /mms/<kind>/<token>`) and download it by
//! its direct path (`GET /v/...`). Their `https://<host>` URLs reach this port through the HTTP
//! client seam (the worker's `NetworkHttp`, the phones' in-process client).

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::Server;

/// Serve HTTP/1.1 on one connection.
pub(crate) async fn serve(server: Arc<Server>, stream: TcpStream) -> anyhow::Result<()> {
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let server = server.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let (status, bytes) = handle(&server, &parts.method, parts.uri.path(), body);
            Ok::<_, std::convert::Infallible>(
                Response::builder()
                    .status(status)
                    .body(Full::new(bytes))
                    .unwrap_or_default(),
            )
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), svc)
        .await?;
    Ok(())
}

/// One media request: the answer's status and body.
pub(crate) fn handle(
    server: &Server,
    method: &Method,
    path: &str,
    body: Bytes,
) -> (StatusCode, Bytes) {
    if *method == Method::POST
        && let Some(rest) = path.strip_prefix("/mms/")
    {
        let token = rest.rsplit('/').next().unwrap_or_default();
        let direct_path = format!("/v/t62/{token}");
        server
            .state()
            .media
            .insert(direct_path.clone(), body.to_vec());
        let json = format!(
            "{{\"url\":\"https://{}{direct_path}\",\"direct_path\":\"{direct_path}\"}}",
            server.addr()
        );
        return (StatusCode::OK, Bytes::from(json));
    }
    if *method == Method::GET
        && let Some(bytes) = server.state().media.get(path)
    {
        return (StatusCode::OK, Bytes::from(bytes.clone()));
    }
    (StatusCode::NOT_FOUND, Bytes::new())
}
