//! The journal: accepted and archived at once, replays, conflicts, simultaneous calls, outcomes
//! after the hand-over, and the 100,000-key cap.

use wazap_shared::ErrorCode;
use wazap_shared::wire::send::SendState;
use wazap_shared::wire::sim::ArmSendFault;
use wazap_tests::fixtures::{minutes_ago, person, text};

use super::Sending;

#[tokio::test]
async fn accepted_send_is_archived_and_replays_without_transmitting() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let first = s.text(&s.chat, "reply-1", "see you at 8").await?;
    assert_eq!(first.state, SendState::Accepted);
    assert!(!first.duplicate);
    assert!(first.accepted_at.is_some());
    assert_eq!(first.chat_id, s.chat);
    let message_id = first.message_id.clone().expect("a message id");

    // The own reply is in the archive at once, from_me, under the returned id.
    let read = s.read(&s.chat).await?;
    let own = read
        .messages
        .iter()
        .find(|m| m.message_id == message_id)
        .expect("the echo is archived");
    assert!(own.from_me);
    assert_eq!(own.text, "see you at 8");
    assert!(read.unconfirmed_sends.is_empty());

    // The same key and text: the saved outcome, nothing transmitted again.
    let again = s.text(&s.chat, "reply-1", "see you at 8").await?;
    assert!(again.duplicate);
    assert_eq!(again.state, SendState::Accepted);
    assert_eq!(again.message_id, first.message_id);
    assert_eq!(again.accepted_at, first.accepted_at);
    let status = s.status("reply-1").await?;
    assert_eq!(
        (status.state, status.duplicate),
        (SendState::Accepted, true)
    );
    assert_eq!(s.transmissions().await?.len(), 1);

    // The same key with another text or another chat is a conflict.
    let other_text = s
        .text(&s.chat, "reply-1", "see you at 9")
        .await
        .unwrap_err();
    assert_eq!(other_text.code, ErrorCode::SendRequestConflict);
    let other_chat = s
        .text(&s.other, "reply-1", "see you at 8")
        .await
        .unwrap_err();
    assert_eq!(other_chat.code, ErrorCode::SendRequestConflict);
    assert_eq!(s.transmissions().await?.len(), 1);

    let unknown = s.status("never-sent").await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
    Ok(())
}

#[tokio::test]
async fn simultaneous_identical_calls_transmit_once() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    // A slow ack keeps the first call in flight while the others arrive.
    s.arm(ArmSendFault {
        ack_delay_ms: Some(300),
        ..Default::default()
    })
    .await?;
    let calls = (0..20).map(|_| s.text(&s.chat, "same-key", "only once"));
    let results = futures::future::join_all(calls).await;
    let results: Vec<_> = results.into_iter().collect::<Result<_, _>>()?;
    assert_eq!(
        s.transmissions().await?.len(),
        1,
        "exactly one transmission"
    );
    assert!(results.iter().all(|r| r.state == SendState::Accepted));
    assert!(
        results
            .iter()
            .all(|r| r.message_id == results[0].message_id
                && r.accepted_at == results[0].accepted_at)
    );
    assert_eq!(results.iter().filter(|r| !r.duplicate).count(), 1);
    let replay = s.text(&s.chat, "same-key", "only once").await?;
    assert!(replay.duplicate);
    assert_eq!(s.transmissions().await?.len(), 1);
    Ok(())
}

