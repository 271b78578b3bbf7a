//! Several accounts in one archive (#27 items 1–2): the registry (add, list, remove keeping or
//! deleting the archive), and ids that carry their account — a read without `account_id` takes
//! the account its ids name, one that disagrees is `invalid_argument`, an unknown one is
//! `account_not_found`, and every answer names its account.

use super::*;
use wazap_shared::wire::grants::{AccountRule, AccountSelection};
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
    h.serve(WORK).await;
}

/// `m` archived in account `account` through the live path; its message id.
async fn ingest(h: &Harness, account: &str, m: SimMessage) -> String {
    let served = h.state.served.get(account).expect("the account is served");
    match served
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

/// A viewer of `accounts`, under `chats` there, with `per_account` rules.
fn viewer_of(
    accounts: AccountSelection,
    chats: ChatSelection,
    per_account: Vec<(&str, AccountRule)>,
) -> wazap_worker::viewer::Viewer {
    let mut v = viewer(chats);
    v.scope.accounts = accounts;
    v.scope.per_account = per_account
        .into_iter()
        .map(|(a, r)| (a.to_owned(), r))
        .collect();
    v
}

#[tokio::test]
async fn a_grant_reads_only_its_accounts_each_under_its_own_rule() {
    let h = Harness::start().await;
    add_work(&h).await;
    let home = inject(&h, text(&phone(ANA), "H1", at(1), "budget at home")).await;
    let w_ana = ingest(&h, WORK, text(&phone(ANA), "W1", at(2), "budget for work")).await;
    let w_ben = ingest(&h, WORK, text(&phone(BEN), "W2", at(3), "budget from ben")).await;
    let w_file = ingest(&h, WORK, image(&phone(ANA), "W3", 4, "budget chart")).await;
    let everyone = viewer_all();
    let home_chat = read(&h, &everyone, req(&format!("+{ANA}"))).await.chat_id;
    let work_read = |digits: &str| ReadMessagesRequest {
        account_id: Some(WORK.into()),
        ..req(&format!("+{digits}"))
    };
    let ana_work = read(&h, &everyone, work_read(ANA)).await;
    let work_chat = ana_work.chat_id.clone();
    let file = ana_work
        .messages
        .iter()
        .find(|m| m.message_id == w_file)
        .and_then(|m| m.attachment.as_ref())
        .map(|a| a.attachment_id.clone())
        .expect("the photo's attachment");

    // A scope from before there were accounts reads the default account only: the other is
    // account_not_found to every read tool, named or reached through its ids.
    let legacy = viewer_of(AccountSelection::default(), ChatSelection::All, vec![]);
    let work = || Some(WORK.to_owned());
    let refused: Vec<Result<(), wazap_worker::error::Error>> = vec![
        read_messages::handle(&h.state, &legacy, req(&work_chat))
            .await
            .map(drop),
        read_messages::handle(&h.state, &legacy, work_read(BEN))
            .await
            .map(drop),
        list_chats::handle(
            &h.state,
            &legacy,
            ListChatsRequest {
                account_id: work(),
                ..Default::default()
            },
        )
        .await
        .map(drop),
        search_contacts::handle(
            &h.state,
            &legacy,
            SearchContactsRequest {
                query: "972".into(),
                account_id: work(),
                ..Default::default()
            },
        )
        .await
        .map(drop),
        search_groups::handle(
            &h.state,
            &legacy,
            SearchGroupsRequest {
                query: "x".into(),
                account_id: work(),
                ..Default::default()
            },
        )
        .await
        .map(drop),
        search_messages::handle(
            &h.state,
            &legacy,
            SearchMessagesRequest {
                query: "budget".into(),
                chat_id: Some(work_chat.clone()),
                ..Default::default()
            },
        )
        .await
        .map(drop),
        search_attachments::handle(
            &h.state,
            &legacy,
            SearchAttachmentsRequest {
                account_id: work(),
                ..Default::default()
            },
        )
        .await
        .map(drop),
        wazap_worker::rpc::get_attachment::handle(
            &h.state,
            &legacy,
            wazap_shared::wire::search::GetAttachmentRequest {
                attachment_id: file.clone(),
                account_id: None,
                max_bytes: None,
            },
        )
        .await
        .map(drop),
        wait_for_messages::handle(
            &h.state,
            &legacy,
            WaitForMessagesRequest {
                account_id: work(),
                ..Default::default()
            },
        )
        .await
        .map(drop),
    ];
    for (i, r) in refused.into_iter().enumerate() {
        let e = r.expect_err("refused");
        assert_eq!(
            e.code(),
            ErrorCode::AccountNotFound,
            "call {i}: {}",
            e.message()
        );
    }
    // …and its own account as before: the default account's message only.
    let found = search_messages::handle(
        &h.state,
        &legacy,
        SearchMessagesRequest {
            query: "budget".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let ids: Vec<_> = found
        .messages
        .iter()
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(ids, [home.as_str()]);

    // `work` only, one chat of it: nothing of the default account, nor of Ben's work chat —
    // not in a listing, a search, its snippets or a wait.
    let narrow = viewer_of(
        AccountSelection::Only {
            accounts: vec![WORK.into()],
        },
        ChatSelection::Selected {
            chats: vec![work_chat.clone()],
        },
        vec![],
    );
    let e = read_messages::handle(&h.state, &narrow, req(&home_chat))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::AccountNotFound);
    let found = search_messages::handle(
        &h.state,
        &narrow,
        SearchMessagesRequest {
            query: "budget".into(),
            account_id: work(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut ids: Vec<_> = found
        .messages
        .iter()
        .map(|m| m.message_id.clone())
        .collect();
    ids.sort();
    let mut want = vec![w_ana.clone(), w_file.clone()];
    want.sort();
    assert_eq!(ids, want, "Ben's work chat and the home account stay out");
    assert!(
        found
            .messages
            .iter()
            .all(|m| !m.snippet.contains("home") && !m.snippet.contains("ben"))
    );
    let listed = list_chats::handle(
        &h.state,
        &narrow,
        ListChatsRequest {
            account_id: work(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let chats: Vec<_> = listed.chats.iter().map(|c| c.chat_id.as_str()).collect();
    assert_eq!(chats, [work_chat.as_str()]);
    let start = wait_for_messages::handle(
        &h.state,
        &narrow,
        WaitForMessagesRequest {
            account_id: work(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    inject(&h, text(&phone(ANA), "H2", at(5), "home again")).await;
    ingest(&h, WORK, text(&phone(BEN), "W4", at(6), "ben again")).await;
    let seen = ingest(&h, WORK, text(&phone(ANA), "W5", at(7), "ana again")).await;
    let poll = wait_for_messages::handle(
        &h.state,
        &narrow,
        WaitForMessagesRequest {
            cursor: Some(start.cursor),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let got: Vec<_> = poll
        .messages
        .iter()
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(got, [seen.as_str()]);
    let _ = w_ben;

    // Every account, `work` under a rule of its own (from after the first work message): the
    // default account as the top rule says, `work` as its own does.
    let split = viewer_of(
        AccountSelection::All,
        ChatSelection::All,
        vec![(
            WORK,
            AccountRule {
                chats: ChatSelection::All,
                since: Some(at(3)),
                until: None,
            },
        )],
    );
    let r = read(&h, &split, req(&work_chat)).await;
    assert!(
        r.messages.iter().all(|m| m.timestamp >= at(3)),
        "work's own dates"
    );
    assert!(!r.messages.iter().any(|m| m.message_id == w_ana));
    let r = read(&h, &split, req(&home_chat)).await;
    assert!(
        r.messages.iter().any(|m| m.message_id == home),
        "the top rule"
    );
    h.finish().await;
}
