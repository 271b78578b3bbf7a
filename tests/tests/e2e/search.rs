//! search_messages, search_attachments and get_attachment end to end through `/mcp`: words in
//! several languages, accents, emoji, prefixes, newest-first ranking, gapless paging, filters,
//! `#private` redaction, edits and deletes, read scope, attachments' bytes, `get_attachment`'s
//! `account_id`, and `WAZAP_ATTACHMENTS=off`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use wazap_shared::subjects::sim_op;
use wazap_shared::wire::MessageType;
use wazap_shared::wire::grants::{ChatSelection, ReadScope};
use wazap_shared::wire::sim::{HistorySync, SimAttachment, SimMessage};
use wazap_tests::fixtures::{minutes_ago, person, photo, text};
use wazap_tests::{Mcp, Stack};
use wazap_worker::config::ConnectorKind;

const ANA: &str = "972503330001";
const BEN: &str = "972503330002";
/// A small but real PDF header and body.
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n";

/// The message ids of a search result, in order.
fn hit_ids(outcome: &Value) -> Vec<String> {
    outcome["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn search(mcp: &Mcp, args: Value) -> anyhow::Result<Vec<String>> {
    let out = mcp.call("search_messages", args).await?;
    Ok(hit_ids(out.ok()))
}

fn document(chat: &str, id: &str, minutes: i64, name: &str, caption: &str) -> SimMessage {
    SimMessage {
        kind: MessageType::Document,
        attachment: Some(SimAttachment {
            mime_type: "application/pdf".into(),
            filename: Some(name.into()),
            seconds: None,
            data_base64: Some(B64.encode(PDF)),
            thumbnail_base64: None,
        }),
        ..text(chat, id, minutes_ago(minutes), caption)
    }
}

/// The snippets of a search's hits, in order.
async fn snippets(mcp: &Mcp, args: Value) -> anyhow::Result<Vec<String>> {
    let out = mcp.call("search_messages", args).await?;
    Ok(out.ok()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| h["snippet"].as_str().unwrap_or_default().to_owned())
        .collect())
}

/// Ana's chat in three languages plus emoji, a private message, and Ben's chat.
async fn seed(stack: &Stack) -> anyhow::Result<Vec<String>> {
    let ana = person(ANA);
    stack.contact(&ana, None, "Ana Souza").await?;
    stack.contact(&person(BEN), None, "Ben Levi").await?;
    let mut ids = Vec::new();
    for (id, minutes, body) in [
        ("S1", 60, "Reunião amanhã às 10, combinado?"),
        ("S2", 50, "שלום לכולם, ערב טוב"),
        ("S3", 40, "party tonight 🎉 at the rooftop"),
        ("S4", 30, "another party planned for Friday"),
        ("S5", 20, "zebraword secret plans #private"),
        ("S6", 10, "partying hard, see you"),
    ] {
        ids.push(
            stack
                .inject(text(&ana, id, minutes_ago(minutes), body))
                .await?,
        );
    }
    ids.push(
        stack
            .inject(photo(
                &ana,
                "S7",
                minutes_ago(5),
                "party photo from the rooftop",
            ))
            .await?,
    );
    stack
        .inject(text(
            &person(BEN),
            "T1",
            minutes_ago(15),
            "giraffeword in Ben's chat",
        ))
        .await?;
    Ok(ids)
}

