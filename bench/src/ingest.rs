//! Phase 1: fill the archive through the worker's batch ingest path (the history-sync path),
//! all indexes live, and measure messages per second.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wazap_shared::ids::DEFAULT_ACCOUNT;
use wazap_worker::archive::{Archive, Inbound};

use crate::args::Args;
use crate::dataset::{self, Rng};
use crate::phone::{Phone, PhoneSummary};

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
    /// `pg_database_size` after the ingest, vacuum and checkpoint.
    pub(crate) db_bytes: i64,
    /// Messages in the archive then (the ingest's and the live commits').
    pub(crate) messages: i64,
    /// The phone shape's run, with `--shape phone`.
    pub(crate) phone: Option<PhoneRun>,
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

    let now = chrono::Utc::now();
    let (mut source, offered) = match (&args.jsonl, args.phone) {
        (Some(path), _) => {
            let (reader, n) = dataset::JsonlReader::open(path)?;
            (Source::File(Box::new(reader)), n)
        }
        (None, true) => {
            let phone = Phone::new(args.messages, args.contacts, now);
            phonebook(&archive, &phone).await?;
            (Source::Phone(Box::new(phone)), args.messages)
        }
        (None, false) => (Source::Synthetic, args.messages),
    };
    eprintln!("wazap-bench: ingesting {offered} messages through the batch path");
    // Slabs are made on a thread of their own, one ahead of the archive, so the figure is the
    // archive's rate and not the generator's: a real history sync decodes its blobs beside the
    // writer in the same way. Nothing holds more than the slabs in flight (issue 29 item 5: the
    // bench's memory must not hide the product's).
    let (slabs, mut next_slab) = tokio::sync::mpsc::channel::<Vec<Inbound>>(1);
    let chats = args.chats;
    let producer = std::thread::spawn(move || -> anyhow::Result<Source> {
        let mut rng = Rng::new(0x5eed);
        let mut done = 0usize;
        while done < offered {
            let to = (done + SLAB).min(offered);
            let slab = match &mut source {
                Source::File(reader) => {
                    let mut slab = Vec::with_capacity(to - done);
                    while slab.len() < to - done
                        && let Some(m) = reader.next_message()?
                    {
                        slab.push(m);
                    }
                    slab
                }
                Source::Phone(phone) => phone.slab(to - done),
                Source::Synthetic => dataset::synthetic(done, to, offered, chats, now, &mut rng),
            };
            if slab.is_empty() || slabs.blocking_send(slab).is_err() {
                break;
            }
            done = to;
        }
        Ok(source)
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
    let source = producer
        .join()
        .map_err(|_| anyhow::anyhow!("the data set generator panicked"))??;
    let (busy_jid, phone) = match source {
        Source::File(reader) => (reader.busiest(), None),
        Source::Phone(phone) => (phone.busy_jid(), Some(phone.finish())),
        Source::Synthetic => (dataset::chat_jid(dataset::BUSY_CHAT), None),
    };
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
    let db_bytes: i64 = client
        .query_one("select pg_database_size(current_database())", &[])
        .await?
        .get(0);
    let messages: i64 = client
        .query_one("select count(*) from messages", &[])
        .await?
        .get(0);
    // The phone shape's quiet chat, and a message half way back in each measured chat for
    // its `before` page.
    let phone = match phone {
        Some(summary) => {
            let quiet_chat_id: String = client
                .query_one(
                    "select chat_id from chat_aliases where account_id = $1 and jid = $2",
                    &[&DEFAULT_ACCOUNT, &summary.quiet.0],
                )
                .await?
                .get(0);
            let mut before = Vec::new();
            for (chat, count) in [
                (&busy_chat_id, summary.busy.1),
                (&quiet_chat_id, summary.quiet.1),
            ] {
                let row = client
                    .query_one(
                        "select message_id from messages where account_id = $1 and chat_id = $2
                          order by ts desc, position desc offset $3 limit 1",
                        &[&DEFAULT_ACCOUNT, chat, &((count / 2) as i64)],
                    )
                    .await?;
                before.push(row.get::<_, String>(0));
            }
            let quiet_before = before.pop().unwrap_or_default();
            let busy_before = before.pop().unwrap_or_default();
            Some(PhoneRun {
                summary,
                quiet_chat_id,
                busy_before,
                quiet_before,
            })
        }
        None => None,
    };
    Ok(IngestFigures {
        offered,
        stored,
        seconds,
        busy_chat_id,
        chats,
        live_commit_ms,
        db_bytes,
        messages,
        phone,
    })
}

/// The phone shape's phonebook and groups, written before its messages (as a phone's first
/// sync gives them), untimed; with fewer than 1,000 contacts, also the phone-number/LID pairs
/// of the people known but not saved.
async fn phonebook(archive: &Archive, phone: &Phone) -> anyhow::Result<()> {
    let started = Instant::now();
    let contacts = phone.contacts();
    let groups = phone.groups();
    let links = phone.links();
    let (nc, ng, nl) = (contacts.len(), groups.len(), links.len());
    for c in contacts {
        archive.upsert_contact(DEFAULT_ACCOUNT, c).await?;
    }
    if !links.is_empty() {
        archive.link_aliases(DEFAULT_ACCOUNT, links).await?;
    }
    for g in groups {
        archive.upsert_group(DEFAULT_ACCOUNT, g).await?;
    }
    let linked = if nl > 0 {
        format!(" ({nl} unsaved people's LIDs linked)")
    } else {
        String::new()
    };
    eprintln!(
        "wazap-bench: phonebook of {nc} contacts and {ng} groups written in {:.1} s{linked}",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The phone shape's figures from generating it, and the ids its phases read.
#[derive(Debug, Clone)]
pub(crate) struct PhoneRun {
    pub(crate) summary: PhoneSummary,
    pub(crate) quiet_chat_id: String,
    /// A message half way back in the busiest chat, and in the quiet one.
    pub(crate) busy_before: String,
    pub(crate) quiet_before: String,
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
    File(Box<dataset::JsonlReader>),
    Phone(Box<Phone>),
}
