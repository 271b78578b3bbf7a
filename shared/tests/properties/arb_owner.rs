//! Strategies for the owner API's wire types.

use proptest::option::of;
use proptest::prelude::*;
use wazap_shared::wire::owner::{
    AccountActionRequest, AccountView, ChatPage, ChatsRequest, ConnectionList,
    CreateConnectionRequest, Empty, IssuedConnection, LoginRequest, OwnerAnswer, OwnerCall,
    OwnerChat, OwnerConnection, Policy, ReadScopeRequest, RefusedSend, RevokeRequest,
    RotateRequest, SendPermissionRequest, SendRow, SendsPage, SendsRequest, SessionInfo,
    SetPolicyRequest,
};

use super::arb::*;

/// An owner request around `body`.
pub(crate) fn owner_call<T: std::fmt::Debug + Clone>(
    body: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = OwnerCall<T>> + Clone {
    (of(text()), of(text()), body).prop_map(|(session, csrf, body)| OwnerCall {
        session,
        csrf,
        body,
    })
}

/// An owner answer carrying `done`, or one of its two refusals.
pub(crate) fn owner_answer<T: std::fmt::Debug + Clone>(
    done: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = OwnerAnswer<T>> + Clone {
    prop_oneof![
        done.prop_map(OwnerAnswer::Done),
        Just(OwnerAnswer::CsrfRejected),
        Just(OwnerAnswer::Stale),
    ]
}

pub(crate) fn empty() -> impl Strategy<Value = Empty> + Clone {
    Just(Empty {})
}

pub(crate) fn login_request() -> impl Strategy<Value = LoginRequest> + Clone {
    (text(), of(any::<std::net::IpAddr>()))
        .prop_map(|(password, peer)| LoginRequest { password, peer })
}

pub(crate) fn session_info() -> impl Strategy<Value = SessionInfo> + Clone {
    (of(text()), text(), instant()).prop_map(|(session, csrf, expires_at)| SessionInfo {
        session,
        csrf,
        expires_at,
    })
}

pub(crate) fn owner_connection() -> impl Strategy<Value = OwnerConnection> + Clone {
    (
        (text(), text(), connection_kind(), any::<u32>(), instant()),
        (
            instant(),
            of(instant()),
            read_scope(),
            send_permission(),
            of(text()),
        ),
    )
        .prop_map(
            |(
                (id, name, kind, revision, created_at),
                (expires_at, revoked_at, read_scope, send_permission, oauth_client),
            )| OwnerConnection {
                id,
                name,
                kind,
                revision,
                created_at,
                expires_at,
                revoked_at,
                read_scope,
                send_permission,
                oauth_client,
            },
        )
}

pub(crate) fn connection_list() -> impl Strategy<Value = ConnectionList> + Clone {
    few(owner_connection()).prop_map(|connections| ConnectionList { connections })
}

pub(crate) fn create_connection_request() -> impl Strategy<Value = CreateConnectionRequest> + Clone
{
    (text(), connection_kind(), instant(), read_scope()).prop_map(
        |(name, kind, expires_at, read_scope)| CreateConnectionRequest {
            name,
            kind,
            expires_at,
            read_scope,
        },
    )
}

pub(crate) fn issued_connection() -> impl Strategy<Value = IssuedConnection> + Clone {
    (owner_connection(), text())
        .prop_map(|(connection, token)| IssuedConnection { connection, token })
}

pub(crate) fn rotate_request() -> impl Strategy<Value = RotateRequest> + Clone {
    (text(), any::<u32>()).prop_map(|(id, revision)| RotateRequest { id, revision })
}

pub(crate) fn read_scope_request() -> impl Strategy<Value = ReadScopeRequest> + Clone {
    (text(), any::<u32>(), read_scope()).prop_map(|(id, revision, read_scope)| ReadScopeRequest {
        id,
        revision,
        read_scope,
    })
}

pub(crate) fn revoke_request() -> impl Strategy<Value = RevokeRequest> + Clone {
    text().prop_map(|id| RevokeRequest { id })
}

pub(crate) fn send_permission_request() -> impl Strategy<Value = SendPermissionRequest> + Clone {
    (
        text(),
        any::<u32>(),
        of(send_mode()),
        few(text()),
        of(any::<u32>()),
    )
        .prop_map(|(id, revision, mode, chats, expected_send_revision)| {
            SendPermissionRequest {
                id,
                revision,
                mode,
                chats,
                expected_send_revision,
            }
        })
}

pub(crate) fn chats_request() -> impl Strategy<Value = ChatsRequest> + Clone {
    (
        (of(text()), of(text())),
        text(),
        any::<u32>(),
        of(any::<u32>()),
        few(text()),
    )
        .prop_map(
            |((connection_id, account_id), query, offset, limit, named)| ChatsRequest {
                connection_id,
                account_id,
                query,
                offset,
                limit,
                named,
            },
        )
}

fn owner_chat() -> impl Strategy<Value = OwnerChat> + Clone {
    (text(), text(), text()).prop_map(|(id, name, kind)| OwnerChat { id, name, kind })
}

pub(crate) fn chat_page() -> impl Strategy<Value = ChatPage> + Clone {
    (few(owner_chat()), any::<u32>(), few(owner_chat())).prop_map(|(chats, total, named)| {
        ChatPage {
            chats,
            total,
            named,
        }
    })
}

pub(crate) fn policy() -> impl Strategy<Value = Policy> + Clone {
    (few(text()), any::<u32>()).prop_map(|(excluded_chats, revision)| Policy {
        excluded_chats,
        revision,
    })
}

pub(crate) fn set_policy_request() -> impl Strategy<Value = SetPolicyRequest> + Clone {
    (few(text()), any::<u32>()).prop_map(|(excluded_chats, revision)| SetPolicyRequest {
        excluded_chats,
        revision,
    })
}

pub(crate) fn account_view() -> impl Strategy<Value = AccountView> + Clone {
    (
        (text(), sync_state(), of(text()), of(instant())),
        (of(text()), of(text()), few(text())),
    )
        .prop_map(
            |((account_id, state, qr, qr_expires_at), (pairing_code, detail, notes))| AccountView {
                account_id,
                state,
                qr,
                qr_expires_at,
                pairing_code,
                detail,
                notes,
            },
        )
}

pub(crate) fn account_action_request() -> impl Strategy<Value = AccountActionRequest> + Clone {
    use AccountActionRequest::*;
    prop_oneof![
        Just(Pause),
        Just(Resume),
        Just(Unlink),
        Just(PairWithQr),
        text().prop_map(|phone| PairWithCode { phone }),
    ]
    .prop_map(|a| {
        // Exhaustive: a new action fails to compile until it is generated above.
        match &a {
            Pause | Resume | Unlink | PairWithQr | PairWithCode { .. } => {}
        }
        a
    })
}

pub(crate) fn sends_request() -> impl Strategy<Value = SendsRequest> + Clone {
    (of(any::<u32>()), of(text()), of(text())).prop_map(|(limit, connection_id, chat_id)| {
        SendsRequest {
            limit,
            connection_id,
            chat_id,
        }
    })
}

pub(crate) fn sends_page() -> impl Strategy<Value = SendsPage> + Clone {
    let row = (
        (text(), text(), text(), text(), text()),
        (text(), text(), instant(), instant()),
    )
        .prop_map(
            |(
                (connection_id, connection_name, request_id, tool, chat_id),
                (chat_name, state, created_at, updated_at),
            )| SendRow {
                connection_id,
                connection_name,
                request_id,
                tool,
                chat_id,
                chat_name,
                state,
                created_at,
                updated_at,
            },
        );
    let refused = (
        (text(), text(), of(text())),
        (text(), text(), text(), instant()),
    )
        .prop_map(
            |((connection_id, connection_name, tool), (chat_id, chat_name, reason, at))| {
                RefusedSend {
                    connection_id,
                    connection_name,
                    tool,
                    chat_id,
                    chat_name,
                    reason,
                    at,
                }
            },
        );
    (few(row), few(refused)).prop_map(|(sends, refused)| SendsPage { sends, refused })
}
