//! Several accounts in one archive (#27 items 1–2): the registry (add, list, remove keeping or
//! deleting the archive), and ids that carry their account — a read without `account_id` takes
//! the account its ids name, one that disagrees is `invalid_argument`, an unknown one is
//! `account_not_found`, and every answer names its account.

use super::*;
use wazap_worker::accounts::{self, NewAccount, RegistryError, Removal};
use wazap_worker::connector::inbound::to_inbound;

const WORK: &str = "work";

async fn add_work(h: &Harness) {
    let db = h.pool.get().await.unwrap();
    accounts::add(
        &db,
        NewAccount {
            account_id: WORK.into(),
            display_name: Some("Work phone".into()),
            connector: None,
        },
    )
    .await
    .unwrap();
}

/// `m` archived in account `account` through the live path; its message id.
async fn ingest(h: &Harness, account: &str, m: SimMessage) -> String {
    match h
        .archive
        .ingest_live(account, to_inbound(m).unwrap())
        .await
        .unwrap()
    {
        IngestOutcome::Stored { message_id, .. } => message_id,
        other => panic!("{other:?}"),
    }
}

fn invalid(e: wazap_worker::error::Error, field: &str) {
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{}", e.message());
    assert!(e.message().starts_with(field), "{}", e.message());
}

