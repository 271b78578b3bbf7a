//! Phase 1: fill the archive through the worker's batch ingest path (the history-sync path),
//! all indexes live, and measure messages per second.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::archive::{Archive, Inbound};

use crate::args::Args;
use crate::dataset::{self, Rng};

/// What ingest measured.
#[derive(Debug, Clone)]
pub(crate) struct IngestFigures {
    /// Messages offered.
    pub(crate) offered: usize,
    /// Messages newly stored.
    pub(crate) stored: u64,
    /// Wall time in seconds.
    pub(crate) seconds: f64,
    /// The busy chat's opaque id.
    pub(crate) busy_chat_id: String,
    /// Chats in the archive.
    pub(crate) chats: i64,
    /// The writer's live commit alone (see [`live_commits`]), when the wait phase runs.
    pub(crate) live_commit_ms: Option<[f64; 3]>,
}

/// Live messages timed by [`live_commits`], after as many unmeasured ones.
const LIVE_SAMPLES: usize = 300;
/// Chats the live messages go to (each written once before the measured ones, so the
/// writer knows them, as it knows a chat that is talking).
const LIVE_CHATS: usize = 20;

/// Messages handed to the archive per call (it commits them in its own chunks).
const SLAB: usize = 20_000;

/// Migrate the database at `url` and ingest the benchmark's data set into it.
pub(crate) async fn fill(url: &str, args: &Args) -> anyhow::Result<IngestFigures> {
    let pool = wazap_worker::db::pool(url, wazap_worker::server::POOL_SIZE)?;
    wazap_worker::db::migrate(&pool).await?;
    let shutdown = CancellationToken::new();
    let supervisor = wazap_worker::supervise::Supervisor::new(shutdown.clone());
    // As in the worker: statistics refreshed while the archive grows from empty.
    wazap_worker::db::statistics::spawn(pool.clone(), &supervisor);
    let archive = Archive::start(
        pool.clone(),
        wazap_shared::ids::DEFAULT_ACCOUNT,
        &supervisor,
    )
    .await?;

    let (source, busy_jid, offered) = match &args.jsonl {
        Some(path) => {
            let (messages, busy) = dataset::jsonl(path)?;
            let n = messages.len();
            (Source::File(messages), busy, n)
        }
        None => (
            Source::Synthetic,
            dataset::chat_jid(dataset::BUSY_CHAT),
            args.messages,
        ),
    };
    eprintln!("wazap-bench: ingesting {offered} messages through the batch path");
    let now = chrono::Utc::now();
    // Slabs are made on a thread of their own, one ahead of the archive, so the figure is the
    // archive's rate and not the generator's: a real history sync decodes its blobs beside the
    // writer in the same way.
    let (slabs, mut next_slab) = tokio::sync::mpsc::channel::<Vec<Inbound>>(1);
    let chats = args.chats;
    let producer = std::thread::spawn(move || {
        let mut rng = Rng::new(0x5eed);
        let mut file = match source {
            Source::File(m) => Some(m.into_iter()),
            Source::Synthetic => None,
        };
        let mut done = 0usize;
        while done < offered {
            let to = (done + SLAB).min(offered);
            let slab = match file.as_mut() {
                Some(it) => it.by_ref().take(to - done).collect(),
                None => dataset::synthetic(done, to, offered, chats, now, &mut rng),
            };
            if slabs.blocking_send(slab).is_err() {
                return;
            }
            done = to;
        }
    });
    let started = Instant::now();
    let mut stored = 0u64;
    let mut done = 0usize;
    let mut next_report = 100_000;
    while let Some(slab) = next_slab.recv().await {
        done += slab.len();
        stored += u64::from(archive.ingest_batch(DEFAULT_ACCOUNT, slab).await?);
        if done >= next_report || done == offered {
            let rate = done as f64 / started.elapsed().as_secs_f64();
            eprintln!("wazap-bench: {done}/{offered} ingested ({rate:.0} msg/s)");
            next_report += 100_000;
        }
    }
    if producer.join().is_err() {
        anyhow::bail!("the data set generator panicked");
    }
    let seconds = started.elapsed().as_secs_f64();
    let live_commit_ms = if args.runs("wait") {
        Some(live_commits(&archive).await?)
    } else {
        None
    };
    shutdown.cancel();

    let client = pool.get().await?;
    let busy_chat_id: String = client
        .query_one(
            "select chat_id from chat_aliases where account_id = $1 and jid = $2",
            &[&DEFAULT_ACCOUNT, &busy_jid],
        )
        .await?
        .get(0);
    let chats: i64 = client
        .query_one("select count(*) from chats", &[])
        .await?
        .get(0);
    client.batch_execute("vacuum analyze").await?;
    // Write out what the ingest left dirty now: otherwise the checkpoint it set off (a
    // million messages are about a gigabyte of WAL) flushes it while the phases measure, and
    // every commit waits behind that I/O (wake-ups of 60–100 ms were seen).
    client.batch_execute("checkpoint").await?;
    Ok(IngestFigures {
        offered,
        stored,
        seconds,
        busy_chat_id,
        chats,
        live_commit_ms,
    })
}

/// The writer's live path alone, for attributing the wake-up: one message at a time through
/// [`Archive::ingest_live`], 20 ms apart as in the wait phase (so each meets an idle
/// Postgres backend, as a live message does), timed from the call to its committed outcome.
/// The messages land in chats of their own, never read by the measured tools.
async fn live_commits(archive: &Archive) -> anyhow::Result<[f64; 3]> {
    let mut times = Vec::with_capacity(LIVE_SAMPLES);
    for i in 0..2 * LIVE_SAMPLES {
        let m = Inbound {
            chat_jid: format!("97250770{:04}@s.whatsapp.net", i % LIVE_CHATS),
            wa_id: format!("LIVE{i}"),
            sender_jid: None,
            push_name: None,
            from_me: false,
            timestamp: chrono::Utc::now(),
            kind: wazap_shared::wire::MessageType::Text,
            text: format!("live commit {i}"),
            target_wa_id: None,
            edit: false,
            mentions: vec![],
            attachment: None,
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let started = Instant::now();
        let outcome = archive.ingest_live(DEFAULT_ACCOUNT, m).await?;
        anyhow::ensure!(
            matches!(outcome, wazap_worker::archive::IngestOutcome::Stored { .. }),
            "a live message was not stored: {outcome:?}"
        );
        if i >= LIVE_SAMPLES {
            times.push(started.elapsed());
        }
    }
    Ok(crate::wait::percentiles(times))
}

enum Source {
    Synthetic,
    File(Vec<Inbound>),
}
