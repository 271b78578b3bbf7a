//! Strategies for the sim connector's control ops' and the housekeeping ops' wire types.

use proptest::option::of;
use proptest::prelude::*;
use wazap_shared::wire::sim::{
    ArmSendFault, HistoryPage, HistorySync, InjectMessage, InjectStory, SetAccount, SetState,
    SimAck, SimAttachment, SimMessage, SimTransmission, Transmissions, UpsertContact, UpsertGroup,
};
use wazap_shared::wire::system::{Jwk, JwksResponse, PingResponse};

use super::arb::*;

fn sim_attachment() -> impl Strategy<Value = SimAttachment> + Clone {
    (text(), of(text()), of(any::<u32>()), of(text()), of(text())).prop_map(
        |(mime_type, filename, seconds, data_base64, thumbnail_base64)| SimAttachment {
            mime_type,
            filename,
            seconds,
            data_base64,
            thumbnail_base64,
        },
    )
}

pub(crate) fn sim_message() -> impl Strategy<Value = SimMessage> + Clone {
    (
        (
            text(),
            text(),
            of(text()),
            of(text()),
            any::<bool>(),
            instant(),
        ),
        (message_type(), text(), of(text()), few(text())),
        (of(sim_attachment()), any::<bool>()),
    )
        .prop_map(
            |(
                (chat, id, sender, push_name, from_me, timestamp),
                (kind, text, reply_to, mentions),
                (attachment, edit),
            )| SimMessage {
                chat,
                id,
                sender,
                push_name,
                from_me,
                timestamp,
                kind,
                text,
                reply_to,
                mentions,
                attachment,
                edit,
            },
        )
}

pub(crate) fn inject_message() -> impl Strategy<Value = InjectMessage> + Clone {
    sim_message().prop_map(|message| InjectMessage { message })
}

pub(crate) fn inject_story() -> impl Strategy<Value = InjectStory> + Clone {
    (
        (text(), of(text()), text(), instant()),
        (message_type(), text(), of(sim_attachment())),
    )
        .prop_map(
            |((sender, push_name, id, timestamp), (kind, text, attachment))| InjectStory {
                sender,
                push_name,
                id,
                timestamp,
                kind,
                text,
                attachment,
            },
        )
}

pub(crate) fn upsert_contact() -> impl Strategy<Value = UpsertContact> + Clone {
    (text(), of(text()), text()).prop_map(|(jid, lid, name)| UpsertContact { jid, lid, name })
}

pub(crate) fn upsert_group() -> impl Strategy<Value = UpsertGroup> + Clone {
    (text(), text(), few(text())).prop_map(|(jid, name, participants)| UpsertGroup {
        jid,
        name,
        participants,
    })
}

pub(crate) fn history_page() -> impl Strategy<Value = HistoryPage> + Clone {
    (text(), few(sim_message())).prop_map(|(chat, messages)| HistoryPage { chat, messages })
}

pub(crate) fn history_sync() -> impl Strategy<Value = HistorySync> + Clone {
    (few(sim_message()), of(any::<u8>()))
        .prop_map(|(messages, progress)| HistorySync { messages, progress })
}

pub(crate) fn set_state() -> impl Strategy<Value = SetState> + Clone {
    sync_state().prop_map(|state| SetState { state })
}

pub(crate) fn set_account() -> impl Strategy<Value = SetAccount> + Clone {
    (of(text()), of(text())).prop_map(|(own_jid, own_lid)| SetAccount { own_jid, own_lid })
}

pub(crate) fn arm_send_fault() -> impl Strategy<Value = ArmSendFault> + Clone {
    (
        (
            of(any::<u64>()),
            any::<bool>(),
            any::<bool>(),
            of(any::<u64>()),
        ),
        (of(any::<u64>()), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                (transmit_delay_ms, fail_upload, no_ack, no_ack_wait_ms),
                (ack_delay_ms, error_after_transmit, crash_after_transmit),
            )| ArmSendFault {
                transmit_delay_ms,
                fail_upload,
                no_ack,
                no_ack_wait_ms,
                ack_delay_ms,
                error_after_transmit,
                crash_after_transmit,
            },
        )
}

pub(crate) fn transmissions() -> impl Strategy<Value = Transmissions> + Clone {
    let t = (
        (text(), text(), text(), of(text())),
        (of(any::<u64>()), any::<bool>(), any::<bool>(), instant()),
    )
        .prop_map(
            |((recipient, wa_id, kind, mime_type), (size, ptt, caption, at))| SimTransmission {
                recipient,
                wa_id,
                kind,
                mime_type,
                size,
                ptt,
                caption,
                at,
            },
        );
    few(t).prop_map(|transmissions| Transmissions { transmissions })
}

pub(crate) fn sim_ack() -> impl Strategy<Value = SimAck> + Clone {
    (any::<u32>(), few(text())).prop_map(|(stored, ids)| SimAck { stored, ids })
}

pub(crate) fn ping_response() -> impl Strategy<Value = PingResponse> + Clone {
    (text(), sync_state(), any::<bool>()).prop_map(|(archive_id, sync, database)| PingResponse {
        archive_id,
        sync,
        database,
    })
}

pub(crate) fn jwks_response() -> impl Strategy<Value = JwksResponse> + Clone {
    let jwk = (text(), text(), text(), text(), text(), text()).prop_map(
        |(kty, crv, x, kid, alg, use_)| Jwk {
            kty,
            crv,
            x,
            kid,
            alg,
            use_,
        },
    );
    few(jwk).prop_map(|keys| JwksResponse { keys })
}
