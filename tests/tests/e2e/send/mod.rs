//! Sending, end to end on the worker side: the journal (replay, conflict, simultaneous calls,
//! the key cap, a crash after transmission), the gates, media through the object store (also
//! shared by simultaneous requests), the outbox behind `unconfirmed_sends`, and that nothing
//! sent ever shows in logs or errors. The worker's send ops are driven over NATS with a
//! verified grant, as the gateway forwards them.

mod api;
mod crash;
mod deadline;
mod gates;
mod journal;
mod leak;
mod media;
mod simultaneous;

use std::time::Duration;

use wazap_shared::RpcError;
use wazap_shared::bus;
use wazap_shared::grant::VerifiedGrant;
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::grants::SendMode;
use wazap_shared::wire::read::{ReadMessages, ReadMessagesRequest, ReadMessagesResponse};
use wazap_shared::wire::send::{
    GetSendStatus, GetSendStatusRequest, SendMessage, SendMessageRequest, SendResult,
};
use wazap_shared::wire::sim::{ArmSendFault, SimTransmission, Transmissions, UpsertContact};
use wazap_tests::Stack;
use wazap_tests::fixtures::person;
use wazap_worker::config::ConnectorKind;

/// A sim worker with two contacts and a connection allowed to send to all chats.
pub(crate) struct Sending {
    pub(crate) stack: Stack,
    pub(crate) grant: VerifiedGrant,
    pub(crate) token: String,
    pub(crate) chat: String,
    pub(crate) other: String,
}

impl Sending {
    pub(crate) async fn start() -> anyhow::Result<Self> {
        Self::on(Stack::start(ConnectorKind::Sim).await?).await
    }

    /// The contacts and the connection on `stack` (a sim worker started otherwise, e.g. on a
    /// NATS server of the test's own).
    pub(crate) async fn on(stack: Stack) -> anyhow::Result<Self> {
        let chat = contact(&stack, "972503330001", "Dana").await?;
        let other = contact(&stack, "972503330002", "Eli").await?;
        let (grant, token) = connection_with_token(&stack, SendMode::All, vec![]).await?;
        Ok(Self {
            stack,
            grant,
            token,
            chat,
            other,
        })
    }

    pub(crate) async fn text(
        &self,
        chat: &str,
        key: &str,
        text: &str,
    ) -> Result<SendResult, RpcError> {
        send_text(&self.stack, &self.grant, chat, key, text).await
    }

    pub(crate) async fn status(&self, key: &str) -> Result<SendResult, RpcError> {
        bus::call::<GetSendStatus>(
            &self.stack.nats,
            &self.stack.subjects,
            Some(&self.grant),
            &GetSendStatusRequest {
                request_id: key.into(),
            },
            None,
        )
        .await
    }

    pub(crate) async fn read(&self, chat: &str) -> Result<ReadMessagesResponse, RpcError> {
        read(&self.stack, &self.grant, chat).await
    }

    pub(crate) async fn arm(&self, fault: ArmSendFault) -> anyhow::Result<()> {
        self.stack.sim(sim_op::ARM_SEND_FAULT, &fault).await?;
        Ok(())
    }

    pub(crate) async fn transmissions(&self) -> anyhow::Result<Vec<SimTransmission>> {
        transmissions(&self.stack).await
    }
}

/// A contact's chat id.
pub(crate) async fn contact(stack: &Stack, digits: &str, name: &str) -> anyhow::Result<String> {
    let ack = stack
        .sim(
            sim_op::UPSERT_CONTACT,
            &UpsertContact {
                jid: person(digits),
                lid: None,
                name: name.into(),
            },
        )
        .await?;
    ack.ids
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no chat id"))
}

/// A new local connection with send permission `mode`, as its verified grant.
pub(crate) async fn connection(
    stack: &Stack,
    mode: SendMode,
    chats: Vec<String>,
) -> anyhow::Result<VerifiedGrant> {
    Ok(connection_with_token(stack, mode, chats).await?.0)
}

/// Like [`connection`], with the connection's bearer token.
pub(crate) async fn connection_with_token(
    stack: &Stack,
    mode: SendMode,
    chats: Vec<String>,
) -> anyhow::Result<(VerifiedGrant, String)> {
    let (id, token) = stack.sending_connection(mode, chats).await?;
    Ok((
        VerifiedGrant {
            connection_id: id,
            revision: 0,
            loopback: true,
            token: token.clone(),
        },
        token,
    ))
}

pub(crate) async fn send_text(
    stack: &Stack,
    grant: &VerifiedGrant,
    chat: &str,
    key: &str,
    text: &str,
) -> Result<SendResult, RpcError> {
    send_text_within(stack, grant, chat, key, text, None).await
}

/// [`send_text_within`] in a task of its own (for a call the test may abandon, one whose worker
/// is killed, say).
pub(crate) fn spawn_send(
    stack: &Stack,
    grant: &VerifiedGrant,
    chat: &str,
    key: &str,
    text: &str,
    deadline: Option<Duration>,
) -> tokio::task::JoinHandle<Result<SendResult, RpcError>> {
    let (nats, subjects, grant) = (stack.nats.clone(), stack.subjects.clone(), grant.clone());
    let req = SendMessageRequest {
        chat_id: chat.into(),
        request_id: key.into(),
        text: text.into(),
    };
    tokio::spawn(async move {
        bus::call::<SendMessage>(&nats, &subjects, Some(&grant), &req, deadline).await
    })
}

/// `send_message` through NATS as the gateway forwards it, within `deadline` (the op's own
/// when `None`).
pub(crate) async fn send_text_within(
    stack: &Stack,
    grant: &VerifiedGrant,
    chat: &str,
    key: &str,
    text: &str,
    deadline: Option<Duration>,
) -> Result<SendResult, RpcError> {
    bus::call::<SendMessage>(
        &stack.nats,
        &stack.subjects,
        Some(grant),
        &SendMessageRequest {
            chat_id: chat.into(),
            request_id: key.into(),
            text: text.into(),
        },
        deadline,
    )
    .await
}

pub(crate) async fn read(
    stack: &Stack,
    grant: &VerifiedGrant,
    chat: &str,
) -> Result<ReadMessagesResponse, RpcError> {
    bus::call::<ReadMessages>(
        &stack.nats,
        &stack.subjects,
        Some(grant),
        &ReadMessagesRequest {
            chat_id: chat.into(),
            ..Default::default()
        },
        None,
    )
    .await
}

pub(crate) async fn transmissions(stack: &Stack) -> anyhow::Result<Vec<SimTransmission>> {
    let t: Transmissions = stack
        .sim_raw(sim_op::TRANSMISSIONS, &serde_json::json!({}))
        .await?;
    Ok(t.transmissions)
}