#[tokio::test]
async fn words_in_many_languages_prefixes_and_newest_first() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ids = seed(&stack).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;

    // Portuguese with and without accents, any case.
    for q in ["reunião", "REUNIAO", "reuniao amanha", "Reunião amanhã"] {
        assert_eq!(
            search(&mcp, json!({"query": q})).await?,
            [ids[0].clone()],
            "{q}"
        );
    }
    // Hebrew, and a Hebrew prefix.
    assert_eq!(
        search(&mcp, json!({"query": "שלום"})).await?,
        [ids[1].clone()]
    );
    assert_eq!(
        search(&mcp, json!({"query": "שלו*"})).await?,
        [ids[1].clone()]
    );
    // Emoji, alone and beside a word.
    assert_eq!(
        search(&mcp, json!({"query": "🎉"})).await?,
        [ids[2].clone()]
    );
    assert_eq!(
        search(&mcp, json!({"query": "party 🎉"})).await?,
        [ids[2].clone()]
    );
    // Snippets mark what matched, as the index cut it: the accented word, the Hebrew word a
    // prefix found, the emoji.
    assert_eq!(
        snippets(&mcp, json!({"query": "reuniao"})).await?,
        ["**Reunião** amanhã às 10, combinado?"]
    );
    assert_eq!(
        snippets(&mcp, json!({"query": "שלו*"})).await?,
        ["**שלום** לכולם, ערב טוב"]
    );
    assert_eq!(
        snippets(&mcp, json!({"query": "🎉 party"})).await?,
        ["**party** tonight **🎉** at the rooftop"]
    );
    // Whole words, newest first: "party" is not "partying"; the photo's caption counts.
    assert_eq!(
        search(&mcp, json!({"query": "party"})).await?,
        [ids[6].clone(), ids[3].clone(), ids[2].clone()]
    );
    // A prefix finds "partying" too, still newest first.
    assert_eq!(
        search(&mcp, json!({"query": "part*"})).await?,
        [
            ids[6].clone(),
            ids[5].clone(),
            ids[3].clone(),
            ids[2].clone()
        ]
    );
    // Every word must occur.
    assert_eq!(
        search(&mcp, json!({"query": "party rooftop"})).await?,
        [ids[6].clone(), ids[2].clone()]
    );
    assert!(
        search(&mcp, json!({"query": "party nowhere"}))
            .await?
            .is_empty()
    );

    // Hits carry the chat's name, the sender and a snippet marking the word.
    let out = mcp
        .call("search_messages", json!({"query": "rooftop", "limit": 1}))
        .await?;
    let hit = &out.ok()["messages"][0];
    assert_eq!(hit["chat_name"], "Ana Souza");
    assert_eq!(hit["type"], "image");
    assert!(
        hit["snippet"].as_str().unwrap().contains("**rooftop**"),
        "{hit}"
    );
    assert!(hit["attachment"]["attachment_id"].as_str().is_some());
    assert_eq!(out.ok()["count"], 1);

    // Filters: types, chat (also by phone number), time window.
    assert_eq!(
        search(&mcp, json!({"query": "party", "types": ["image"]})).await?,
        [ids[6].clone()]
    );
    assert_eq!(
        search(
            &mcp,
            json!({"query": "part*", "chat_id": format!("+{ANA}"), "limit": 2})
        )
        .await?,
        [ids[6].clone(), ids[5].clone()]
    );
    assert!(
        search(
            &mcp,
            json!({"query": "party", "chat_id": format!("+{BEN}")})
        )
        .await?
        .is_empty()
    );
    let since = minutes_ago(45).to_rfc3339();
    let until = minutes_ago(25).to_rfc3339();
    assert_eq!(
        search(
            &mcp,
            json!({"query": "part*", "since": since, "until": until})
        )
        .await?,
        [ids[3].clone(), ids[2].clone()]
    );

    // Bad arguments name the field.
    for (args, field) in [
        (json!({"query": "  ' & | "}), "query"),
        (json!({"query": "x", "limit": 101}), "limit"),
        (json!({"query": "x", "before": "nope"}), "before"),
        (json!({"query": "x", "types": []}), "types"),
        (json!({"query": "x", "chat_id": "someone"}), "chat_id"),
    ] {
        let out = mcp.call("search_messages", args).await?;
        assert_eq!(out.error_code().as_deref(), Some("invalid_argument"));
        assert!(out.text.contains(field), "{}", out.text);
    }
    Ok(())
}

#[tokio::test]
async fn paging_with_before_has_no_gaps_or_overlaps() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = person(ANA);
    let mut injected = Vec::new();
    for i in 0..23 {
        // Two messages per minute, so equal-second neighbours are common.
        let ts = minutes_ago(100 - i / 2);
        injected.push(
            stack
                .inject(text(&chat, &format!("P{i}"), ts, "pagingword"))
                .await?,
        );
    }
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let all = search(&mcp, json!({"query": "pagingword", "limit": 100})).await?;
    assert_eq!(all.len(), 23);
    let mut paged: Vec<String> = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = json!({"query": "pagingword", "limit": 5});
        if let Some(b) = &before {
            args["before"] = json!(b);
        }
        let page = search(&mcp, args).await?;
        if page.is_empty() {
            break;
        }
        before = page.last().cloned();
        paged.extend(page);
    }
    assert_eq!(paged, all, "pages concatenate to the full list");
    let mut expected = injected.clone();
    expected.reverse();
    assert_eq!(all, expected, "newest first");
    Ok(())
}

