//! The session state fold: real library events in, `sync` and pairing out.

use std::time::Duration;

use wazap_shared::wire::SyncState;
use wazap_worker::connector::whatsapp::status::{Phase, Status};
use whatsapp_rust::types::events::{
    ConnectFailureReason, Connected, Disconnected, Event, LazyHistorySync, LoggedOut,
    OfflineSyncCompleted, OfflineSyncPreview, PairSuccess, PairingCode, PairingQrCode,
    PairingQrCodesExhausted, StreamReplaced,
};
use whatsapp_rust::wacore::net::DisconnectReason;

use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    ts() + chrono::TimeDelta::seconds(secs)
}

fn connected() -> Event {
    Event::Connected(Connected::builder().build())
}

fn dropped() -> Event {
    Event::Disconnected(
        Disconnected::builder()
            .reason(DisconnectReason::StreamEnded)
            .build(),
    )
}

fn preview(total: i32) -> Event {
    Event::OfflineSyncPreview(
        OfflineSyncPreview::builder()
            .total(total)
            .app_data_changes(0)
            .messages(total)
            .notifications(0)
            .receipts(0)
            .calls(0)
            .statuses(0)
            .build(),
    )
}

fn history(progress: Option<u32>) -> Event {
    Event::HistorySync(Box::new(LazyHistorySync::new(
        bytes::Bytes::new(),
        0,
        3,
        Some(1),
        progress,
    )))
}

#[test]
fn pairing_shows_codes_until_they_expire_then_links() {
    let mut s = Status::default();
    assert_eq!(s.sync(at(0)), SyncState::Offline, "nothing known yet");
    s.started(false);
    assert_eq!(s.sync(at(0)), SyncState::Unpaired);
    s.apply(
        &Event::PairingQrCode(
            PairingQrCode::builder()
                .code("2@abc,def".into())
                .timeout(Duration::from_secs(60))
                .build(),
        ),
        at(0),
    );
    assert_eq!(s.pairing(at(59)).qr.as_deref(), Some("2@abc,def"));
    assert_eq!(s.pairing(at(59)).qr_expires_at, Some(at(60)));
    assert_eq!(s.pairing(at(60)).qr, None, "an expired code is not shown");
    s.apply(
        &Event::PairingCode(
            PairingCode::builder()
                .code("ABCD-EFGH".into())
                .timeout(Duration::from_secs(180))
                .build(),
        ),
        at(1),
    );
    assert_eq!(s.pairing(at(2)).pairing_code.as_deref(), Some("ABCD-EFGH"));
    s.apply(
        &Event::PairingQrCodesExhausted(
            PairingQrCodesExhausted::builder()
                .disconnected(true)
                .build(),
        ),
        at(160),
    );
    assert_eq!(s.pairing(at(160)).qr, None);
    assert!(s.pairing(at(160)).detail.unwrap().contains("expired"));
    assert_eq!(s.sync(at(160)), SyncState::Unpaired);

    let jid: Jid = ALICE.parse().unwrap();
    let lid: Jid = "123456789@lid".parse().unwrap();
    s.apply(
        &Event::PairSuccess(
            PairSuccess::builder()
                .id(jid)
                .lid(lid)
                .business_name(String::new())
                .platform("android".into())
                .build(),
        ),
        at(170),
    );
    assert_eq!(s.sync(at(170)), SyncState::Offline, "linked, reconnecting");
    assert_eq!(s.pairing(at(170)).qr, None);
    s.apply(&connected(), at(171));
    assert_eq!(s.sync(at(171)), SyncState::Live);
    assert_eq!(s.pairing(at(171)), Default::default());
}

#[test]
fn catching_up_while_the_offline_queue_or_history_drains() {
    let mut s = Status::default();
    s.started(true);
    assert_eq!(s.sync(at(0)), SyncState::Offline);
    s.apply(&connected(), at(0));
    s.apply(&preview(0), at(0));
    assert_eq!(
        s.sync(at(0)),
        SyncState::Live,
        "an empty offline queue is live"
    );
    s.apply(&preview(40), at(0));
    assert_eq!(s.sync(at(1)), SyncState::CatchingUp);
    s.apply(
        &Event::OfflineSyncCompleted(OfflineSyncCompleted::builder().count(40).build()),
        at(2),
    );
    assert_eq!(s.sync(at(2)), SyncState::Live);
    assert_eq!(s.history, None, "no history yet");
    s.apply(&history(Some(30)), at(3));
    s.history_archived(12);
    assert_eq!(s.sync(at(4)), SyncState::CatchingUp);
    let tally = s.history.expect("a page was counted");
    assert_eq!(
        (tally.pages, tally.messages, tally.percent),
        (1, 12, Some(30))
    );
    assert_eq!(
        s.sync(at(3 + 121)),
        SyncState::Live,
        "a silent phone does not pin catching_up"
    );
    s.apply(&history(None), at(5));
    s.apply(&history(Some(100)), at(5));
    s.history_archived(3);
    assert_eq!(s.sync(at(6)), SyncState::Live);
    let tally = s.history.expect("pages were counted");
    assert_eq!(
        (tally.pages, tally.messages, tally.percent),
        (3, 15, Some(100)),
        "a page without a percent keeps the last one"
    );
}

#[test]
fn drops_reconnect_but_logout_and_replacement_stop_and_say_so() {
    let mut s = Status::default();
    s.started(true);
    s.apply(&connected(), at(0));
    s.apply(&dropped(), at(1));
    assert_eq!(s.sync(at(1)), SyncState::Offline);
    assert!(!s.needs_owner(), "a drop reconnects by itself");
    assert!(s.pairing(at(1)).detail.unwrap().contains("reconnecting"));
    s.apply(&connected(), at(2));
    assert_eq!(s.sync(at(2)), SyncState::Live);

    s.apply(
        &Event::StreamReplaced(StreamReplaced::builder().build()),
        at(3),
    );
    assert_eq!(
        (s.sync(at(3)), s.phase),
        (SyncState::Offline, Phase::Replaced)
    );
    assert!(s.needs_owner());
    assert!(s.pairing(at(3)).detail.unwrap().contains("another client"));

    s.apply(&connected(), at(4));
    s.apply(
        &Event::LoggedOut(
            LoggedOut::builder()
                .on_connect(false)
                .reason(ConnectFailureReason::LoggedOut)
                .build(),
        ),
        at(5),
    );
    assert_eq!(s.sync(at(5)), SyncState::Unpaired);
    assert!(s.needs_owner());
    assert!(
        s.pairing(at(5))
            .detail
            .unwrap()
            .contains("logged this device out")
    );

    s.paused = true;
    assert_eq!(s.sync(at(6)), SyncState::Paused, "the owner's pause wins");
}
