//! `search_messages` through the keys of migration 0025 (docs/search.md): the same answers
//! whatever bucket size the planner's statistics choose, with every filter and paging.

use super::*;

/// One seeded message: its id, chat (0 Ana, 1 Ben), time and words.
struct Seeded {
    id: String,
    chat: usize,
    secs: i64,
    words: Vec<&'static str>,
    private: bool,
}

/// The ids of the seeded messages holding every one of `words` in `chat` within
/// `[since, until)` (seconds), newest first.
fn expected(
    all: &[Seeded],
    words: &[&str],
    chat: Option<usize>,
    since: Option<i64>,
    until: Option<i64>,
) -> Vec<String> {
    let mut hits: Vec<&Seeded> = all
        .iter()
        .filter(|m| !m.private && words.iter().all(|w| m.words.contains(w)))
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
    // `rare` in three; every 50th message is `#private` (never found).
    let mut seeded = Vec::new();
    let mut msgs = Vec::new();
    for i in 0..2_400i64 {
        let chat = (i % 2) as usize;
        let mut words = vec!["all"];
        if i % 2 == 0 {
            words.push("half");
        }
        if i % 10 == 0 {
            words.push("tenth");
        }
        if [5, 1_201, 2_399].contains(&i) {
            words.push("rare");
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
    let queries: [&[&str]; 5] = [
        &["all"],
        &["half"],
        &["tenth"],
        &["rare"],
        &["tenth", "half"],
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