#[tokio::test]
async fn private_and_out_of_scope_messages_never_match() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ids = seed(&stack).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    // The private message's words are not found, by word, prefix or with other words.
    for q in [
        "zebraword",
        "zebra*",
        "secret",
        "plans",
        "#private",
        "private",
    ] {
        assert!(search(&mcp, json!({"query": q})).await?.is_empty(), "{q}");
    }
    // And never appear in any snippet, even of a search matching everything.
    let all = mcp
        .call("search_messages", json!({"query": "p*", "limit": 100}))
        .await?;
    assert!(!all.text.contains("zebraword"));
    assert!(!hit_ids(all.ok()).contains(&ids[4]));

    // A connection scoped to Ana's chat never finds Ben's words, and cannot name his chat.
    let list = mcp.call("list_chats", json!({})).await?;
    let chats = list.ok()["chats"].as_array().unwrap().clone();
    let ana = chats.iter().find(|c| c["name"] == "Ana Souza").unwrap()["chat_id"].clone();
    let ben = chats.iter().find(|c| c["name"] == "Ben Levi").unwrap()["chat_id"].clone();
    assert_eq!(
        search(&mcp, json!({"query": "giraffeword"})).await?.len(),
        1
    );
    let scope = ReadScope {
        chats: ChatSelection::Selected {
            chats: vec![ana.as_str().unwrap().to_owned()],
        },
        since: None,
        until: None,
        ..ReadScope::all()
    };
    let scoped = gw.mcp(&stack.token(scope).await?).await?;
    assert!(
        search(&scoped, json!({"query": "giraffeword"}))
            .await?
            .is_empty()
    );
    let out = scoped
        .call(
            "search_messages",
            json!({"query": "giraffeword", "chat_id": ben}),
        )
        .await?;
    assert_eq!(out.error_code().as_deref(), Some("chat_not_found"));
    let found = scoped
        .call("search_attachments", json!({"chat_id": ben}))
        .await?;
    assert_eq!(found.error_code().as_deref(), Some("chat_not_found"));
    assert_eq!(search(&scoped, json!({"query": "party"})).await?.len(), 3);
    Ok(())
}

#[tokio::test]
async fn a_word_with_many_hits_comes_newest_first_through_every_page() -> anyhow::Result<()> {
    // More hits than the word index is asked for at once (1,000): the search walks the archive
    // newest first instead, and must give the same answer: order, paging, chat, #private.
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chats = [person("972503330101"), person("972503330102")];
    let messages: Vec<SimMessage> = (0..1_500)
        .map(|i| {
            let body = if i % 7 == 0 {
                "walkword #private"
            } else {
                "walkword here"
            };
            text(
                &chats[i % 2],
                &format!("M{i:04}"),
                minutes_ago(10_000 - i as i64),
                body,
            )
        })
        .collect();
    let ack = stack
        .sim(
            sim_op::HISTORY_SYNC,
            &HistorySync {
                messages,
                progress: None,
            },
        )
        .await?;
    assert_eq!(ack.ids.len(), 1_500);
    let expected: Vec<String> = ack
        .ids
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, _)| i % 7 != 0)
        .map(|(_, id)| id.clone())
        .collect();
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let mut pages = Vec::new();
    let mut before: Option<String> = None;
    for _ in 0..3 {
        let mut args = json!({"query": "walkword", "limit": 50});
        if let Some(b) = &before {
            args["before"] = json!(b);
        }
        let page = search(&mcp, args).await?;
        before = page.last().cloned();
        pages.extend(page);
    }
    assert_eq!(pages, expected[..150], "newest first, no gaps, no #private");
    // One chat: only its messages, still newest first.
    let list = mcp.call("list_chats", json!({})).await?;
    let chat_id = list.ok()["chats"][0]["chat_id"].clone();
    let in_chat = mcp
        .call(
            "search_messages",
            json!({"query": "walk*", "chat_id": chat_id, "limit": 30}),
        )
        .await?;
    let hits = in_chat.ok()["messages"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 30);
    assert!(hits.iter().all(|h| h["chat_id"] == chat_id));
    let times: Vec<chrono::DateTime<chrono::Utc>> = hits
        .iter()
        .map(|h| h["timestamp"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "newest first");
    assert!(!in_chat.text.contains("#private"));
    Ok(())
}

