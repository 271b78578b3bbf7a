//! The gates before the journal: opaque chat ids only, read scope, send permission (with its
//! revision rules), and a session that can send.

use std::time::Duration;

use wazap_shared::ErrorCode;
use wazap_shared::grant::{ConnectionKind, VerifiedGrant};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::SyncState;
use wazap_shared::wire::grants::{ChatSelection, ReadScope, SendMode};
use wazap_shared::wire::send::SendState;
use wazap_shared::wire::sim::SetState;
use wazap_worker::grants::{PermissionEdit, PermissionError, set_send_permission};

use super::{Sending, connection, send_text};

#[tokio::test]
async fn only_a_connected_session_sends_but_status_always_answers() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let sent = s.text(&s.chat, "before", "hello").await?;
    assert_eq!(sent.state, SendState::Accepted);
    for state in [
        SyncState::Offline,
        SyncState::Paused,
        SyncState::Unpaired,
        SyncState::Demo,
    ] {
        s.stack.sim(sim_op::SET_STATE, &SetState { state }).await?;
        let fresh = s.text(&s.chat, "during", "hello again").await.unwrap_err();
        assert_eq!(fresh.code, ErrorCode::SessionCannotSend, "{state:?}");
        assert!(fresh.message.contains(state.as_str()), "{}", fresh.message);
        // Also an identical repeat of a request that was accepted.
        let repeat = s.text(&s.chat, "before", "hello").await.unwrap_err();
        assert_eq!(repeat.code, ErrorCode::SessionCannotSend);
        // get_send_status is how outcomes are read meanwhile.
        let status = s.status("before").await?;
        assert_eq!(status.state, SendState::Accepted);
    }
    assert_eq!(s.transmissions().await?.len(), 1);
    assert_eq!(
        s.status("during").await.unwrap_err().code,
        ErrorCode::NotFound,
        "a refused send reserves nothing"
    );
    s.stack
        .sim(
            sim_op::SET_STATE,
            &SetState {
                state: SyncState::CatchingUp,
            },
        )
        .await?;
    assert_eq!(
        s.text(&s.chat, "during", "hello again").await?.state,
        SendState::Accepted
    );
    Ok(())
}

#[tokio::test]
async fn send_permission_decides_and_read_only_transmits_nothing() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let read_only = connection(&s.stack, SendMode::None, vec![]).await?;
    let e = send_text(&s.stack, &read_only, &s.chat, "k1", "hi")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SendNotPermitted);

    let selected = connection(&s.stack, SendMode::Selected, vec![s.chat.clone()]).await?;
    assert_eq!(
        send_text(&s.stack, &selected, &s.chat, "k1", "hi")
            .await?
            .state,
        SendState::Accepted
    );
    let e = send_text(&s.stack, &selected, &s.other, "k2", "hi")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::SendNotPermitted);
    assert_eq!(s.transmissions().await?.len(), 1);

    // Taking the permission away also closes get_send_status for that chat.
    set_send_permission(
        &s.stack.pool,
        PermissionEdit {
            id: selected.connection_id.clone(),
            revision: None,
            mode: SendMode::None,
            chats: vec![],
            expected_send_revision: Some(1),
        },
    )
    .await?;
    let e = wazap_shared::bus::call::<wazap_shared::wire::send::GetSendStatus>(
        &s.stack.nats,
        &s.stack.subjects,
        Some(&selected),
        &wazap_shared::wire::send::GetSendStatusRequest {
            request_id: "k1".into(),
        },
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::SendNotPermitted);

    // `all` never extends the read scope: a chat outside it is not found.
    let (id, _) = s
        .stack
        .token_with(
            ReadScope {
                chats: ChatSelection::Selected {
                    chats: vec![s.chat.clone()],
                },
                since: None,
                until: None,
            },
            ConnectionKind::Local,
            Duration::from_secs(600),
        )
        .await?;
    set_send_permission(
        &s.stack.pool,
        PermissionEdit {
            id: id.clone(),
            revision: Some(0),
            mode: SendMode::All,
            chats: vec![],
            expected_send_revision: None,
        },
    )
    .await?;
    let scoped = VerifiedGrant {
        connection_id: id,
        revision: 0,
        loopback: true,
    };
    let e = send_text(&s.stack, &scoped, &s.other, "k3", "hi")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ChatNotFound);
    assert_eq!(s.transmissions().await?.len(), 1);
    Ok(())
}

#[tokio::test]
async fn permission_edits_follow_the_revision_rules() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    let id = s.grant.connection_id.clone();
    let edit = |mode, chats: Vec<String>, revision, expected| PermissionEdit {
        id: id.clone(),
        revision,
        mode,
        chats,
        expected_send_revision: expected,
    };
    // Sending::start set `all` once: send revision 1.
    let stale = set_send_permission(&s.stack.pool, edit(SendMode::None, vec![], None, Some(0)))
        .await
        .unwrap_err();
    assert_eq!(stale, PermissionError::Stale);
    let stale = set_send_permission(&s.stack.pool, edit(SendMode::None, vec![], Some(1), None))
        .await
        .unwrap_err();
    assert_eq!(stale, PermissionError::Stale, "a stale credential revision");
    for (mode, chats) in [
        (SendMode::Selected, vec![]),
        (SendMode::Selected, vec![s.chat.clone(), s.chat.clone()]),
        (
            SendMode::Selected,
            vec!["c_00000000000000000000".to_owned()],
        ),
        (SendMode::Selected, vec!["+972503330001".to_owned()]),
        (SendMode::All, vec![s.chat.clone()]),
    ] {
        let e = set_send_permission(&s.stack.pool, edit(mode, chats, None, None))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, PermissionError::Rejected(r) if r.code == ErrorCode::InvalidArgument),
            "{e:?}"
        );
    }
    let p = set_send_permission(
        &s.stack.pool,
        edit(SendMode::Selected, vec![s.other.clone()], Some(0), Some(1)),
    )
    .await?;
    assert_eq!((p.mode, p.revision), (SendMode::Selected, 2));
    // The token keeps working (the credential revision did not move), only where it may send.
    assert_eq!(
        s.text(&s.chat, "k", "hi").await.unwrap_err().code,
        ErrorCode::SendNotPermitted
    );
    assert_eq!(
        s.text(&s.other, "k", "hi").await?.state,
        SendState::Accepted
    );
    Ok(())
}

#[tokio::test]
async fn send_tools_take_only_opaque_chat_ids() -> anyhow::Result<()> {
    let s = Sending::start().await?;
    for chat in [
        "+972503330001",
        "972503330001",
        "972503330001@s.whatsapp.net",
        "https://wa.me/972503330001",
        "status",
    ] {
        let e = s.text(chat, "k", "hi").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{chat}");
        assert!(e.message.starts_with("chat_id"), "{}", e.message);
    }
    let e = s.text(&s.chat, "bad key", "hi").await.unwrap_err();
    assert!(e.message.starts_with("request_id"));
    let e = s.text(&s.chat, "k", "").await.unwrap_err();
    assert!(e.message.starts_with("text"));
    let e = s
        .text("c_00000000000000000000", "k", "hi")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ChatNotFound);
    assert!(s.transmissions().await?.is_empty());
    Ok(())
}
