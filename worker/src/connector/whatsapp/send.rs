//! Sending with WhatsApp's server acknowledgement. The journal already reserved the message id
//! (`OutboundMessage::wa_id`, WhatsApp Web's `3EB0…` form); it goes out with
//! `SendOptions::with_message_id`, and only `Event::ServerAck` for that id makes it accepted:
//! `send_message` returning means "written to the socket", nothing more.
//!
//! The state machine ([`transmit`]) is separate from the client: it takes the hand-over as a
//! future and the acknowledgements from [`Acks`], which the session feeds with the client's
//! events — tests feed it synthetic `ServerAck` events instead.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use wazap_shared::wire::send::MediaKind;
use whatsapp_rust::media::{AudioOptions, DocumentOptions, ImageOptions, VideoOptions};
use whatsapp_rust::types::events::Event;
use whatsapp_rust::wacore::download::MediaType;
use whatsapp_rust::wacore::proto_helpers::MessageBuilderExt as _;
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Client, Jid, SendOptions, UploadOptions};

use super::thumbnail::{self, Thumbnail};
use crate::connector::outbound::{OutboundContent, OutboundMessage, SendAck, SendError};

/// How long to wait for the server's ack after the hand-over (inside the journal's 50 s).
pub const ACK_WAIT: Duration = Duration::from_secs(30);

/// What the server said about one stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOutcome {
    /// Accepted at this server time.
    Accepted(chrono::DateTime<Utc>),
    /// Refused with a nack code.
    Rejected(String),
}

/// Sends waiting for their server ack, by message id.
#[derive(Debug, Default)]
pub struct Acks {
    waiting: Mutex<HashMap<String, tokio::sync::oneshot::Sender<AckOutcome>>>,
}