#[tokio::test]
async fn outcomes_after_the_hand_over_are_unknown_and_never_retransmitted() -> anyhow::Result<()> {
    let s = Sending::start().await?;

    s.arm(ArmSendFault {
        no_ack: true,
        no_ack_wait_ms: Some(300),
        ..Default::default()
    })
    .await?;
    let lost = s.text(&s.chat, "k-noack", "did this arrive?").await?;
    assert_eq!(lost.state, SendState::OutcomeUnknown);
    assert!(lost.accepted_at.is_none());

    s.arm(ArmSendFault {
        error_after_transmit: true,
        ..Default::default()
    })
    .await?;
    let err = s.text(&s.chat, "k-error", "second try").await?;
    assert_eq!(err.state, SendState::OutcomeUnknown);

    s.arm(ArmSendFault {
        fail_upload: true,
        ..Default::default()
    })
    .await?;
    let failed = s.text(&s.chat, "k-failed", "never left").await?;
    assert_eq!(failed.state, SendState::Failed);
    assert_eq!(
        s.transmissions().await?.len(),
        2,
        "the failed one never left"
    );

    // Replays answer the saved outcomes and transmit nothing.
    for (key, body, state) in [
        ("k-noack", "did this arrive?", SendState::OutcomeUnknown),
        ("k-error", "second try", SendState::OutcomeUnknown),
        ("k-failed", "never left", SendState::Failed),
    ] {
        let r = s.text(&s.chat, key, body).await?;
        assert_eq!((r.state, r.duplicate), (state, true), "{key}");
    }
    assert_eq!(s.transmissions().await?.len(), 2);

    // The unknown ones wait in the outbox: read_messages lists them for this connection.
    let read = s.read(&s.chat).await?;
    let drafts: Vec<(&str, &str)> = read
        .unconfirmed_sends
        .iter()
        .map(|u| (u.draft_id.as_str(), u.text.as_str()))
        .collect();
    assert_eq!(
        drafts,
        vec![("k-noack", "did this arrive?"), ("k-error", "second try")]
    );
    assert!(read.unconfirmed_sends.iter().all(|u| u.state == "unknown"));

    // WhatsApp's echo of the first one arrives later: it leaves the list, and is archived.
    let log = s.transmissions().await?;
    let mut echo = text(
        &person("972503330001"),
        &log[0].wa_id,
        minutes_ago(0),
        "did this arrive?",
    );
    echo.from_me = true;
    s.stack.inject(echo).await?;
    let read = s.read(&s.chat).await?;
    assert_eq!(read.unconfirmed_sends.len(), 1);
    assert_eq!(read.unconfirmed_sends[0].draft_id, "k-error");
    assert!(
        read.messages
            .iter()
            .any(|m| Some(&m.message_id) == lost.message_id.as_ref() && m.from_me)
    );
    // Another connection never sees this one's unconfirmed sends.
    let other =
        super::connection(&s.stack, wazap_shared::wire::grants::SendMode::None, vec![]).await?;
    assert!(
        super::read(&s.stack, &other, &s.chat)
            .await?
            .unconfirmed_sends
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn the_journal_fails_closed_at_100000_keys() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let conn = s.grant.connection_id.clone();
    // 99,999 earlier keys of this credential.
    s.stack
        .sql(&format!(
            "insert into send_journal (connection_id, request_id, tool, account_id, chat_id,
                 digest, recipient, wa_id, message_id, state)
             select '{conn}', 'old-' || i, 'send_message', 'default', '{chat}',
                    '\\x00', 'x@s.whatsapp.net', 'W' || i, 'm_' || i, 'accepted'
               from generate_series(1, 99999) i;
             insert into send_journal_keys (connection_id, keys) values ('{conn}', 99999)
             on conflict (connection_id) do update set keys = 99999;",
            chat = s.chat
        ))
        .await?;
    let last = s.text(&s.chat, "key-100000", "the last one").await?;
    assert_eq!(last.state, SendState::Accepted);
    let full = s
        .text(&s.chat, "key-100001", "one too many")
        .await
        .unwrap_err();
    assert_eq!(full.code, ErrorCode::SendJournalFull);
    assert_eq!(s.transmissions().await?.len(), 1);
    // Nothing is forgotten: an old key still answers from the journal.
    let old = s.status("old-7").await?;
    assert_eq!((old.state, old.duplicate), (SendState::Accepted, true));
    let reuse = s.text(&s.chat, "old-7", "different").await.unwrap_err();
    assert_eq!(reuse.code, ErrorCode::SendRequestConflict);
    // Other credentials have their own journals.
    let other =
        super::connection(&s.stack, wazap_shared::wire::grants::SendMode::All, vec![]).await?;
    let r = super::send_text(&s.stack, &other, &s.chat, "key-100001", "one too many").await?;
    assert_eq!(r.state, SendState::Accepted);
    Ok(())
}
