//! The JSON send API of DESIGN §5: `POST /api/send/message|media|voice|status` take the bodies
//! of the four send tools and answer the same result objects, behind the same Host/Origin
//! guard, bearer auth (credentials in the URL refused), concurrency limit, body budget and
//! clock, and deadlines as `/mcp`, in the same order. Errors are an HTTP status plus `{"error":{"code","message"}}` from the one error
//! edge. With `WAZAP_OUTBOUND=off` none of these routes exist (404).
//!
//! A media or voice body is parsed with its `data_base64` borrowed from the body, which is then
//! decoded where it lies ([`media_body`]): one send in flight holds its body's buffer and
//! nothing more (DESIGN §11), not the body, a copy of the base64 and the decoded bytes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use http::{StatusCode, header};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::wire::send::{
    GetSendStatusRequest, SendMediaRequest, SendMessageRequest, SendResult, SendVoiceNoteRequest,
};
use wazap_shared::{ErrorCode, RpcError};

use crate::error::ApiError;
use crate::http::permits::BodyHold;
use crate::http::{auth, host, limit, resource};
use crate::mcp::{DEFAULT_BODY_LIMIT, SEND_BODY_LIMIT, describe_args_error};
use crate::media::{Base64, locate};
use crate::metrics;
use crate::state::{AppState, ListenerPolicy};

/// The `/api/send/*` routes with their guards (`listener`'s Host rule and permits); empty when
/// outbound sending is off.
pub(crate) fn routes(state: Arc<AppState>, listener: Arc<ListenerPolicy>) -> Router {
    if !state.outbound {
        return Router::new();
    }
    Router::new()
        .route("/api/send/message", post(message))
        .route("/api/send/media", post(media))
        .route("/api/send/voice", post(voice))
        .route("/api/send/status", post(status))
        .with_state(Arc::clone(&state))
        .layer(from_fn_with_state(
            Arc::clone(&listener),
            limit::concurrency,
        ))
        .layer(from_fn_with_state(state, auth::require_grant))
        .layer(from_fn(resource::challenge))
        .layer(from_fn_with_state(listener, host::guard))
}

