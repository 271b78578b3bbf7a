//! Every wire type: JSON encode → decode gives the value back, both as a request body (what the
//! worker's `decode_request` reads) and inside a reply envelope (`encode_reply` →
//! `decode_reply`), and encoding it again gives the same bytes. Undecodable bodies are refused
//! with an error that never quotes them.

use std::fmt::Debug;

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wazap_shared::bus::{Reply, decode_reply, decode_request, encode_reply};
use wazap_shared::error::ErrorCode;
use wazap_shared::wire::owner::{
    ChatsRequest, CreateConnectionRequest, Empty, LoginRequest, OwnerAnswer, OwnerCall,
    SendPermissionRequest,
};
use wazap_shared::wire::read::{ReadMessagesRequest, ReadMessagesResponse};
use wazap_shared::wire::search::SearchMessagesRequest;
use wazap_shared::wire::send::{SendMessageRequest, SendResult};
use wazap_shared::wire::sim::{ArmSendFault, InjectMessage};
use wazap_shared::wire::system::{JwksRequest, PingRequest};
use wazap_shared::wire::wait::WaitForMessagesRequest;

use super::arb::*;
use super::arb_owner::*;
use super::arb_read::*;
use super::arb_send::*;
use super::arb_sim::*;

/// `v` survives both envelopes, and its encoding is stable.
fn round_trips<T>(v: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let body = serde_json::to_vec(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: T = decode_request(&body).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, v, "as a request body");
    let reply = encode_reply(&Reply::Ok(v));
    let back: T = decode_reply(&reply).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, v, "inside a reply envelope");
    let again = serde_json::to_vec(&back).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(again, body, "encoded the same way twice");
    Ok(())
}

/// One proptest per wire type: `name: Type = strategy`.
macro_rules! round_trip_tests {
    ($($name:ident: $ty:ty = $strategy:expr;)*) => {
        proptest! {
            #![proptest_config(super::config())]
            $(
                #[test]
                fn $name(v in $strategy) {
                    round_trips::<$ty>(&v)?;
                }
            )*
        }
    };
}

use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendMode, SendPermission};
use wazap_shared::wire::message::{AttachmentInfo, Message, MessageType, Sender, SyncState};
use wazap_shared::wire::owner;
use wazap_shared::wire::read;
use wazap_shared::wire::search;
use wazap_shared::wire::send;
use wazap_shared::wire::sim;
use wazap_shared::wire::system;
use wazap_shared::wire::wait;

round_trip_tests! {
    // message, grants, errors
    message_type_: MessageType = message_type();
    sync_state_: SyncState = sync_state();
    chat_kind_: wazap_shared::wire::message::ChatKind = chat_kind();
    sender_: Sender = sender();
    attachment_info_: AttachmentInfo = attachment_info();
    message_: Message = message();
    chat_selection_: ChatSelection = chat_selection();
    read_scope_: ReadScope = read_scope();
    send_mode_: SendMode = send_mode();
    send_permission_: SendPermission = send_permission();
    connection_kind_: wazap_shared::grant::ConnectionKind = connection_kind();
    rpc_error_: wazap_shared::RpcError = rpc_error();
    // read
    list_chats_request_: read::ListChatsRequest = list_chats_request();
    list_chats_response_: read::ListChatsResponse = list_chats_response();
    search_contacts_request_: read::SearchContactsRequest = search_contacts_request();
    search_contacts_response_: read::SearchContactsResponse = search_contacts_response();
    search_groups_request_: read::SearchGroupsRequest = search_groups_request();
    search_groups_response_: read::SearchGroupsResponse = search_groups_response();
    read_messages_request_: ReadMessagesRequest = read_messages_request();
    read_messages_response_: ReadMessagesResponse = read_messages_response();
    // search
    search_messages_request_: SearchMessagesRequest = search_messages_request();
    search_messages_response_: search::SearchMessagesResponse = search_messages_response();
    search_attachments_request_: search::SearchAttachmentsRequest = search_attachments_request();
    search_attachments_response_: search::SearchAttachmentsResponse = search_attachments_response();
    get_attachment_request_: search::GetAttachmentRequest = get_attachment_request();
    get_attachment_response_: search::GetAttachmentRpcResponse = get_attachment_response();
    // send
    send_message_request_: SendMessageRequest = send_message_request();
    send_media_request_: send::SendMediaRequest = send_media_request();
    send_voice_note_request_: send::SendVoiceNoteRequest = send_voice_note_request();
    get_send_status_request_: send::GetSendStatusRequest = get_send_status_request();
    media_ref_: send::MediaRef = media_ref();
    send_media_rpc_: send::SendMediaRpc = send_media_rpc();
    send_voice_rpc_: send::SendVoiceRpc = send_voice_rpc();
    send_result_: SendResult = send_result();
    // wait
    wait_request_: WaitForMessagesRequest = wait_request();
    wait_response_: wait::WaitForMessagesResponse = wait_response();
    wait_poll_response_: wait::WaitPollResponse = wait_poll_response();
    // owner
    owner_login_: OwnerCall<LoginRequest> = owner_call(login_request());
    owner_empty_: OwnerCall<Empty> = owner_call(empty());
    owner_session_: OwnerAnswer<owner::SessionInfo> = owner_answer(session_info());
    owner_connections_: OwnerAnswer<owner::ConnectionList> = owner_answer(connection_list());
    owner_create_: OwnerCall<CreateConnectionRequest> = owner_call(create_connection_request());
    owner_issued_: OwnerAnswer<owner::IssuedConnection> = owner_answer(issued_connection());
    owner_rotate_: OwnerCall<owner::RotateRequest> = owner_call(rotate_request());
    owner_read_scope_: OwnerCall<owner::ReadScopeRequest> = owner_call(read_scope_request());
    owner_revoke_: OwnerCall<owner::RevokeRequest> = owner_call(revoke_request());
    owner_permission_: OwnerCall<SendPermissionRequest> = owner_call(send_permission_request());
    owner_permission_answer_: OwnerAnswer<SendPermission> = owner_answer(send_permission());
    owner_chats_: OwnerCall<ChatsRequest> = owner_call(chats_request());
    owner_chat_page_: OwnerAnswer<owner::ChatPage> = owner_answer(chat_page());
    owner_policy_: OwnerAnswer<owner::Policy> = owner_answer(policy());
    owner_set_policy_: OwnerCall<owner::SetPolicyRequest> = owner_call(set_policy_request());
    owner_account_: OwnerAnswer<owner::AccountView> = owner_answer(account_view());
    owner_account_action_: OwnerCall<owner::AccountActionRequest> = owner_call(account_action_request());
    owner_sends_: OwnerCall<owner::SendsRequest> = owner_call(sends_request());
    owner_sends_page_: OwnerAnswer<owner::SendsPage> = owner_answer(sends_page());
    owner_done_empty_: OwnerAnswer<Empty> = owner_answer(empty());
    // sim
    sim_inject_message_: InjectMessage = inject_message();
    sim_inject_story_: sim::InjectStory = inject_story();
    sim_upsert_contact_: sim::UpsertContact = upsert_contact();
    sim_upsert_group_: sim::UpsertGroup = upsert_group();
    sim_history_page_: sim::HistoryPage = history_page();
    sim_history_sync_: sim::HistorySync = history_sync();
    sim_set_state_: sim::SetState = set_state();
    sim_set_account_: sim::SetAccount = set_account();
    sim_arm_send_fault_: ArmSendFault = arm_send_fault();
    sim_transmissions_: sim::Transmissions = transmissions();
    sim_ack_: sim::SimAck = sim_ack();
    // system
    ping_request_: PingRequest = Just(PingRequest {});
    ping_response_: system::PingResponse = ping_response();
    jwks_request_: JwksRequest = Just(JwksRequest {});
    jwks_response_: system::JwksResponse = jwks_response();
}

