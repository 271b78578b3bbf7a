//! What a phone received, recorded for tests to read and wait on (history requests from its
//! companion go to the phone's history task instead).

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use whatsapp_rust::types::events::{Event, EventHandler};
use whatsapp_rust::waproto::whatsapp as wa;

/// A message a phone received.
#[derive(Debug, Clone)]
pub struct Received {
    /// WhatsApp's message id.
    pub id: String,
    /// The chat (the sender for a direct message, the group for a group message).
    pub chat: String,
    /// Who sent it (the account, for a group message the member).
    pub sender: String,
    /// Whether the account itself sent it (from another of its devices).
    pub from_me: bool,
    /// The text (or a media caption), if any.
    pub text: Option<String>,
    /// The media kind when it carries a file (`image`, `video`, `audio`, `document`), and
    /// whether an audio is a voice note (PTT).
    pub media: Option<(&'static str, bool)>,
    /// A photo's or video's JPEG thumbnail and its stated width and height, if it carries them.
    pub thumbnail: Option<Vec<u8>>,
    pub size: Option<(u32, u32)>,
}

/// What a phone saw, for tests to wait on.
pub(super) struct Seen {
    pub(super) messages: Mutex<Vec<Received>>,
    /// Received messages by id (for downloads).
    pub(super) bodies: Mutex<std::collections::HashMap<String, Arc<wa::Message>>>,
    pub(super) changed: Notify,
    /// Files of received messages, by message id (what the phone can upload again).
    pub(super) files: Mutex<std::collections::HashMap<String, Vec<u8>>>,
    /// Received messages with a file, for the phone to download.
    pub(super) to_keep: tokio::sync::mpsc::UnboundedSender<String>,
    pub(super) requests: tokio::sync::mpsc::UnboundedSender<crate::history::Request>,
}

impl Seen {
    /// The received message `id`.
    pub(super) fn body(&self, id: &str) -> Option<Arc<wa::Message>> {
        self.bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// The file of the received message `id`, if the phone downloaded it.
    pub(super) fn file(&self, id: &str) -> Option<Vec<u8>> {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Keep the file of the received message `id`.
    pub(super) fn keep_file(&self, id: &str, bytes: Vec<u8>) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned(), bytes);
    }
}

pub(super) struct Collect(pub(super) Arc<Seen>);

impl EventHandler for Collect {
    fn handle_event(&self, event: Arc<Event>) {
        if let Event::Messages(batch) = &*event {
            let mut m = self.0.messages.lock().unwrap_or_else(|p| p.into_inner());
            for item in batch.messages.iter() {
                let msg = &item.message;
                if let Some(r) = crate::history::request(&item.info.id, msg) {
                    let _ = self.0.requests.send(r);
                    continue;
                }
                let msg = &wacore_unwrap(msg);
                let media = if msg.image_message.is_set() {
                    Some(("image", false))
                } else if msg.video_message.is_set() {
                    Some(("video", false))
                } else if let Some(a) = msg.audio_message.as_option() {
                    Some(("audio", a.ptt.unwrap_or(false)))
                } else if msg.document_message.is_set() {
                    Some(("document", false))
                } else {
                    None
                };
                let text = msg
                    .conversation
                    .clone()
                    .or_else(|| {
                        msg.extended_text_message
                            .as_option()
                            .and_then(|e| e.text.clone())
                    })
                    .or_else(|| {
                        msg.image_message
                            .as_option()
                            .and_then(|i| i.caption.clone())
                    })
                    .or_else(|| {
                        msg.video_message
                            .as_option()
                            .and_then(|i| i.caption.clone())
                    })
                    .or_else(|| {
                        msg.document_message
                            .as_option()
                            .and_then(|i| i.caption.clone())
                    });
                let (thumbnail, size) = if let Some(i) = msg.image_message.as_option() {
                    (i.jpeg_thumbnail.clone(), i.width.zip(i.height))
                } else if let Some(v) = msg.video_message.as_option() {
                    (v.jpeg_thumbnail.clone(), v.width.zip(v.height))
                } else {
                    (None, None)
                };
                self.0
                    .bodies
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(item.info.id.to_string(), Arc::new(msg.clone()));
                if media.is_some() {
                    let _ = self.0.to_keep.send(item.info.id.to_string());
                }
                m.push(Received {
                    id: item.info.id.to_string(),
                    chat: item.info.source.chat.to_non_ad_string(),
                    sender: item.info.source.sender.to_non_ad_string(),
                    from_me: item.info.source.is_from_me,
                    text,
                    media,
                    thumbnail,
                    size,
                });
            }
            self.0.changed.notify_waiters();
        }
    }
}

/// The message inside a device-sent wrapper (what the account sent from another device).
pub(super) fn wacore_unwrap(msg: &wa::Message) -> wa::Message {
    whatsapp_rust::wacore::messages::unwrap_device_sent(msg.clone())
}