async fn message(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<SendMessageRequest>(&state, req, SEND_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("send_message", state.sender.message(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

async fn media(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    let (body, _hold) = match read_json_body(&state, req, SEND_BODY_LIMIT).await {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    match media_body(body) {
        Ok((request, data)) => answer(
            metrics::api_call("send_media", state.sender.media(&grant, &request, data)).await,
        ),
        Err(e) => e.into_response(),
    }
}

async fn voice(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    let (body, _hold) = match read_json_body(&state, req, SEND_BODY_LIMIT).await {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    match voice_body(body) {
        Ok((request, data)) => answer(
            metrics::api_call(
                "send_voice_note",
                state.sender.voice(&grant, &request, data),
            )
            .await,
        ),
        Err(e) => e.into_response(),
    }
}

async fn status(
    State(state): State<Arc<AppState>>,
    Extension(grant): Extension<VerifiedGrant>,
    req: Request,
) -> Response {
    match read_json::<GetSendStatusRequest>(&state, req, DEFAULT_BODY_LIMIT).await {
        Ok((body, _hold)) => {
            answer(metrics::api_call("get_send_status", state.sender.status(&grant, &body)).await)
        }
        Err(e) => e.into_response(),
    }
}

/// 200 with the result, or the error's status and body.
fn answer(result: Result<SendResult, RpcError>) -> Response {
    match result {
        Ok(r) => (StatusCode::OK, Json(r)).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The body as `T` ([`read_json_body`], then [`parse`]).
async fn read_json<T: DeserializeOwned>(
    state: &AppState,
    req: Request,
    max: usize,
) -> Result<(T, BodyHold), ApiError> {
    let (bytes, hold) = read_json_body(state, req, max).await?;
    Ok((parse(&bytes)?, hold))
}

/// The body's bytes: `Content-Type: application/json` (else 415), at most `max` bytes (else 413)
/// read within the body budget and clock ([`limit::read_body`]). The hold on the budget comes
/// back with it, for the handler to keep until it has answered.
async fn read_json_body(
    state: &AppState,
    req: Request,
    max: usize,
) -> Result<(Vec<u8>, BodyHold), ApiError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            "Content-Type must be application/json",
        )
        .with_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let (parts, body) = req.into_parts();
    limit::read_body(&parts.headers, body, max, &state.body_budget).await
}

/// `bytes` as JSON of the right shape (else 400 naming the field, never the value).
fn parse<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let message = if e.inner().is_syntax() || e.inner().is_eof() {
            "the body is not valid JSON".to_owned()
        } else {
            describe_args_error(&e)
        };
        ApiError::new(ErrorCode::InvalidArgument, message)
    })?;
    de.end()
        .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "the body is not valid JSON"))?;
    Ok(value)
}

/// The send bodies as the wire types parse them, with `data_base64` borrowed from the body when
/// it has no escapes. Same names, fields and order as the wire types, so serde's errors read the
/// same ("expected struct SendMediaRequest …", "unknown field …, expected one of …").
mod borrowed {
    use std::borrow::Cow;

    use serde::Deserialize;
    use wazap_shared::wire::send::MediaKind;

    /// `send_media`'s body.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct SendMediaRequest<'a> {
        pub(super) chat_id: String,
        pub(super) request_id: String,
        pub(super) kind: MediaKind,
        #[serde(borrow)]
        pub(super) data_base64: Cow<'a, str>,
        pub(super) mime_type: String,
        #[serde(default)]
        pub(super) filename: Option<String>,
        #[serde(default)]
        pub(super) caption: Option<String>,
        #[serde(default)]
        pub(super) seconds: Option<u32>,
    }

    /// `send_voice_note`'s body.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct SendVoiceNoteRequest<'a> {
        pub(super) chat_id: String,
        pub(super) request_id: String,
        #[serde(borrow)]
        pub(super) data_base64: Cow<'a, str>,
        pub(super) seconds: u32,
    }
}

/// A `send_media` body: the request with its `data_base64` left empty, and where that base64
/// is — in the body, decoded there later ([`Base64::InBuffer`]), or, when the JSON string had
/// escapes (`\/`), a string of its own.
pub(crate) fn media_body(body: Vec<u8>) -> Result<(SendMediaRequest, Base64<'static>), ApiError> {
    let parsed: borrowed::SendMediaRequest<'_> = parse(&body)?;
    let place = locate(&body, parsed.data_base64);
    let request = SendMediaRequest {
        chat_id: parsed.chat_id,
        request_id: parsed.request_id,
        kind: parsed.kind,
        data_base64: String::new(),
        mime_type: parsed.mime_type,
        filename: parsed.filename,
        caption: parsed.caption,
        seconds: parsed.seconds,
    };
    Ok((request, place.into_base64(body)))
}

