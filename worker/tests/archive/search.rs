//! `search_messages` through the keys of migration 0025 (docs/search.md), and prefixes through
//! the walk: the same answers as a brute-force reading whatever bucket size the planner's
//! statistics choose, with every filter and paging; an edit's words, never a private message's.

use super::*;

/// One seeded message: its id, chat (0 Ana, 1 Ben), time and words.
struct Seeded {
    id: String,
    chat: usize,
    secs: i64,
    words: Vec<String>,
    private: bool,
}

/// Whether `words` hold query term `term` (`w*`: a word starting with `w`).
fn holds(words: &[String], term: &str) -> bool {
    match term.strip_suffix('*') {
        Some(prefix) => words.iter().any(|w| w.starts_with(prefix)),
        None => words.iter().any(|w| w == term),
    }
}

/// The ids of the seeded messages holding every one of `words` (whole words or `w*`
/// prefixes) in `chat` within `[since, until)` (seconds), newest first.
fn expected(
    all: &[Seeded],
    words: &[&str],
    chat: Option<usize>,
    since: Option<i64>,
    until: Option<i64>,
) -> Vec<String> {
    let mut hits: Vec<&Seeded> = all
        .iter()
        .filter(|m| !m.private && words.iter().all(|w| holds(&m.words, w)))
        .filter(|m| chat.is_none_or(|c| m.chat == c))
        .filter(|m| since.is_none_or(|s| m.secs >= s) && until.is_none_or(|u| m.secs < u))
        .collect();
    hits.sort_by_key(|m| std::cmp::Reverse(m.secs));
    hits.iter().map(|m| m.id.clone()).collect()
}

/// Every page of `req` (pages of 7, following `before`), its hits' ids in order.
async fn every_page(
    h: &Harness,
    v: &wazap_worker::viewer::Viewer,
    req: SearchMessagesRequest,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let page = search_messages::handle(
            &h.state,
            v,
            SearchMessagesRequest {
                limit: Some(7),
                before: out.last().cloned(),
                ..req.clone()
            },
        )
        .await
        .expect("search_messages");
        let done = page.messages.len() < 7;
        out.extend(page.messages.into_iter().map(|m| m.message_id));
        if done {
            return out;
        }
    }
}

#[tokio::test]
async fn every_bucket_size_finds_the_same_newest_matches() {
    let h = Harness::start().await;
    // 2,400 messages, one every 3 minutes over five days, alternating two chats. `all` is in
    // every message, `half` in every second (so only in Ana's chat), `tenth` in every tenth,
    // `rare` in three; `hat` in every 7th and `hatch` in every 13th (the prefix `hat*`);
    // every 9th holds one of 70 words `pre0`…`pre69` (`pre*` and `pre1*`, prefixes of 70 and 11
    // words, read by the prefix walk); every 50th message is `#private` (never found).
    let mut seeded = Vec::new();
    let mut msgs = Vec::new();
    for i in 0..2_400i64 {
        let chat = (i % 2) as usize;
        let mut words = vec!["all".to_owned()];
        for (every, word) in [(2, "half"), (10, "tenth"), (7, "hat"), (13, "hatch")] {
            if i % every == 0 {
                words.push(word.to_owned());
            }
        }
        if [5, 1_201, 2_399].contains(&i) {
            words.push("rare".to_owned());
        }
        if i % 9 == 0 {
            words.push(format!("pre{}", i / 9 % 70));
        }
        let private = i % 50 == 7;
        let mut body = words.join(" ");
        if private {
            body.push_str(" #private");
        }
        let jid = phone(if chat == 0 { ANA } else { BEN });
        msgs.push(text(&jid, &format!("W{i}"), at(i * 180), &body));
        seeded.push(Seeded {
            id: String::new(),
            chat,
            secs: i * 180,
            words,
            private,
        });
    }
    for (chunk, ms) in msgs.chunks(400).enumerate() {
        let ack = history(&h, ms.to_vec()).await;
        assert_eq!(ack.stored as usize, ms.len());
        for (j, id) in ack.ids.into_iter().enumerate() {
            seeded[chunk * 400 + j].id = id;
        }
    }
    let chats = [
        chat_of(&h, &phone(ANA)).await,
        chat_of(&h, &phone(BEN)).await,
    ];

    let v = viewer_all();
    let mut scoped = viewer_all();
    scoped.scope.since = Some(at(100_000));
    scoped.scope.until = Some(at(300_000));
    let queries: [&[&str]; 10] = [
        &["all"],
        &["half"],
        &["tenth"],
        &["rare"],
        &["tenth", "half"],
        &["hat*"],
        &["hat*", "half"],
        &["pre*"],
        &["pre1*", "all"],
        &["zz*"],
    ];
    // Before the archive is analyzed (the largest buckets), then after (the statistics choose:
    // an hour's buckets for `all`, a day and a half's for `tenth`, one read for `rare`).
    for analyzed in [false, true] {
        if analyzed {
            h.exec("analyze messages").await;
            // The statistics are read in the background, at most a second after the last
            // reading found none, on the next search.
            tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
            let _ = every_page(&h, &v, search_req("all", None)).await;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        for words in queries {
            let q = words.join(" ");
            for chat in [None, Some(0), Some(1)] {
                let mut r = search_req(&q, chat.map(|c| chats[c].clone()));
                let want = expected(&seeded, words, chat, None, None);
                assert_eq!(
                    every_page(&h, &v, r.clone()).await,
                    want,
                    "{q} in {chat:?}, analyzed {analyzed}"
                );
                r.since = Some(at(50_000));
                r.until = Some(at(200_000));
                let want = expected(&seeded, words, chat, Some(50_000), Some(200_000));
                assert_eq!(
                    every_page(&h, &v, r.clone()).await,
                    want,
                    "{q} in {chat:?} in a range"
                );
                r.since = None;
                r.until = None;
                let want = expected(&seeded, words, chat, Some(100_000), Some(300_000));
                assert_eq!(
                    every_page(&h, &scoped, r).await,
                    want,
                    "{q} in {chat:?} in the scope's dates"
                );
            }
        }
    }
    h.finish().await;
}

fn search_req(query: &str, chat_id: Option<String>) -> SearchMessagesRequest {
    SearchMessagesRequest {
        query: query.into(),
        chat_id,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_prefix_finds_the_words_of_edits_and_never_of_private_messages() {
    let h = Harness::start().await;
    let chat = phone(ANA);
    let first = inject(&h, text(&chat, "P1", at(1), "first draft")).await;
    inject(&h, text(&chat, "P2", at(2), "hidden plans #private")).await;
    let hiking = inject(&h, text(&chat, "P3", at(3), "hiking tomorrow")).await;
    // The edit brings a word no message held before.
    inject(
        &h,
        SimMessage {
            reply_to: Some("P1".into()),
            edit: true,
            ..text(&chat, "E1", at(4), "final hazelnut draft")
        },
    )
    .await;
    let v = viewer_all();
    let found = |q: &'static str| {
        let (h, v) = (&h, &v);
        async move {
            let page = search_messages::handle(&h.state, v, search_req(q, None))
                .await
                .expect("search_messages");
            page.messages
                .into_iter()
                .map(|m| m.message_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        found("haz*").await,
        std::slice::from_ref(&first),
        "the edit's new word"
    );
    assert_eq!(found("dra*").await, [first], "a word the edit kept");
    assert_eq!(found("hi*").await, [hiking], "never the private `hidden`");
    assert!(found("hid*").await.is_empty());
    assert!(found("fir*").await.is_empty(), "the edit replaced `first`");
    h.finish().await;
}