#[tokio::test]
async fn edits_and_deletes_keep_the_index_current() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ids = seed(&stack).await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let ana = person(ANA);
    let edit = |id: &str, target: &str, body: &str| SimMessage {
        reply_to: Some(target.into()),
        edit: true,
        ..text(&ana, id, minutes_ago(1), body)
    };
    // An edit replaces the words and the emoji: old ones stop matching, new ones match.
    stack
        .inject(edit("E1", "S3", "quiet evening 🌙 instead"))
        .await?;
    assert!(search(&mcp, json!({"query": "🎉"})).await?.is_empty());
    assert!(search(&mcp, json!({"query": "tonight"})).await?.is_empty());
    assert_eq!(
        search(&mcp, json!({"query": "quiet 🌙"})).await?,
        [ids[2].clone()]
    );
    // An edit that adds #private removes the message from every search.
    stack
        .inject(edit("E2", "S3", "quiet evening 🌙 #private"))
        .await?;
    assert!(search(&mcp, json!({"query": "quiet"})).await?.is_empty());
    assert!(search(&mcp, json!({"query": "🌙"})).await?.is_empty());
    // A deleted message matches nothing.
    stack
        .inject(SimMessage {
            kind: MessageType::Deleted,
            reply_to: Some("S4".into()),
            ..text(&ana, "D1", minutes_ago(1), "")
        })
        .await?;
    assert_eq!(
        search(&mcp, json!({"query": "party"})).await?,
        [ids[6].clone()]
    );
    Ok(())
}

