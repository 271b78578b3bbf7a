//! Strategies for the read tools' and `wait_for_messages`' wire types.

use proptest::option::of;
use proptest::prelude::*;
use wazap_shared::wire::read::{
    ChatSummary, ContactSummary, GroupSummary, ListChatsRequest, ListChatsResponse, OlderHistory,
    Preview, ReadMessagesRequest, ReadMessagesResponse, SearchContactsRequest,
    SearchContactsResponse, SearchGroupsRequest, SearchGroupsResponse, UnconfirmedSend,
};
use wazap_shared::wire::wait::{WaitForMessagesRequest, WaitForMessagesResponse, WaitPollResponse};

use super::arb::*;

pub(crate) fn list_chats_request() -> impl Strategy<Value = ListChatsRequest> + Clone {
    (
        of(text()),
        of(text()),
        of(chat_kind()),
        of(any::<u32>()),
        of(text()),
    )
        .prop_map(
            |(account_id, query, kind, limit, before)| ListChatsRequest {
                account_id,
                query,
                kind,
                limit,
                before,
            },
        )
}

pub(crate) fn list_chats_response() -> impl Strategy<Value = ListChatsResponse> + Clone {
    let chat = (
        text(),
        text(),
        chat_kind(),
        of(instant()),
        any::<u32>(),
        any::<bool>(),
    )
        .prop_map(
            |(chat_id, name, kind, last_message_at, unread_count, can_send)| ChatSummary {
                chat_id,
                name,
                kind,
                last_message_at,
                unread_count,
                can_send,
            },
        );
    (text(), few(chat)).prop_map(|(account_id, chats)| ListChatsResponse { account_id, chats })
}

pub(crate) fn search_contacts_request() -> impl Strategy<Value = SearchContactsRequest> + Clone {
    (of(text()), text(), of(any::<u32>())).prop_map(|(account_id, query, limit)| {
        SearchContactsRequest {
            account_id,
            query,
            limit,
        }
    })
}

pub(crate) fn search_contacts_response() -> impl Strategy<Value = SearchContactsResponse> + Clone {
    let contact = (text(), text(), of(text())).prop_map(|(chat_id, name, phone)| ContactSummary {
        chat_id,
        name,
        phone,
    });
    (text(), few(contact)).prop_map(|(account_id, contacts)| SearchContactsResponse {
        account_id,
        contacts,
    })
}

pub(crate) fn search_groups_request() -> impl Strategy<Value = SearchGroupsRequest> + Clone {
    (of(text()), text(), of(any::<u32>())).prop_map(|(account_id, query, limit)| {
        SearchGroupsRequest {
            account_id,
            query,
            limit,
        }
    })
}

pub(crate) fn search_groups_response() -> impl Strategy<Value = SearchGroupsResponse> + Clone {
    let group = (text(), text(), any::<u32>()).prop_map(|(chat_id, name, participant_count)| {
        GroupSummary {
            chat_id,
            name,
            participant_count,
        }
    });
    (text(), few(group))
        .prop_map(|(account_id, groups)| SearchGroupsResponse { account_id, groups })
}

pub(crate) fn read_messages_request() -> impl Strategy<Value = ReadMessagesRequest> + Clone {
    (
        of(text()),
        text(),
        of(any::<u32>()),
        of(text()),
        of(few(message_type())),
        of(any::<bool>()),
        of(any::<u32>()),
    )
        .prop_map(
            |(account_id, chat_id, limit, before, types, include_previews, hours)| {
                ReadMessagesRequest {
                    account_id,
                    chat_id,
                    limit,
                    before,
                    types,
                    include_previews,
                    hours,
                }
            },
        )
}

pub(crate) fn read_messages_response() -> impl Strategy<Value = ReadMessagesResponse> + Clone {
    let unconfirmed =
        (text(), text(), instant(), text()).prop_map(|(draft_id, text, handed_at, state)| {
            UnconfirmedSend {
                draft_id,
                text,
                handed_at,
                state,
            }
        });
    let older = (any::<bool>(), any::<u32>()).prop_map(|(asked_phone, received)| OlderHistory {
        asked_phone,
        received,
    });
    let preview =
        (text(), text(), text()).prop_map(|(message_id, mime_type, data_base64)| Preview {
            message_id,
            mime_type,
            data_base64,
        });
    (
        (text(), text(), any::<u32>(), few(message()), sync_state()),
        (any::<u32>(), few(text()), few(unconfirmed), of(older)),
        (
            of(any::<u32>()),
            of(few(message_type())),
            of(any::<u32>()),
            few(preview),
        ),
    )
        .prop_map(
            |(
                (account_id, chat_id, count, messages, sync),
                (preview_count, notes, unconfirmed_sends, older),
                (omitted, types, hours, previews),
            )| ReadMessagesResponse {
                account_id,
                chat_id,
                count,
                messages,
                sync,
                preview_count,
                notes,
                unconfirmed_sends,
                older,
                omitted,
                types,
                hours,
                previews,
            },
        )
}

pub(crate) fn wait_request() -> impl Strategy<Value = WaitForMessagesRequest> + Clone {
    (
        of(text()),
        of(text()),
        of(text()),
        of(any::<bool>()),
        of(any::<u32>()),
    )
        .prop_map(
            |(cursor, chat_id, account_id, addressed_to_me, timeout_seconds)| {
                WaitForMessagesRequest {
                    cursor,
                    chat_id,
                    account_id,
                    addressed_to_me,
                    timeout_seconds,
                }
            },
        )
}

pub(crate) fn wait_response() -> impl Strategy<Value = WaitForMessagesResponse> + Clone {
    (
        text(),
        any::<u32>(),
        few(message()),
        text(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(account_id, count, messages, cursor, timed_out, cursor_reset)| {
                WaitForMessagesResponse {
                    account_id,
                    count,
                    messages,
                    cursor,
                    timed_out,
                    cursor_reset,
                }
            },
        )
}

pub(crate) fn wait_poll_response() -> impl Strategy<Value = WaitPollResponse> + Clone {
    (text(), few(message()), text(), any::<i64>(), any::<bool>()).prop_map(
        |(account_id, messages, cursor, position, cursor_reset)| WaitPollResponse {
            account_id,
            messages,
            cursor,
            position,
            cursor_reset,
        },
    )
}