#[tokio::test]
async fn ids_name_their_account_and_reads_follow_them() {
    let h = Harness::start().await;
    add_work(&h).await;
    let home_msg = inject(&h, text(&phone(ANA), "H1", at(1), "lunch at home")).await;
    let work_msg = ingest(&h, WORK, text(&phone(ANA), "W1", at(2), "lunch at work")).await;
    let v = viewer_all();
    let home_chat = read(&h, &v, req(&format!("+{ANA}"))).await.chat_id;
    let work = read(
        &h,
        &v,
        ReadMessagesRequest {
            account_id: Some(WORK.into()),
            ..req(&format!("+{ANA}"))
        },
    )
    .await;
    // The same person in two accounts: two chats; only the other account's ids say so.
    let work_chat = work.chat_id.clone();
    assert_eq!(work.account_id, WORK);
    assert!(work_chat.ends_with("-work") && work_msg.ends_with("-work"));
    assert!(!home_chat.contains('-') && !home_msg.contains('-'));
    assert_eq!(work.messages.len(), 1);
    assert_eq!(work.messages[0].message_id, work_msg);

    // No account_id: the chat id decides.
    let r = read(&h, &v, req(&work_chat)).await;
    assert_eq!((r.account_id.as_str(), r.messages.len()), (WORK, 1));
    assert_eq!(r.messages[0].text, "lunch at work");
    let r = read(&h, &v, req(&home_chat)).await;
    assert_eq!(
        (r.account_id.as_str(), r.messages[0].text.as_str()),
        ("default", "lunch at home")
    );

    // An account_id that disagrees with the id is refused, naming the id.
    let e = read_messages::handle(
        &h.state,
        &v,
        ReadMessagesRequest {
            account_id: Some("default".into()),
            ..req(&work_chat)
        },
    )
    .await
    .unwrap_err();
    invalid(e, "chat_id");
    let e = read_messages::handle(
        &h.state,
        &v,
        ReadMessagesRequest {
            before: Some(home_msg.clone()),
            ..req(&work_chat)
        },
    )
    .await
    .unwrap_err();
    invalid(e, "before");
    // An unknown account, named or in an id: account_not_found.
    for r in [
        ReadMessagesRequest {
            account_id: Some("ghost".into()),
            ..req(&format!("+{ANA}"))
        },
        req(&format!("{}-ghost", home_chat)),
    ] {
        let e = read_messages::handle(&h.state, &v, r).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::AccountNotFound, "{}", e.message());
    }

    // Search: one account per call, the chat's when one is named.
    let found = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "lunch".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(found.account_id, "default");
    assert_eq!(found.messages.len(), 1);
    assert_eq!(found.messages[0].message_id, home_msg);
    let found = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "lunch".into(),
            chat_id: Some(work_chat.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(found.account_id, WORK);
    assert_eq!(found.messages.len(), 1);
    assert_eq!(found.messages[0].message_id, work_msg);
    let e = search_messages::handle(
        &h.state,
        &v,
        SearchMessagesRequest {
            query: "lunch".into(),
            account_id: Some(WORK.into()),
            before: Some(home_msg.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    invalid(e, "before");

    // Listing: the account named, never the other's chats.
    let chats = list_chats::handle(
        &h.state,
        &v,
        ListChatsRequest {
            account_id: Some(WORK.into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(chats.account_id, WORK);
    let ids: Vec<_> = chats.chats.iter().map(|c| c.chat_id.as_str()).collect();
    assert_eq!(ids, [work_chat.as_str()]);

    // A wait's cursor follows its account: a cursor of `work` polls `work` without being told,
    // and a call naming another account with it is refused.
    let first = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            chat_id: Some(work_chat.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(first.account_id, WORK);
    assert!(first.cursor.ends_with(".work"), "{}", first.cursor);
    let later = ingest(&h, WORK, text(&phone(ANA), "W2", at(3), "running late")).await;
    inject(&h, text(&phone(ANA), "H2", at(4), "home news")).await;
    let poll = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            cursor: Some(first.cursor.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(poll.account_id, WORK);
    let got: Vec<_> = poll
        .messages
        .iter()
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(got, [later.as_str()], "only the cursor's account");
    let e = wait_for_messages::handle(
        &h.state,
        &v,
        WaitForMessagesRequest {
            cursor: Some(first.cursor.clone()),
            account_id: Some("default".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    invalid(e, "cursor");
    h.finish().await;
}

#[tokio::test]
async fn the_registry_adds_lists_and_removes_accounts_keeping_or_deleting_the_archive() {
    let h = Harness::start().await;
    let mut db = h.pool.get().await.unwrap();
    // A database from before the registry holds `default` only; the migration names it.
    let listed = accounts::list(&db).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].account_id.as_str(),
            listed[0].display_name.as_str()
        ),
        ("default", "Default")
    );
    add_work(&h).await;
    let again = accounts::add(
        &db,
        NewAccount {
            account_id: WORK.into(),
            display_name: None,
            connector: None,
        },
    )
    .await;
    assert!(matches!(again, Err(RegistryError::Exists)), "{again:?}");
    let bad = accounts::add(
        &db,
        NewAccount {
            account_id: "Work!".into(),
            display_name: None,
            connector: None,
        },
    )
    .await;
    assert!(matches!(
        bad,
        Err(RegistryError::Invalid {
            field: "account_id",
            ..
        })
    ));
    let ids: Vec<_> = accounts::list(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.account_id)
        .collect();
    assert_eq!(ids, ["default", WORK]);
    let msg = ingest(
        &h,
        WORK,
        text(&phone(BEN), "W1", at(1), "quarterly numbers"),
    )
    .await;
    inject(&h, text(&phone(BEN), "H1", at(2), "see you sunday")).await;

    let e = accounts::remove(&mut db, "default", Removal::KeepArchive).await;
    assert!(matches!(e, Err(RegistryError::Default)), "{e:?}");
    // Kept: removed, and its archive reads as it was.
    let kept = accounts::remove(&mut db, WORK, Removal::KeepArchive)
        .await
        .unwrap();
    assert_eq!((kept.messages, kept.chats), (1, 1));
    assert!(accounts::get(&db, WORK).await.unwrap().removed_at.is_some());
    let r = read(
        &h,
        &viewer_all(),
        ReadMessagesRequest {
            account_id: Some(WORK.into()),
            ..req(&format!("+{BEN}"))
        },
    )
    .await;
    assert_eq!(r.messages[0].message_id, msg);
    // Added again: in use again, under its new name.
    let back = accounts::add(
        &db,
        NewAccount {
            account_id: WORK.into(),
            display_name: Some("Office".into()),
            connector: Some(wazap_worker::config::ConnectorKind::Sim),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (back.display_name.as_str(), back.removed_at),
        ("Office", None)
    );

    // Deleting asks first, saying what goes, and goes only with the id typed again.
    for confirm in [None, Some("default".to_owned())] {
        match accounts::remove(&mut db, WORK, Removal::DeleteArchive { confirm }).await {
            Err(RegistryError::Confirm { account, contents }) => {
                assert_eq!(account, WORK);
                assert_eq!((contents.messages, contents.chats), (1, 1));
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        accounts::get(&db, WORK).await.is_ok(),
        "nothing deleted yet"
    );
    accounts::remove(
        &mut db,
        WORK,
        Removal::DeleteArchive {
            confirm: Some(WORK.into()),
        },
    )
    .await
    .unwrap();
    assert!(matches!(
        accounts::get(&db, WORK).await,
        Err(RegistryError::NotFound)
    ));
    // Every table that names an account holds nothing of it any more, but the send journal
    // (no text; its keys keep a retried request from sending again), and the list of tables
    // deleted from is every such table.
    let tables: Vec<String> = db
        .query(
            "select table_name::text from information_schema.columns
              where column_name = 'account_id' and table_schema = current_schema()
                and table_name not in ('accounts', 'send_journal')
              order by 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut listed: Vec<&str> = accounts::ARCHIVE_TABLES.to_vec();
    listed.sort_unstable();
    assert_eq!(tables, listed);
    for t in &tables {
        let n: i64 = db
            .query_one(
                &format!("select count(*) from {t} where account_id = $1"),
                &[&WORK],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{t}");
    }
    // The default account's archive is untouched.
    let home = accounts::contents(&db, "default").await.unwrap();
    assert_eq!((home.messages, home.chats), (1, 1));
    drop(db);
    h.finish().await;
}