proptest! {
    #![proptest_config(super::config())]
    /// An error reply decodes to the same error.
    #[test]
    fn error_replies_round_trip(e in rpc_error()) {
        let reply = encode_reply(&Reply::<Empty>::Error(e.clone()));
        prop_assert_eq!(decode_reply::<Empty>(&reply), Err(e));
    }

    /// The enums' `as_str` names are their wire names.
    #[test]
    fn enum_names_are_their_wire_names(
        t in message_type(),
        s in sync_state(),
        k in chat_kind(),
        c in error_code(),
        ck in connection_kind(),
    ) {
        prop_assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        prop_assert_eq!(MessageType::parse(t.as_str()), Some(t));
        prop_assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        prop_assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        prop_assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        prop_assert_eq!(serde_json::to_value(ck).unwrap(), ck.as_str());
    }

    /// Arbitrary bytes never panic a decoder; a refused body is `invalid_argument` (a reply:
    /// `internal`), and the error never quotes the body.
    #[test]
    fn garbage_is_refused_without_panicking_or_quoting(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        garbage::<SendMessageRequest>(&bytes)?;
        garbage::<ReadMessagesRequest>(&bytes)?;
        garbage::<OwnerCall<SendPermissionRequest>>(&bytes)?;
        garbage::<ArmSendFault>(&bytes)?;
        garbage::<WaitForMessagesRequest>(&bytes)?;
        let reply = decode_reply::<SendResult>(&bytes);
        if serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
            prop_assert_eq!(reply.map_err(|e| e.code), Err(ErrorCode::Internal));
        }
    }

    /// A body of the right shape but wrong values is refused without its values in the error.
    #[test]
    fn wrong_values_are_not_quoted(secret in "[A-Za-z0-9]{12}", field in prop::sample::select(
        vec!["chat_id", "request_id", "text", "cursor", "timeout_seconds", "unknown_field"])) {
        for body in [
            format!(r#"{{"{field}":"{secret}"}}"#),
            format!(r#"{{"chat_id":"c_1","request_id":"r","text":"t","{field}":{{"x":"{secret}"}}}}"#),
            format!(r#"{{"chat_id":["{secret}"],"request_id":"{secret}","text":5}}"#),
            format!(r#"["{secret}"]"#),
            format!(r#""{secret}""#),
        ] {
            for e in [
                decode_request::<SendMessageRequest>(body.as_bytes()).err(),
                decode_request::<WaitForMessagesRequest>(body.as_bytes()).err(),
            ].into_iter().flatten() {
                prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                prop_assert!(!e.message.contains(&secret), "{} quotes the body", e.message);
            }
        }
    }
}

/// `bytes` as a `T` request: decoded, or refused as `invalid_argument` without quoting them.
fn garbage<T: DeserializeOwned>(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Err(e) = decode_request::<T>(bytes) {
        prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
        let text = String::from_utf8_lossy(bytes);
        let quoted = text.len() >= 6 && e.message.contains(text.as_ref());
        prop_assert!(!quoted, "{} quotes the body", e.message);
    }
    Ok(())
}