#[tokio::test]
async fn attachments_are_found_and_fetched_through_mcp() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ana = person(ANA);
    stack.contact(&ana, None, "Ana Souza").await?;
    let photo_id = stack
        .inject(photo(&ana, "F1", minutes_ago(30), "sunset at the beach"))
        .await?;
    let pdf_id = stack
        .inject(document(
            &ana,
            "F2",
            20,
            "invoice-2026.pdf",
            "the invoice for March",
        ))
        .await?;
    let hidden = stack
        .inject(document(
            &ana,
            "F3",
            10,
            "hidden-report.pdf",
            "mine #private",
        ))
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;

    let find = |args: Value| {
        let mcp = &mcp;
        async move {
            let out = mcp.call("search_attachments", args).await?;
            let found: Vec<(String, String)> = out.ok()["attachments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        a["message_id"].as_str().unwrap().to_owned(),
                        a["attachment_id"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            anyhow::Ok(found)
        }
    };
    // Newest first; the private message's file is never listed.
    let all = find(json!({})).await?;
    let messages: Vec<&str> = all.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(messages, [pdf_id.as_str(), photo_id.as_str()]);
    assert!(!messages.contains(&hidden.as_str()));
    let (pdf_att, photo_att) = (all[0].1.clone(), all[1].1.clone());
    // By file name, caption, kind, media type (exact and family) and dates.
    assert_eq!(
        find(json!({"query": "INVOICE-2026"})).await?,
        [all[0].clone()]
    );
    assert_eq!(find(json!({"query": "sunset"})).await?, [all[1].clone()]);
    assert_eq!(find(json!({"kinds": ["image"]})).await?, [all[1].clone()]);
    assert_eq!(
        find(json!({"mime_type": "application/pdf"})).await?,
        [all[0].clone()]
    );
    assert_eq!(
        find(json!({"mime_type": "image/*"})).await?,
        [all[1].clone()]
    );
    assert_eq!(
        find(json!({"until": minutes_ago(25).to_rfc3339()})).await?,
        [all[1].clone()]
    );
    assert_eq!(
        find(json!({"since": minutes_ago(25).to_rfc3339()})).await?,
        [all[0].clone()]
    );
    assert!(find(json!({"query": "hidden"})).await?.is_empty());
    assert_eq!(
        find(json!({"limit": 1, "before": pdf_att})).await?,
        [all[1].clone()]
    );

    // A JPEG comes back as image content with its metadata.
    let out = mcp
        .call("get_attachment", json!({"attachment_id": photo_att}))
        .await?;
    let meta = out.ok();
    assert_eq!(meta["mime_type"], "image/jpeg");
    assert_eq!(meta["message_id"], photo_id.as_str());
    assert_eq!(out.images.len(), 1);
    assert_eq!(out.images[0].0, "image/jpeg");
    let jpeg = B64.decode(&out.images[0].1)?;
    assert!(jpeg.starts_with(&[0xFF, 0xD8, 0xFF]));
    assert_eq!(meta["size"], jpeg.len());

    // A PDF comes back as an embedded resource with the exact bytes.
    let out = mcp
        .call("get_attachment", json!({"attachment_id": pdf_att}))
        .await?;
    assert_eq!(out.ok()["filename"], "invoice-2026.pdf");
    let resource = out.raw["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "resource")
        .expect("an embedded resource")["resource"]
        .clone();
    assert_eq!(resource["mimeType"], "application/pdf");
    assert_eq!(B64.decode(resource["blob"].as_str().unwrap())?, PDF);
    // Twice works too (the object store hand-over leaves nothing behind), and so do several
    // reads of one attachment at the same moment, up to the concurrency limit (each gets its own
    // object to read and delete).
    let again = mcp
        .call("get_attachment", json!({"attachment_id": pdf_att}))
        .await?;
    assert!(!again.is_error);
    let at_once = futures::future::try_join_all(
        (0..2).map(|_| mcp.call("get_attachment", json!({"attachment_id": pdf_att}))),
    )
    .await?;
    for out in at_once {
        assert!(!out.is_error, "a simultaneous read failed: {}", out.text);
    }

    // max_bytes bounds it; bad ids and unknown ones are refused.
    let out = mcp
        .call(
            "get_attachment",
            json!({"attachment_id": pdf_att, "max_bytes": 10}),
        )
        .await?;
    assert_eq!(out.error_code().as_deref(), Some("media_too_large"));
    assert!(out.text.contains("max_bytes (10)"), "{}", out.text);
    let out = mcp
        .call(
            "get_attachment",
            json!({"attachment_id": pdf_att, "max_bytes": 9_000_000}),
        )
        .await?;
    assert_eq!(out.error_code().as_deref(), Some("invalid_argument"));
    let out = mcp
        .call(
            "get_attachment",
            json!({"attachment_id": "a_0000000000000000000000"}),
        )
        .await?;
    assert_eq!(out.error_code().as_deref(), Some("not_found"));

    // Outside the read scope it does not exist.
    let scope = ReadScope {
        chats: ChatSelection::AllExcept {
            chats: vec![meta["chat_id"].as_str().unwrap().to_owned()],
        },
        since: None,
        until: None,
        ..ReadScope::all()
    };
    let scoped = gw.mcp(&stack.token(scope).await?).await?;
    let out = scoped
        .call("get_attachment", json!({"attachment_id": photo_att}))
        .await?;
    assert_eq!(out.error_code().as_deref(), Some("not_found"));
    assert_eq!(
        scoped.call("search_attachments", json!({})).await?.ok()["count"],
        0
    );
    Ok(())
}

#[tokio::test]
async fn attachments_match_a_caption_word_or_part_of_a_name_never_a_private_file()
-> anyhow::Result<()> {
    // Names match by any part (the trigram index), captions by whole words or `word*` (the word
    // index over file-carrying messages); a `#private` message's file matches neither way.
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ana = person(ANA);
    stack.contact(&ana, None, "Ana Souza").await?;
    let named = stack
        .inject(document(&ana, "N1", 40, "IMG-20251207-WA0008.pdf", ""))
        .await?;
    let captioned = stack
        .inject(document(
            &ana,
            "N2",
            30,
            "scan.pdf",
            "Contrato de aluguel assinado",
        ))
        .await?;
    stack
        .inject(document(
            &ana,
            "N3",
            20,
            "segredo-20251207.pdf",
            "contrato aluguel #private",
        ))
        .await?;
    // The words in plain text, with no file: not a file's caption.
    stack
        .inject(text(&ana, "N4", minutes_ago(10), "o contrato do aluguel"))
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let find = |query: &'static str| {
        let mcp = &mcp;
        async move {
            let out = mcp
                .call("search_attachments", json!({"query": query}))
                .await?;
            let found: Vec<String> = out.ok()["attachments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["message_id"].as_str().unwrap().to_owned())
                .collect();
            anyhow::Ok(found)
        }
    };
    // A caption word only (no file name holds it), in any case, several words, a prefix.
    for q in ["aluguel", "CONTRATO", "contrato assinado", "alug*"] {
        assert_eq!(find(q).await?, [captioned.as_str()], "{q}");
    }
    // Part of a file name only, in any case; the whole name too.
    for q in ["1207-wa00", "WA0008", "IMG-20251207-WA0008.pdf", "20251207"] {
        assert_eq!(find(q).await?, [named.as_str()], "{q}");
    }
    // The private file: neither its name nor its caption.
    for q in ["segredo", "segredo-20251207.pdf", "#private"] {
        assert!(find(q).await?.is_empty(), "{q}");
    }
    Ok(())
}

#[tokio::test]
async fn get_attachment_takes_an_account_id_like_every_read_tool() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let ana = person(ANA);
    stack.contact(&ana, None, "Ana Souza").await?;
    let pdf_id = stack
        .inject(document(&ana, "G1", 20, "invoice.pdf", "the invoice"))
        .await?;
    // A second linked account, with no files of its own.
    stack
        .sql("insert into accounts (account_id, display_name) values ('second', 'Second')")
        .await?;
    let gw = stack.gateway(&[]).await?;
    let mcp = gw.mcp(&stack.token(ReadScope::all()).await?).await?;
    let found = mcp.call("search_attachments", json!({})).await?;
    let att = found.ok()["attachments"][0]["attachment_id"].clone();
    let get = |args: Value| mcp.call("get_attachment", args);

    // Omitted or the file's own account: the file, and the result names its account.
    for args in [
        json!({"attachment_id": att}),
        json!({"attachment_id": att, "account_id": "default"}),
    ] {
        let out = get(args.clone()).await?;
        assert_eq!(out.ok()["account_id"], "default", "{args}");
        assert_eq!(out.ok()["message_id"], pdf_id.as_str(), "{args}");
    }
    // Unknown, named or in the id: account_not_found; malformed: invalid_argument naming the
    // field, not the value.
    let elsewhere = format!("{}-nope", att.as_str().unwrap_or_default());
    for args in [
        json!({"attachment_id": elsewhere}),
        json!({"attachment_id": elsewhere, "account_id": "nope"}),
    ] {
        let out = get(args.clone()).await?;
        assert_eq!(
            out.error_code().as_deref(),
            Some("account_not_found"),
            "{args}"
        );
    }
    let out = get(json!({"attachment_id": att, "account_id": "Bad Id"})).await?;
    assert_eq!(out.error_code().as_deref(), Some("invalid_argument"));
    assert!(out.text.contains("account_id"), "{}", out.text);
    assert!(!out.text.contains("Bad Id"), "never echoes the value");
    // An account_id other than the one the id names: invalid_argument, naming the id.
    let out = get(json!({"attachment_id": att, "account_id": "second"})).await?;
    assert_eq!(out.error_code().as_deref(), Some("invalid_argument"));
    assert!(out.text.contains("attachment_id"), "{}", out.text);
    Ok(())
}

#[tokio::test]
async fn demo_archive_search_and_attachment_tools_switch() -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Demo).await?;
    let gw = stack.gateway(&[]).await?;
    let token = stack.token(ReadScope::all()).await?;
    let mcp = gw.mcp(&token).await?;
    let out = mcp
        .call("search_messages", json!({"query": "ibirapuera"}))
        .await?;
    assert!(out.ok()["count"].as_u64().unwrap() >= 1);
    for hit in out.ok()["messages"].as_array().unwrap() {
        assert!(
            hit["snippet"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("ibirapuera")
        );
    }
    let docs = mcp
        .call("search_attachments", json!({"query": "migration_plan"}))
        .await?;
    let doc = &docs.ok()["attachments"][0];
    assert_eq!(doc["mime_type"], "application/pdf");
    let got = mcp
        .call(
            "get_attachment",
            json!({"attachment_id": doc["attachment_id"]}),
        )
        .await?;
    assert!(!got.is_error, "{}", got.text);
    assert!(
        got.raw["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "resource")
    );

    // WAZAP_ATTACHMENTS=off: the two attachment tools do not exist; search_messages does.
    let off = stack.gateway(&[("WAZAP_ATTACHMENTS", "off")]).await?;
    let mcp = off.mcp(&token).await?;
    let names: Vec<String> = mcp
        .tools()
        .await?
        .iter()
        .filter(|t| t["annotations"]["readOnlyHint"] == true)
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(names.contains(&"search_messages".to_owned()));
    assert!(
        !names
            .iter()
            .any(|n| n == "search_attachments" || n == "get_attachment")
    );
    let refused = mcp
        .call("get_attachment", json!({"attachment_id": "a_x"}))
        .await;
    assert!(refused.is_err() || refused.unwrap().is_error);
    Ok(())
}
