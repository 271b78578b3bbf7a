//! Group notifications (the library's real `GroupUpdate` events) become `system` messages in
//! the group's chat of the real archive: names instead of numbers, the actor as sender, "you"
//! for the account (addressed to it), one message per notification action.

use std::collections::HashMap;

use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::archive::{ContactUpdate, IngestOutcome};
use wazap_worker::connector::whatsapp::groups::{archive_event, system_message};
use wazap_worker::connector::whatsapp::people::Linked;
use whatsapp_rust::types::events::GroupUpdate;
use whatsapp_rust::wacore::stanza::groups::{
    GroupNotificationAction as Action, GroupParticipantInfo,
};

use super::*;
use crate::common::one;

/// The account's own phone JID.
const OWN: &str = "15559999999@s.whatsapp.net";
/// A member nobody named, shown by WhatsApp as a masked number.
const STRANGER: &str = "15557776666@s.whatsapp.net";
const BOB_LID: &str = "222222222222222@lid";

fn member(jid: &str, display: Option<&str>) -> GroupParticipantInfo {
    GroupParticipantInfo {
        jid: jid.parse().expect("jid"),
        phone_number: None,
        display_name: display.map(str::to_owned),
        r#type: None,
        lid: None,
        username: None,
        join_time: None,
        group_history_sent_state: None,
    }
}

fn update(id: &str, index: u32, actor: Option<&str>, action: Action) -> GroupUpdate {
    GroupUpdate::builder()
        .group_jid(GROUP.parse().expect("group"))
        .notification_id(id.to_owned())
        .action_index(index)
        .maybe_participant(actor.map(|a| a.parse().expect("actor")))
        .timestamp(ts())
        .is_lid_addressing_mode(false)
        .action(action)
        .build()
}

/// (text, from_me, mentions_me, sender is Alice's chat) of the archived message `wa_id`.
async fn row(h: &common::Harness, wa_id: &str) -> (String, String, bool, bool, bool) {
    let r = h
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "select m.kind, m.text, m.from_me, m.mentions_me,
                    m.sender_chat_id is not distinct from
                        (select chat_id from chat_aliases where jid = $2)
               from messages m where m.wa_id = $1",
            &[&wa_id, &ALICE],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
}

#[tokio::test]
async fn membership_and_subject_changes_read_as_system_messages_with_names() {
    let h = common::Harness::start().await;
    let own = vec![OWN.to_owned()];
    let linked = Linked::default();
    // As the connector does on connect: the archive knows the account's own number.
    h.archive
        .set_own_ids(DEFAULT_ACCOUNT, Some(OWN.into()), None)
        .await
        .unwrap();
    for (jid, name) in [(ALICE, "Alice"), (BOB, "Bob")] {
        h.archive
            .upsert_contact(
                DEFAULT_ACCOUNT,
                ContactUpdate {
                    jid: jid.into(),
                    lid: None,
                    name: name.into(),
                },
            )
            .await
            .unwrap();
    }
    let go = |u: GroupUpdate| {
        let (archive, pool, linked, own) = (&h.archive, &h.pool, &linked, &own);
        async move {
            archive_event(archive, pool, linked, DEFAULT_ACCOUNT, own, &u)
                .await
                .unwrap()
        }
    };
    // Alice adds Bob (known by his LID and number) and a stranger.
    let mut bob = member(BOB_LID, None);
    bob.phone_number = Some(BOB.parse().unwrap());
    let added = go(update(
        "N1",
        0,
        Some(ALICE),
        Action::Add {
            participants: vec![bob, member(STRANGER, Some("+1 555∙∙∙∙∙66"))],
            reason: None,
        },
    ))
    .await;
    assert!(matches!(added, Some(IngestOutcome::Stored { .. })));
    let (kind, text, from_me, mentions_me, by_alice) = row(&h, "wazap-gn-N1-0").await;
    assert_eq!(kind, "system");
    assert_eq!(text, "Alice added Bob and one other");
    assert!(!from_me && !mentions_me && by_alice);
    assert!(
        !text.chars().any(|c| c.is_ascii_digit()),
        "no phone number in the text"
    );
    // Bob's LID joined his number's chat while the event was archived.
    let bob_forms = "from chat_aliases where jid in
        ('15550002222@s.whatsapp.net', '222222222222222@lid')";
    assert_eq!(
        one(&h.pool, &format!("select count(*) {bob_forms}")).await,
        2
    );
    assert_eq!(
        one(
            &h.pool,
            &format!("select count(distinct chat_id) {bob_forms}")
        )
        .await,
        1
    );

    // Alice adds the account: addressed to it.
    go(update(
        "N2",
        0,
        Some(ALICE),
        Action::Add {
            participants: vec![member(OWN, None)],
            reason: None,
        },
    ))
    .await;
    let (_, text, _, mentions_me, _) = row(&h, "wazap-gn-N2-0").await;
    assert_eq!(text, "Alice added you");
    assert!(mentions_me, "being added is addressed to the account");

    // Bob leaves; the account renames the group (second action of one notification).
    go(update(
        "N3",
        0,
        Some(BOB),
        Action::Remove {
            participants: vec![member(BOB, None)],
            reason: None,
        },
    ))
    .await;
    assert_eq!(row(&h, "wazap-gn-N3-0").await.1, "Bob left");
    go(update(
        "N3",
        1,
        Some(OWN),
        Action::Subject {
            subject: "Trip".into(),
            subject_owner: None,
            subject_time: None,
        },
    ))
    .await;
    let (_, text, from_me, _, _) = row(&h, "wazap-gn-N3-1").await;
    assert_eq!(text, "You changed the group name to “Trip”");
    assert!(from_me);

    // A redelivered notification is not archived twice.
    let again = go(update(
        "N3",
        0,
        Some(BOB),
        Action::Remove {
            participants: vec![member(BOB, None)],
            reason: None,
        },
    ))
    .await;
    assert!(matches!(again, Some(IngestOutcome::Duplicate { .. })));
    // Actions a reader needs nothing from are not archived.
    assert_eq!(
        go(update("N4", 0, Some(ALICE), Action::NoFrequentlyForwarded)).await,
        None
    );
    assert_eq!(
        one(
            &h.pool,
            "select count(*) from messages where kind = 'system'"
        )
        .await,
        4
    );
    h.finish().await;
}

#[test]
fn settings_and_strangers_read_without_numbers() {
    let names = HashMap::new();
    let text = |actor: Option<&str>, action: Action| {
        system_message(&update("X", 0, actor, action), &[], &names)
            .map(|m| m.text)
            .unwrap_or_default()
    };
    assert_eq!(
        text(Some(STRANGER), Action::Announce),
        "Someone allowed only admins to send messages"
    );
    assert_eq!(
        text(
            Some(ALICE),
            Action::Ephemeral {
                expiration: 7 * 86_400,
                trigger: None
            }
        ),
        "Someone turned on disappearing messages (7 days)"
    );
    assert_eq!(
        text(
            None,
            Action::Remove {
                participants: vec![member(STRANGER, None), member(BOB, None)],
                reason: None
            }
        ),
        "2 people left"
    );
    assert_eq!(
        text(
            Some(ALICE),
            Action::Description {
                id: "d1".into(),
                description: None
            }
        ),
        "Someone deleted the group description"
    );
}
