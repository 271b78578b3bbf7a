//! The library's receipts → [`Receipt`]s for the journal: a recipient's device saying a message
//! was delivered, read or played. Everything else the library reports as a receipt is not about
//! whether the recipient got it: retries (the device could not decrypt; the library resends),
//! our own devices' `sender`/`read-self`/`played-self`/`peer_msg`/history acknowledgements,
//! `sent` (a peer that cannot take the message), `inactive` and server errors. A receipt from
//! the account's own user is dropped too, whatever its type: only another person's device can
//! say a message reached them.

use whatsapp_rust::Jid;
use whatsapp_rust::types::events::Receipt as LibReceipt;
use whatsapp_rust::types::presence::ReceiptType;

use crate::connector::outbound::{Receipt, ReceiptKind};

/// The kind of a receipt type the journal records, if it is one.
pub fn kind(t: &ReceiptType) -> Option<ReceiptKind> {
    match t {
        ReceiptType::Delivered => Some(ReceiptKind::Delivered),
        ReceiptType::Read => Some(ReceiptKind::Read),
        ReceiptType::Played => Some(ReceiptKind::Played),
        _ => None,
    }
}

/// `r` as a receipt of `account`'s sent messages, unless it is none (see the module doc);
/// `own` are the account's own JIDs (phone and LID) as far as the client knows them.
pub fn from_event(account: &str, r: &LibReceipt, own: &[Jid]) -> Option<Receipt> {
    let kind = kind(&r.r#type)?;
    let from_own = [Some(&r.source.sender), r.source.sender_alt.as_ref()]
        .into_iter()
        .flatten()
        .any(|s| own.iter().any(|o| o.user == s.user && o.server == s.server));
    let wa_ids: Vec<String> = r
        .message_ids
        .iter()
        .filter(|id| !id.is_empty())
        .cloned()
        .collect();
    if from_own || wa_ids.is_empty() {
        return None;
    }
    Some(Receipt {
        account_id: account.to_owned(),
        wa_ids,
        kind,
        at: r.timestamp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use whatsapp_rust::types::message::MessageSource;

    fn receipt(t: ReceiptType, sender: &str, ids: &[&str]) -> LibReceipt {
        let sender: Jid = sender.parse().unwrap();
        LibReceipt::builder()
            .source(MessageSource {
                chat: sender.clone(),
                sender,
                ..MessageSource::default()
            })
            .message_ids(ids.iter().map(|s| (*s).to_owned()).collect())
            .timestamp("2026-01-02T03:04:05Z".parse().unwrap())
            .r#type(t)
            .offline(false)
            .build()
    }

    #[test]
    fn delivered_read_and_played_from_someone_else_count() {
        let own: Vec<Jid> = vec!["15559999999@s.whatsapp.net".parse().unwrap()];
        let alice = "15550001111:3@s.whatsapp.net";
        let r = from_event(
            "default",
            &receipt(ReceiptType::Read, alice, &["3EB0A", "3EB0B"]),
            &own,
        )
        .unwrap();
        assert_eq!(r.wa_ids, ["3EB0A", "3EB0B"]);
        assert_eq!(
            (r.kind, r.account_id.as_str()),
            (ReceiptKind::Read, "default")
        );
        assert_eq!(
            r.at,
            "2026-01-02T03:04:05Z"
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
        );
        for (t, k) in [
            (ReceiptType::Delivered, ReceiptKind::Delivered),
            (ReceiptType::Played, ReceiptKind::Played),
        ] {
            assert_eq!(
                from_event("default", &receipt(t, alice, &["3EB0A"]), &own)
                    .unwrap()
                    .kind,
                k
            );
        }
    }

    #[test]
    fn other_types_own_devices_and_empty_ids_do_not() {
        let own: Vec<Jid> = vec!["15559999999@s.whatsapp.net".parse().unwrap()];
        let alice = "15550001111@s.whatsapp.net";
        for t in [
            ReceiptType::Retry,
            ReceiptType::Sender,
            ReceiptType::Sent,
            ReceiptType::ReadSelf,
            ReceiptType::PlayedSelf,
            ReceiptType::PeerMsg,
            ReceiptType::Inactive,
            ReceiptType::ServerError,
            ReceiptType::HistorySync,
        ] {
            assert_eq!(
                from_event("default", &receipt(t.clone(), alice, &["3EB0A"]), &own),
                None,
                "{t:?}"
            );
        }
        // The account's own phone (device 0 of its user) is not a recipient.
        let phone = "15559999999:0@s.whatsapp.net";
        assert_eq!(
            from_event(
                "default",
                &receipt(ReceiptType::Delivered, phone, &["3EB0A"]),
                &own
            ),
            None
        );
        assert_eq!(
            from_event(
                "default",
                &receipt(ReceiptType::Delivered, alice, &[""]),
                &own
            ),
            None
        );
    }
}
