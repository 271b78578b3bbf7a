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
    let (id, token) = s
        .stack
        .token_with(
            ReadScope {
                chats: ChatSelection::Selected {
                    chats: vec![s.chat.clone()],
                },
                since: None,
                until: None,
                ..ReadScope::all()
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
        token,
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
    assert!(matches!(stale, PermissionError::Stale), "{stale:?}");
    let stale = set_send_permission(&s.stack.pool, edit(SendMode::None, vec![], Some(1), None))
        .await
        .unwrap_err();
    assert!(
        matches!(stale, PermissionError::Stale),
        "a stale credential revision: {stale:?}"
    );
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
            matches!(&e, PermissionError::Rejected(r) if r.code() == ErrorCode::InvalidArgument),
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

/// A connection and a chat seen accepted at earlier sends reserve the next send by one
/// statement, on what the worker remembered, with Postgres checking that in the same statement
/// (`send::fast`): whatever the owner or WhatsApp changed in between must still decide the
/// very next send, and a refused send reserves and transmits nothing.
#[tokio::test]
async fn a_change_since_the_last_send_decides_the_very_next_one() -> anyhow::Result<()> {
    use wazap_shared::wire::owner::SetPolicyRequest;
    use wazap_worker::owner::policy;

    let s = Sending::start().await?;
    let accepted = async |key: &str| -> anyhow::Result<()> {
        let sent = s.text(&s.chat, key, "hi").await?;
        anyhow::ensure!(sent.state == SendState::Accepted, "{key}: {:?}", sent.state);
        Ok(())
    };
    let refused = async |key: &str, code: ErrorCode| -> anyhow::Result<()> {
        let e = s.text(&s.chat, key, "hi").await.unwrap_err();
        anyhow::ensure!(e.code == code, "{key}: {:?}", e.code);
        let status = s.status(key).await.unwrap_err();
        anyhow::ensure!(status.code == ErrorCode::NotFound, "{key} was reserved");
        Ok(())
    };
    // The first send is remembered; the second is sent on what was remembered.
    accepted("a1").await?;
    accepted("a2").await?;

    // Send permission moved to another chat, then given back.
    let edit = |mode, chats, expected| PermissionEdit {
        id: s.grant.connection_id.clone(),
        revision: None,
        mode,
        chats,
        expected_send_revision: Some(expected),
    };
    set_send_permission(
        &s.stack.pool,
        edit(SendMode::Selected, vec![s.other.clone()], 1),
    )
    .await?;
    refused("b1", ErrorCode::SendNotPermitted).await?;
    set_send_permission(&s.stack.pool, edit(SendMode::All, vec![], 2)).await?;
    accepted("b2").await?;
    accepted("b3").await?;

    // The archive policy excludes the chat, then lets it in again.
    let revision = policy::get(&s.stack.pool).await?.revision;
    let excluded = |chats, revision| SetPolicyRequest {
        excluded_chats: chats,
        revision,
    };
    policy::set(&s.stack.pool, excluded(vec![s.chat.clone()], revision)).await?;
    refused("c1", ErrorCode::ChatNotFound).await?;
    policy::set(&s.stack.pool, excluded(vec![], revision + 1)).await?;
    accepted("c2").await?;
    accepted("c3").await?;

    // The chat's address changed: the next send goes to the new one.
    let moved = "972503339999@s.whatsapp.net";
    s.stack
        .pool
        .get()
        .await?
        .execute(
            "update chats set jid = $2 where chat_id = $1",
            &[&s.chat, &moved],
        )
        .await?;
    accepted("d1").await?;
    let log = s.transmissions().await?;
    assert_eq!(log.last().map(|t| t.recipient.as_str()), Some(moved));

    // A token of another credential revision (as after a rotation elsewhere), and a local
    // connection's token used from elsewhere: each refused, the right token then accepted.
    let now = chrono::Utc::now().timestamp();
    let stale = VerifiedGrant {
        revision: s.grant.revision + 1,
        token: s
            .stack
            .sign(&serde_json::json!({
                "sub": s.grant.connection_id, "rev": s.grant.revision + 1, "aud": "wazap",
                "exp": now + 600, "iat": now, "kind": "local",
            }))
            .await?,
        ..s.grant.clone()
    };
    let elsewhere = VerifiedGrant {
        loopback: false,
        ..s.grant.clone()
    };
    for (key, wrong) in [("e0", stale), ("e1", elsewhere)] {
        let e = send_text(&s.stack, &wrong, &s.chat, key, "hi")
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthenticated, "{key}");
        accepted(&format!("{key}-after")).await?;
    }
    // Then the connection revoked.
    wazap_worker::grants::revoke_connection(&s.stack.pool, &s.grant.connection_id).await?;
    let e = s.text(&s.chat, "e3", "hi").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Unauthenticated);

    // Exactly the accepted sends left: a1 a2 b2 b3 c2 c3 d1 e0-after e1-after.
    assert_eq!(s.transmissions().await?.len(), 9);
    Ok(())
}
