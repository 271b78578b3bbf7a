//! The fake worker's send ops: `send_check` passes (but for one chat); it records each RPC body, answers `accepted` (a saved outcome,
//! `duplicate: true`, for `get_send_status`), answers the error code named by a `request_id` of
//! the form `err-<code>`, and holds calls whose `request_id` is `hold` until released.

use chrono::Utc;
use serde_json::{Value, json};
use wazap_shared::bus::{Reply, encode_reply};
use wazap_shared::subjects::op;
use wazap_shared::wire::send::{SendCheckResponse, SendResult, SendState};
use wazap_shared::{ErrorCode, RpcError};

use crate::support::FakeState;

/// The fake worker's `send_check`: a media send may go ahead, except to chat `c_refused`
/// (`send_not_permitted`). Not recorded among the sends.
pub(crate) fn check(payload: &[u8]) -> bytes::Bytes {
    let body: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    if body["chat_id"] == "c_refused" {
        return encode_reply::<()>(&Reply::Error(RpcError::new(
            ErrorCode::SendNotPermitted,
            "this connection may not send to this chat",
        )));
    }
    encode_reply(&Reply::Ok(SendCheckResponse {}))
}

/// The fake worker's answer to a send op.
pub(crate) async fn answer(op_name: &str, payload: &[u8], st: &FakeState) -> bytes::Bytes {
    let body: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    st.sends
        .lock()
        .unwrap()
        .push((op_name.to_owned(), body.clone()));
    let request_id = body["request_id"].as_str().unwrap_or_default().to_owned();
    if request_id == "hold" {
        let released = st.release.notified();
        st.held.send_modify(|h| *h += 1);
        released.await;
    }
    if let Some(code) = request_id.strip_prefix("err-") {
        let code: ErrorCode = serde_json::from_value(json!(code)).expect("a known error code");
        return encode_reply::<()>(&Reply::Error(RpcError::new(code, "refused by the worker")));
    }
    let chat_id = body["chat_id"].as_str().unwrap_or("c_known").to_owned();
    encode_reply(&Reply::Ok(SendResult {
        request_id,
        chat_id,
        state: SendState::Accepted,
        message_id: Some("m_sent1".into()),
        duplicate: op_name == op::GET_SEND_STATUS,
        accepted_at: Some(Utc::now()),
    }))
}

/// A gateway (with `env`), a fake worker and an MCP client holding a valid token.
pub(crate) async fn setup(
    env: &[(&str, &str)],
) -> (
    crate::support::FakeWorker,
    crate::support::Gateway,
    crate::support::Mcp,
    String,
) {
    use crate::support::*;
    let prefix = prefix();
    let signer = Signer::generate();
    let worker = FakeWorker::start(&prefix, vec![signer.jwk.clone()]).await;
    let gw = Gateway::start(&prefix, env).await;
    gw.wait_ready().await;
    let token = signer.token();
    let mcp = Mcp::new(gw.mcp_url(), Some(token.clone()));
    (worker, gw, mcp, prefix)
}

/// A real 16×16 JPEG.
pub(crate) fn jpeg() -> Vec<u8> {
    let mut out = Vec::new();
    let pixels: Vec<u8> = (0..16 * 16 * 3).map(|i| (i * 7 % 256) as u8).collect();
    jpeg_encoder::Encoder::new(&mut out, 85)
        .encode(&pixels, 16, 16, jpeg_encoder::ColorType::Rgb)
        .expect("encode");
    out
}

/// An Ogg/Opus stream's first pages (`OpusHead`, `OpusTags`), as an encoder writes them.
pub(crate) fn ogg_opus() -> Vec<u8> {
    wazap_gateway::media_fixtures::ogg_opus()
}

/// Standard padded base64.
pub(crate) fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes of object `name` in `<prefix>-media`, read back from JetStream.
pub(crate) async fn stored_object(prefix: &str, name: &str) -> Vec<u8> {
    use tokio::io::AsyncReadExt as _;
    let client = async_nats::connect(crate::support::nats_url())
        .await
        .expect("NATS");
    let js = async_nats::jetstream::new(client);
    let bucket = wazap_shared::subjects::Subjects::new(prefix).media_bucket();
    let store = js.get_object_store(&bucket).await.expect("media bucket");
    let mut object = store.get(name).await.expect("object");
    let mut bytes = Vec::new();
    object.read_to_end(&mut bytes).await.expect("read object");
    bytes
}

/// Lowercase hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