impl Acks {
    /// Wait for the ack of `id`. Register before handing the message over, so a fast ack is
    /// never missed.
    pub fn register(&self, id: &str) -> tokio::sync::oneshot::Receiver<AckOutcome> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.lock().insert(id.to_owned(), tx);
        rx
    }

    /// Stop waiting for `id`.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Feed one client event: a message-class `ServerAck` resolves its waiter; a disconnect
    /// ends every wait at once (an ack never arrives on a later connection), so those sends
    /// read `outcome_unknown` now rather than after [`ACK_WAIT`].
    pub fn on_event(&self, event: &Event) {
        if let Event::Disconnected(_) = event {
            self.lock().clear();
            return;
        }
        let Event::ServerAck(ack) = event else {
            return;
        };
        if ack.class.as_deref().is_some_and(|c| c != "message") {
            return;
        }
        let Some(tx) = self.lock().remove(&ack.id) else {
            return;
        };
        let outcome = match &ack.error {
            Some(code) => AckOutcome::Rejected(code.clone()),
            None => AckOutcome::Accepted(ack.timestamp.unwrap_or_else(Utc::now)),
        };
        let _ = tx.send(outcome);
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, tokio::sync::oneshot::Sender<AckOutcome>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a hand-over failed.
#[derive(Debug)]
pub enum HandOver {
    /// Nothing left the worker (upload failed, not logged in, invalid recipient).
    Before(anyhow::Error),
    /// The failure may have come after bytes reached WhatsApp.
    After(anyhow::Error),
}

/// One send: register for the ack of `id`, hand over, then wait at most `wait` for the ack.
/// Returns the ack and what the hand-over produced (the message as sent).
pub async fn transmit<T>(
    acks: &Acks,
    id: &str,
    wait: Duration,
    hand_over: impl Future<Output = Result<T, HandOver>>,
) -> Result<(SendAck, T), SendError> {
    let rx = acks.register(id);
    let sent = match hand_over.await {
        Ok(sent) => sent,
        Err(HandOver::Before(e)) => {
            acks.forget(id);
            return Err(SendError::BeforeTransmission(e));
        }
        Err(HandOver::After(e)) => {
            acks.forget(id);
            return Err(SendError::AfterTransmission(e));
        }
    };
    let outcome = tokio::time::timeout(wait, rx).await;
    acks.forget(id);
    match outcome {
        Ok(Ok(AckOutcome::Accepted(at))) => Ok((SendAck { at, echo: None }, sent)),
        Ok(Ok(AckOutcome::Rejected(code))) => Err(SendError::Refused(code)),
        Ok(Err(_)) | Err(_) => Err(SendError::NoAck),
    }
}

/// Upload what needs uploading and send `message` through `client` with its journaled id.
/// Returns the protobuf sent (with the upload's CDN parameters), for the own-send echo.
pub async fn hand_over(
    client: &Client,
    message: &OutboundMessage,
) -> Result<wa::Message, HandOver> {
    let to: Jid = message
        .recipient
        .parse()
        .map_err(|_| HandOver::Before(anyhow::anyhow!("the recipient is not a JID")))?;
    let body = match &message.content {
        OutboundContent::Text(t) => wa::Message::text(t.clone()),
        OutboundContent::Media {
            kind,
            mime_type,
            data,
            filename,
            caption,
            seconds,
        } => {
            let media_type = match kind {
                MediaKind::Image => MediaType::Image,
                MediaKind::Video => MediaType::Video,
                MediaKind::Audio => MediaType::Audio,
                MediaKind::Document => MediaType::Document,
            };
            // A photo's thumbnail is made while it uploads (it is never worth a send).
            let thumbnail = async {
                match kind {
                    MediaKind::Image => thumbnail::make_off_thread(data.clone()).await,
                    _ => None,
                }
            };
            let (up, thumbnail) = tokio::join!(
                client.upload(data.to_vec(), media_type, UploadOptions::default()),
                thumbnail
            );
            let up = up.map_err(|e| HandOver::Before(anyhow::anyhow!("media upload: {e}")))?;
            let mimetype = Some(mime_type.clone());
            match kind {
                MediaKind::Image => with_thumbnail(
                    whatsapp_rust::media::image_message(
                        up,
                        ImageOptions {
                            caption: caption.clone(),
                            mimetype,
                            ..ImageOptions::default()
                        },
                    ),
                    thumbnail,
                ),
                MediaKind::Video => whatsapp_rust::media::video_message(
                    up,
                    VideoOptions {
                        caption: caption.clone(),
                        mimetype,
                        duration_seconds: *seconds,
                        ..VideoOptions::default()
                    },
                ),
                MediaKind::Audio => whatsapp_rust::media::audio_message(
                    up,
                    AudioOptions {
                        mimetype,
                        duration_seconds: *seconds,
                        ptt: Some(false),
                        ..AudioOptions::default()
                    },
                ),
                MediaKind::Document => whatsapp_rust::media::document_message(
                    up,
                    DocumentOptions {
                        mimetype,
                        file_name: filename.clone(),
                        title: filename.clone(),
                        caption: caption.clone(),
                        ..DocumentOptions::default()
                    },
                ),
            }
        }
        OutboundContent::Voice { data, seconds } => {
            let up = client
                .upload(data.to_vec(), MediaType::Audio, UploadOptions::default())
                .await
                .map_err(|e| HandOver::Before(anyhow::anyhow!("voice upload: {e}")))?;
            whatsapp_rust::media::audio_message(
                up,
                AudioOptions {
                    mimetype: Some("audio/ogg; codecs=opus".into()),
                    duration_seconds: Some(*seconds),
                    ptt: Some(true),
                    ..AudioOptions::default()
                },
            )
        }
    };
    let options = SendOptions::default().with_message_id(message.wa_id.clone());
    match client
        .send_message_with_options(to, body.clone(), options)
        .await
    {
        Ok(_) => Ok(body),
        Err(
            e @ (whatsapp_rust::SendError::NotLoggedIn
            | whatsapp_rust::SendError::InvalidRequest(_)),
        ) => Err(HandOver::Before(anyhow::anyhow!("{e}"))),
        // Anything else may have failed after the stanza was written: never retransmit.
        Err(e) => Err(HandOver::After(anyhow::anyhow!("send: {e}"))),
    }
}

/// `message`'s photo with `thumbnail` and the full image's size (`ImageOptions` carries only
/// the thumbnail; clients size the bubble from width and height before downloading).
pub fn with_thumbnail(mut message: wa::Message, thumbnail: Option<Thumbnail>) -> wa::Message {
    if let (Some(t), Some(image)) = (thumbnail, message.image_message.as_option_mut()) {
        image.jpeg_thumbnail = Some(t.jpeg);
        image.width = Some(t.width);
        image.height = Some(t.height);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use whatsapp_rust::types::events::ServerAck;

    fn ack(id: &str, class: Option<&str>, error: Option<&str>) -> Event {
        Event::ServerAck(
            ServerAck::builder()
                .id(id.to_owned())
                .maybe_class(class.map(str::to_owned))
                .timestamp("2026-01-02T03:04:05Z".parse().unwrap())
                .maybe_error(error.map(str::to_owned))
                .build(),
        )
    }

    #[tokio::test]
    async fn the_ack_for_the_id_accepts_with_the_server_time() {
        let acks = std::sync::Arc::new(Acks::default());
        let feeder = acks.clone();
        let out = transmit(&acks, "3EB0AA", Duration::from_secs(5), async move {
            // Acks for other ids and other stanza classes do not count.
            feeder.on_event(&ack("3EB0BB", Some("message"), None));
            feeder.on_event(&ack("3EB0AA", Some("receipt"), None));
            feeder.on_event(&ack("3EB0AA", Some("message"), None));
            Ok(())
        })
        .await
        .unwrap()
        .0;
        assert_eq!(
            out.at,
            "2026-01-02T03:04:05Z"
                .parse::<chrono::DateTime<Utc>>()
                .unwrap()
        );
        assert!(acks.lock().is_empty());
    }

    #[tokio::test]
    async fn no_ack_in_time_is_no_ack_and_a_nack_is_after_transmission() {
        let acks = Acks::default();
        let out = transmit(&acks, "3EB0AA", Duration::from_millis(20), async { Ok(()) }).await;
        let out = out.map(|(a, ())| a);
        assert!(matches!(out, Err(SendError::NoAck)), "{out:?}");
        assert!(acks.lock().is_empty());

        let acks = std::sync::Arc::new(Acks::default());
        let feeder = acks.clone();
        let out = transmit(&acks, "3EB0CC", Duration::from_secs(5), async move {
            feeder.on_event(&ack("3EB0CC", None, Some("479")));
            Ok(())
        })
        .await;
        assert!(
            matches!(&out, Err(SendError::Refused(code)) if code == "479"),
            "{out:?}"
        );
    }

    #[test]
    fn a_photo_carries_its_thumbnail_and_size() {
        let photo = || wa::Message {
            image_message: whatsapp_rust::waproto::buffa::MessageField::some(Default::default()),
            ..Default::default()
        };
        let t = Thumbnail {
            jpeg: vec![0xFF, 0xD8, 0xFF, 0xD9],
            width: 4000,
            height: 3000,
        };
        let m = with_thumbnail(photo(), Some(t.clone()));
        let image = m.image_message.as_option().unwrap();
        assert_eq!(image.jpeg_thumbnail.as_deref(), Some(&t.jpeg[..]));
        assert_eq!((image.width, image.height), (Some(4000), Some(3000)));
        assert_eq!(with_thumbnail(photo(), None), photo());
        let text = wa::Message::text("hi");
        assert_eq!(with_thumbnail(text.clone(), Some(t)), text);
    }

    #[tokio::test]
    async fn hand_over_errors_keep_their_side_of_the_socket_write() {
        let acks = Acks::default();
        let out = transmit::<()>(&acks, "3EB0AA", Duration::from_secs(5), async {
            Err(HandOver::Before(anyhow::anyhow!("upload failed")))
        })
        .await;
        assert!(
            matches!(out, Err(SendError::BeforeTransmission(_))),
            "{out:?}"
        );
        let out = transmit::<()>(&acks, "3EB0AB", Duration::from_secs(5), async {
            Err(HandOver::After(anyhow::anyhow!("socket closed")))
        })
        .await;
        assert!(
            matches!(out, Err(SendError::AfterTransmission(_))),
            "{out:?}"
        );
        assert!(acks.lock().is_empty());
    }
}