/// A `send_voice_note` body, as [`media_body`].
pub(crate) fn voice_body(
    body: Vec<u8>,
) -> Result<(SendVoiceNoteRequest, Base64<'static>), ApiError> {
    let parsed: borrowed::SendVoiceNoteRequest<'_> = parse(&body)?;
    let place = locate(&body, parsed.data_base64);
    let request = SendVoiceNoteRequest {
        chat_id: parsed.chat_id,
        request_id: parsed.request_id,
        data_base64: String::new(),
        seconds: parsed.seconds,
    };
    Ok((request, place.into_base64(body)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decoded(data: Base64<'_>) -> Vec<u8> {
        data.decode().expect("valid base64")
    }

    #[test]
    fn a_media_body_is_decoded_where_it_lies_unless_its_string_had_escapes() {
        let body = br#"{"chat_id":"c_1","request_id":"r-1","kind":"document","data_base64":"aGk/","mime_type":"text/plain"}"#;
        let (request, data) = media_body(body.to_vec()).expect("parses");
        assert!(matches!(data, Base64::InBuffer { .. }), "{data:?}");
        assert_eq!(decoded(data), b"hi?");
        assert_eq!(request.data_base64, "");
        assert_eq!(request.mime_type, "text/plain");

        // `\/` is `/`: the string is unescaped into one of its own, decoded alike.
        let escaped = br#"{"chat_id":"c_1","request_id":"r-1","kind":"document","data_base64":"aGk\/","mime_type":"text/plain"}"#;
        let (_, data) = media_body(escaped.to_vec()).expect("parses");
        assert!(matches!(data, Base64::String(_)), "{data:?}");
        assert_eq!(decoded(data), b"hi?");

        let voice = br#"{"chat_id":"c_1","request_id":"r-1","data_base64":"aGk=","seconds":3}"#;
        let (request, data) = voice_body(voice.to_vec()).expect("parses");
        assert!(matches!(data, Base64::InBuffer { .. }));
        assert_eq!((request.seconds, decoded(data)), (3, b"hi".to_vec()));
    }

    /// The borrowing bodies take what the wire types take and refuse the rest with the same
    /// answer.
    #[test]
    fn the_borrowing_bodies_parse_as_the_wire_types() {
        let media = json!({"chat_id": "c_1", "request_id": "r-1", "kind": "image",
            "data_base64": "aGk=", "mime_type": "image/png", "filename": "a.png",
            "caption": "x", "seconds": 4});
        let mut bodies = vec![media.to_string()];
        for (field, value) in [
            ("kind", json!("sticker")),
            ("seconds", json!("4")),
            ("seconds", json!(-1)),
            ("data_base64", json!(7)),
            ("caption", json!(null)),
            ("chat_id", json!(["c_1"])),
            ("extra", json!(1)),
        ] {
            let mut body = media.clone();
            body[field] = value;
            bodies.push(body.to_string());
        }
        for field in ["chat_id", "kind", "data_base64", "mime_type", "filename"] {
            let mut body = media.clone();
            body.as_object_mut().unwrap().remove(field);
            bodies.push(body.to_string());
        }
        bodies.extend(["", "{", "[]", "null", "{} {}"].map(str::to_owned));
        bodies.push(format!("{media} x"));
        for body in &bodies {
            let wire = parse::<SendMediaRequest>(body.as_bytes());
            let ours = media_body(body.as_bytes().to_vec());
            match (wire, ours) {
                (Ok(mut wire), Ok((ours, data))) => {
                    wire.data_base64 = String::from_utf8(decoded(data)).unwrap();
                    assert_eq!(wire.data_base64, "hi", "{body}");
                    wire.data_base64 = String::new();
                    assert_eq!(wire, ours, "{body}");
                }
                (Err(wire), Err(ours)) => {
                    assert_eq!(format!("{wire:?}"), format!("{ours:?}"), "{body}");
                }
                (wire, ours) => panic!("{body}: {:?} vs {:?}", wire.is_ok(), ours.is_ok()),
            }
        }
        let voice = json!({"chat_id": "c_1", "request_id": "r-1", "data_base64": "aGk=",
            "seconds": 3});
        let mut bodies = vec![voice.to_string()];
        for (field, value) in [("seconds", json!(null)), ("kind", json!("audio"))] {
            let mut body = voice.clone();
            body[field] = value;
            bodies.push(body.to_string());
        }
        for body in &bodies {
            let wire = parse::<SendVoiceNoteRequest>(body.as_bytes()).map(|mut w| {
                w.data_base64 = String::new();
                w
            });
            let ours = voice_body(body.as_bytes().to_vec()).map(|(ours, _)| ours);
            match (wire, ours) {
                (Ok(wire), Ok(ours)) => assert_eq!(wire, ours, "{body}"),
                (Err(wire), Err(ours)) => {
                    assert_eq!(format!("{wire:?}"), format!("{ours:?}"), "{body}");
                }
                (wire, ours) => panic!("{body}: {:?} vs {:?}", wire.is_ok(), ours.is_ok()),
            }
        }
    }
}
