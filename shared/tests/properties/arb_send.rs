//! Strategies for the search and send tools' wire types.

use proptest::option::of;
use proptest::prelude::*;
use wazap_shared::wire::search::{
    AttachmentHit, AttachmentMeta, GetAttachmentRequest, GetAttachmentRpcResponse,
    SearchAttachmentsRequest, SearchAttachmentsResponse, SearchHit, SearchMessagesRequest,
    SearchMessagesResponse,
};
use wazap_shared::wire::send::{
    GetSendStatusRequest, SendMediaRequest, SendMediaRpc, SendMessageRequest, SendResult,
    SendVoiceNoteRequest, SendVoiceRpc,
};

use super::arb::*;

pub(crate) fn search_messages_request() -> impl Strategy<Value = SearchMessagesRequest> + Clone {
    (
        of(text()),
        text(),
        of(text()),
        of(instant()),
        of(instant()),
        of(few(message_type())),
        of(any::<u32>()),
        of(text()),
    )
        .prop_map(
            |(account_id, query, chat_id, since, until, types, limit, before)| {
                SearchMessagesRequest {
                    account_id,
                    query,
                    chat_id,
                    since,
                    until,
                    types,
                    limit,
                    before,
                }
            },
        )
}

pub(crate) fn search_messages_response() -> impl Strategy<Value = SearchMessagesResponse> + Clone {
    let hit = (
        (text(), text(), of(text()), instant(), message_type()),
        (text(), any::<bool>(), sender(), of(attachment_info())),
    )
        .prop_map(
            |(
                (message_id, chat_id, chat_name, timestamp, kind),
                (snippet, from_me, sender, attachment),
            )| SearchHit {
                message_id,
                chat_id,
                chat_name,
                timestamp,
                kind,
                snippet,
                from_me,
                sender,
                attachment,
            },
        );
    (text(), any::<u32>(), few(hit)).prop_map(|(account_id, count, messages)| {
        SearchMessagesResponse {
            account_id,
            count,
            messages,
        }
    })
}

pub(crate) fn search_attachments_request() -> impl Strategy<Value = SearchAttachmentsRequest> + Clone
{
    (
        (of(text()), of(text()), of(text()), of(few(message_type()))),
        (
            of(text()),
            of(instant()),
            of(instant()),
            of(any::<u32>()),
            of(text()),
        ),
    )
        .prop_map(
            |((account_id, query, chat_id, kinds), (mime_type, since, until, limit, before))| {
                SearchAttachmentsRequest {
                    account_id,
                    query,
                    chat_id,
                    kinds,
                    mime_type,
                    since,
                    until,
                    limit,
                    before,
                }
            },
        )
}

pub(crate) fn search_attachments_response()
-> impl Strategy<Value = SearchAttachmentsResponse> + Clone {
    let hit = (
        (text(), text(), text(), message_type(), text()),
        (of(text()), of(any::<u64>()), instant(), of(text())),
    )
        .prop_map(
            |(
                (attachment_id, message_id, chat_id, kind, mime_type),
                (filename, size, timestamp, caption),
            )| AttachmentHit {
                attachment_id,
                message_id,
                chat_id,
                kind,
                mime_type,
                filename,
                size,
                timestamp,
                caption,
            },
        );
    (text(), any::<u32>(), few(hit)).prop_map(|(account_id, count, attachments)| {
        SearchAttachmentsResponse {
            account_id,
            count,
            attachments,
        }
    })
}

pub(crate) fn get_attachment_request() -> impl Strategy<Value = GetAttachmentRequest> + Clone {
    (of(text()), text(), of(any::<u64>())).prop_map(|(account_id, attachment_id, max_bytes)| {
        GetAttachmentRequest {
            account_id,
            attachment_id,
            max_bytes,
        }
    })
}

pub(crate) fn get_attachment_response() -> impl Strategy<Value = GetAttachmentRpcResponse> + Clone {
    let meta = (
        (text(), text(), text(), text(), message_type()),
        (text(), of(text()), any::<u64>(), instant()),
    )
        .prop_map(
            |(
                (account_id, attachment_id, message_id, chat_id, kind),
                (mime_type, filename, size, timestamp),
            )| AttachmentMeta {
                account_id,
                attachment_id,
                message_id,
                chat_id,
                kind,
                mime_type,
                filename,
                size,
                timestamp,
            },
        );
    (meta, media_ref()).prop_map(|(meta, media)| GetAttachmentRpcResponse { meta, media })
}

pub(crate) fn send_message_request() -> impl Strategy<Value = SendMessageRequest> + Clone {
    (text(), text(), text()).prop_map(|(chat_id, request_id, text)| SendMessageRequest {
        chat_id,
        request_id,
        text,
    })
}

pub(crate) fn send_media_request() -> impl Strategy<Value = SendMediaRequest> + Clone {
    (
        (text(), text(), media_kind(), text()),
        (text(), of(text()), of(text()), of(any::<u32>())),
    )
        .prop_map(
            |(
                (chat_id, request_id, kind, data_base64),
                (mime_type, filename, caption, seconds),
            )| {
                SendMediaRequest {
                    chat_id,
                    request_id,
                    kind,
                    data_base64,
                    mime_type,
                    filename,
                    caption,
                    seconds,
                }
            },
        )
}

pub(crate) fn send_voice_note_request() -> impl Strategy<Value = SendVoiceNoteRequest> + Clone {
    (text(), text(), text(), any::<u32>()).prop_map(
        |(chat_id, request_id, data_base64, seconds)| SendVoiceNoteRequest {
            chat_id,
            request_id,
            data_base64,
            seconds,
        },
    )
}

pub(crate) fn get_send_status_request() -> impl Strategy<Value = GetSendStatusRequest> + Clone {
    text().prop_map(|request_id| GetSendStatusRequest { request_id })
}

pub(crate) fn send_media_rpc() -> impl Strategy<Value = SendMediaRpc> + Clone {
    (
        (text(), text(), media_kind(), media_ref()),
        (text(), of(text()), of(text()), of(any::<u32>())),
    )
        .prop_map(
            |((chat_id, request_id, kind, media), (mime_type, filename, caption, seconds))| {
                SendMediaRpc {
                    chat_id,
                    request_id,
                    kind,
                    media,
                    mime_type,
                    filename,
                    caption,
                    seconds,
                }
            },
        )
}

pub(crate) fn send_voice_rpc() -> impl Strategy<Value = SendVoiceRpc> + Clone {
    (text(), text(), media_ref(), any::<u32>()).prop_map(|(chat_id, request_id, media, seconds)| {
        SendVoiceRpc {
            chat_id,
            request_id,
            media,
            seconds,
        }
    })
}

pub(crate) fn send_result() -> impl Strategy<Value = SendResult> + Clone {
    (
        text(),
        text(),
        send_state(),
        of(text()),
        any::<bool>(),
        of(instant()),
    )
        .prop_map(
            |(request_id, chat_id, state, message_id, duplicate, accepted_at)| SendResult {
                request_id,
                chat_id,
                state,
                message_id,
                duplicate,
                accepted_at,
            },
        )
}
