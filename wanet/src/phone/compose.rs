//! What a phone composes beyond plain text: replies, @mentions, documents, and groups (create,
//! add, remove, subject). Recipients are account numbers (digits) or group JIDs (`…@g.us`).

use anyhow::Context as _;
use whatsapp_rust::wacore::download::MediaType;
use whatsapp_rust::waproto::buffa::MessageField;
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{
    GroupCreateOptions, GroupParticipantOptions, GroupSubject, Jid, UploadOptions,
};

use super::Phone;

/// The JID of `to`: a group JID as given, an account number as its phone-number JID.
pub(super) fn recipient(to: &str) -> anyhow::Result<Jid> {
    if to.contains('@') {
        to.parse().map_err(|e| anyhow::anyhow!("bad JID: {e:?}"))
    } else {
        Ok(Jid::pn(to))
    }
}

/// An account's phone-number JID.
fn pn(number: &str) -> Jid {
    Jid::pn(number)
}

impl Phone {
    /// Send `message` to `to`; its id.
    pub(super) async fn send(&self, to: &str, message: wa::Message) -> anyhow::Result<String> {
        let sent = self
            .client
            .send_message(recipient(to)?, message)
            .await
            .map_err(|e| anyhow::anyhow!("send: {e:?}"))?;
        Ok(sent.message_id.to_string())
    }

    /// Reply to the message `quoted` (sent by the account `author`, reading `quoted_text`) in
    /// `to`; the message id.
    pub async fn send_reply(
        &self,
        to: &str,
        text: &str,
        quoted: &str,
        author: &str,
        quoted_text: &str,
    ) -> anyhow::Result<String> {
        crate::secret(crate::MESSAGE_TEXT, text);
        crate::secret(crate::MESSAGE_TEXT, quoted_text);
        let context = wa::ContextInfo {
            stanza_id: Some(quoted.to_owned()),
            participant: Some(pn(author).to_string()),
            quoted_message: MessageField::some(wa::Message {
                conversation: Some(quoted_text.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.send(to, extended(text, context)).await
    }

    /// Send `text` to `to` mentioning the accounts `mentioned`; the message id.
    pub async fn send_mention(
        &self,
        to: &str,
        text: &str,
        mentioned: &[&str],
    ) -> anyhow::Result<String> {
        crate::secret(crate::MESSAGE_TEXT, text);
        let context = wa::ContextInfo {
            mentioned_jid: mentioned.iter().map(|m| pn(m).to_string()).collect(),
            ..Default::default()
        };
        self.send(to, extended(text, context)).await
    }

    /// Send `bytes` as a document named `file_name` to `to`; the message id.
    pub async fn send_document(
        &self,
        to: &str,
        bytes: Vec<u8>,
        mime_type: &str,
        file_name: &str,
    ) -> anyhow::Result<String> {
        let up = self
            .client
            .upload(bytes, MediaType::Document, UploadOptions::default())
            .await
            .context("upload")?;
        let msg = whatsapp_rust::media::document_message(
            up,
            whatsapp_rust::media::DocumentOptions {
                mimetype: Some(mime_type.to_owned()),
                file_name: Some(file_name.to_owned()),
                ..Default::default()
            },
        );
        self.send(to, msg).await
    }

    /// Read the messages `ids` that `chat` (an account's digits or a group JID) sent: the phone
    /// sends read receipts (delivery receipts go out on their own when a message arrives).
    pub async fn mark_read(&self, chat: &str, ids: &[&str]) -> anyhow::Result<()> {
        self.client
            .mark_as_read(&recipient(chat)?, None, ids)
            .await
            .map_err(|e| anyhow::anyhow!("mark read: {e:?}"))
    }

    /// Send `ogg` (Opus) as a voice note (push-to-talk) of `seconds` to `to`; the message id.
    pub async fn send_voice(&self, to: &str, ogg: Vec<u8>, seconds: u32) -> anyhow::Result<String> {
        let up = self
            .client
            .upload(ogg, MediaType::Audio, UploadOptions::default())
            .await
            .context("upload")?;
        let msg = whatsapp_rust::media::audio_message(
            up,
            whatsapp_rust::media::AudioOptions {
                ptt: Some(true),
                duration_seconds: Some(seconds),
                ..Default::default()
            },
        );
        self.send(to, msg).await
    }

    /// Create a group named `subject` with the accounts `members`; its JID (`…@g.us`).
    pub async fn create_group(&self, subject: &str, members: &[&str]) -> anyhow::Result<String> {
        let options = GroupCreateOptions::builder()
            .subject(subject)
            .participants(
                members
                    .iter()
                    .map(|m| GroupParticipantOptions::from_phone(pn(m)))
                    .collect(),
            )
            .build();
        let created = self
            .client
            .groups()
            .create_group(options)
            .await
            .map_err(|e| anyhow::anyhow!("create group: {e:?}"))?;
        Ok(created.metadata.id.to_string())
    }

    /// Add the accounts `members` to `group`.
    pub async fn add_to_group(&self, group: &str, members: &[&str]) -> anyhow::Result<()> {
        let jids: Vec<Jid> = members.iter().map(|m| pn(m)).collect();
        let answers = self
            .client
            .groups()
            .add_participants(recipient(group)?, &jids)
            .await
            .map_err(|e| anyhow::anyhow!("add: {e:?}"))?;
        anyhow::ensure!(answers.iter().all(|a| a.error.is_none()), "add refused");
        Ok(())
    }

    /// Remove the accounts `members` from `group`.
    pub async fn remove_from_group(&self, group: &str, members: &[&str]) -> anyhow::Result<()> {
        let jids: Vec<Jid> = members.iter().map(|m| pn(m)).collect();
        let answers = self
            .client
            .groups()
            .remove_participants(recipient(group)?, &jids)
            .await
            .map_err(|e| anyhow::anyhow!("remove: {e:?}"))?;
        anyhow::ensure!(answers.iter().all(|a| a.error.is_none()), "remove refused");
        Ok(())
    }

    /// Rename `group` to `subject`.
    pub async fn set_subject(&self, group: &str, subject: &str) -> anyhow::Result<()> {
        self.client
            .groups()
            .set_subject(recipient(group)?, GroupSubject::new(subject)?)
            .await
            .map_err(|e| anyhow::anyhow!("subject: {e:?}"))
    }
}

/// An extended text message carrying `context` (a quote or mentions).
fn extended(text: &str, context: wa::ContextInfo) -> wa::Message {
    wa::Message {
        extended_text_message: MessageField::some(wa::message::ExtendedTextMessage {
            text: Some(text.to_owned()),
            context_info: MessageField::some(context),
            ..Default::default()
        }),
        ..Default::default()
    }
}
