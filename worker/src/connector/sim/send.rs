//! The sim connector's send side: faults armed for the next send, a transmission log in
//! Postgres (so it survives `crash_after_transmit`, which aborts the worker process), and the
//! own-message echo handed back with the acknowledgement (the send path archives it through the
//! live ingest path) with the allocated WhatsApp id — as the real connector would observe it.
//!
//! The log is written by one background task, in transmission order, off the send's critical
//! path and without a WAL flush of its own; reading it ([`SimSender::transmissions`]) first
//! waits for every row queued before, and a `crash_after_transmit` send waits for its row
//! before the abort.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use chrono::Utc;
use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::ToSql;
use wazap_shared::RpcError;
use wazap_shared::wire::send::MediaKind;
use wazap_shared::wire::sim::{ArmSendFault, SimTransmission, Transmissions};
use wazap_shared::wire::{MessageType, SyncState};

use crate::archive::{Inbound, InboundAttachment};
use crate::connector::outbound::{OutboundContent, OutboundMessage, SendAck, SendError};
use crate::error::Error;

/// How long a `no_ack` send waits for the ack that never comes, unless the fault says.
const DEFAULT_NO_ACK_WAIT: Duration = Duration::from_secs(10);

/// One transmission-log row (no text, no bytes).
struct LogRow {
    /// This transmission's own id: a batch written twice keeps one row for it.
    id: String,
    account_id: String,
    recipient: String,
    wa_id: String,
    kind: &'static str,
    mime: Option<String>,
    size: Option<i64>,
    ptt: bool,
    caption: bool,
}

/// What the log writer is asked.
enum LogJob {
    /// Append a row.
    Row(LogRow),
    /// Answer once every row queued before is written.
    Flush(oneshot::Sender<()>),
}

/// The send side of the sim.
pub(super) struct SimSender {
    pool: Pool,
    armed: Mutex<Option<ArmSendFault>>,
    /// The log writer's queue, started on first use.
    log: OnceLock<mpsc::UnboundedSender<LogJob>>,
}

impl SimSender {
    /// A sender logging transmissions in `pool`.
    pub(super) fn new(pool: Pool) -> Self {
        Self {
            pool,
            armed: Mutex::new(None),
            log: OnceLock::new(),
        }
    }

    /// The log writer's queue (spawning the writer on first use).
    fn log(&self) -> &mpsc::UnboundedSender<LogJob> {
        self.log.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(write_log(self.pool.clone(), rx));
            tx
        })
    }

    /// Wait until every row queued so far is in Postgres.
    async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.log().send(LogJob::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Arm `fault` for the next send.
    pub(super) fn arm(&self, fault: ArmSendFault) {
        *self.armed.lock().expect("sim fault lock") = Some(fault);
    }

    /// Transmit `msg` from a session in `state`, honouring the armed fault.
    pub(super) async fn send(
        &self,
        state: SyncState,
        msg: OutboundMessage,
    ) -> Result<SendAck, SendError> {
        if !matches!(state, SyncState::Live | SyncState::CatchingUp) {
            return Err(SendError::CannotSend(state));
        }
        let fault = self
            .armed
            .lock()
            .expect("sim fault lock")
            .take()
            .unwrap_or_default();
        if let Some(ms) = fault.transmit_delay_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if fault.fail_upload {
            return Err(SendError::BeforeTransmission(anyhow::anyhow!(
                "sim: the upload failed (armed fault)"
            )));
        }
        self.record(&msg).map_err(SendError::BeforeTransmission)?;
        if fault.crash_after_transmit {
            // The log must tell the truth after the abort.
            self.flush().await;
            tracing::warn!(
                wa_id = %msg.wa_id,
                "sim: aborting the worker right after transmission (armed fault)"
            );
            std::process::abort();
        }
        if fault.error_after_transmit {
            return Err(SendError::AfterTransmission(anyhow::anyhow!(
                "sim: provider error after transmission (armed fault)"
            )));
        }
        if fault.no_ack {
            let wait = fault
                .no_ack_wait_ms
                .map_or(DEFAULT_NO_ACK_WAIT, Duration::from_millis);
            tokio::time::sleep(wait).await;
            return Err(SendError::NoAck);
        }
        if let Some(ms) = fault.ack_delay_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let at = Utc::now();
        Ok(SendAck {
            at,
            echo: Some(echo(msg, at)),
        })
    }

    /// Queue `msg` for the transmission log (no text, no bytes).
    fn record(&self, msg: &OutboundMessage) -> anyhow::Result<()> {
        let (mime, size, ptt, caption) = match &msg.content {
            OutboundContent::Text(_) => (None, None, false, false),
            OutboundContent::Media {
                mime_type,
                data,
                caption,
                ..
            } => (
                Some(mime_type.clone()),
                Some(data.len() as i64),
                false,
                caption.as_deref().is_some_and(|c| !c.is_empty()),
            ),
            OutboundContent::Voice { data, .. } => (
                Some("audio/ogg".to_owned()),
                Some(data.len() as i64),
                true,
                false,
            ),
        };
        self.log()
            .send(LogJob::Row(LogRow {
                id: uuid::Uuid::new_v4().simple().to_string(),
                account_id: msg.account_id.clone(),
                recipient: msg.recipient.clone(),
                wa_id: msg.wa_id.clone(),
                kind: msg.content.kind_name(),
                mime,
                size,
                ptt,
                caption,
            }))
            .map_err(|_| anyhow::anyhow!("sim: the transmission log writer stopped"))
    }

    /// The transmission log, oldest first (after every queued row is written).
    pub(super) async fn transmissions(&self) -> Result<Transmissions, RpcError> {
        self.flush().await;
        let run = async {
            let rows = self
                .pool
                .get()
                .await?
                .query(
                    "select recipient, wa_id, kind, mime_type, size, ptt, caption, at
                       from sim_transmissions order by seq",
                    &[],
                )
                .await?;
            anyhow::Ok(
                rows.iter()
                    .map(|r| SimTransmission {
                        recipient: r.get(0),
                        wa_id: r.get(1),
                        kind: r.get(2),
                        mime_type: r.get(3),
                        size: r.get::<_, Option<i64>>(4).map(|s| s as u64),
                        ptt: r.get(5),
                        caption: r.get(6),
                        at: r.get(7),
                    })
                    .collect(),
            )
        };
        run.await
            .map(|transmissions| Transmissions { transmissions })
            .map_err(|e| RpcError::internal(Error::internal("sim: transmissions", e).log()))
    }
}

/// Write queued rows in order, every row already queued in one insert. A batch that cannot be
/// written while Postgres is unavailable is written again (backing off to 1 s, for up to
/// [`LOG_RETRY_FOR`]): a test reading the log after a Postgres crash sees every transmission,
/// and a batch whose COMMIT answer was lost adds nothing twice (each row's own id); any other
/// failure is logged (by SQLSTATE) and the batch dropped. The log commits asynchronously
/// (`synchronous_commit = off` for its own transactions only): it must survive the worker's
/// abort (`crash_after_transmit`), which a commit does at once — only a crash of Postgres
/// itself could lose its last rows — and so it adds no WAL flush to the sends it runs beside.
async fn write_log(pool: Pool, mut jobs: mpsc::UnboundedReceiver<LogJob>) {
    let mut rows = Vec::new();
    let mut flushes = Vec::new();
    while let Some(job) = jobs.recv().await {
        let mut next = Some(job);
        while let Some(job) = next {
            match job {
                LogJob::Row(r) => rows.push(r),
                LogJob::Flush(done) => flushes.push(done),
            }
            next = jobs.try_recv().ok();
        }
        if !rows.is_empty() {
            write_batch(&pool, &rows).await;
        }
        rows.clear();
        // Every row queued before these flushes is written now.
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

/// How long a log batch is retried while Postgres is unavailable.
const LOG_RETRY_FOR: Duration = Duration::from_secs(60);

/// [`insert_rows`], again while Postgres is unavailable (see [`write_log`]).
async fn write_batch(pool: &Pool, rows: &[LogRow]) {
    let until = tokio::time::Instant::now() + LOG_RETRY_FOR;
    let mut pause = Duration::from_millis(50);
    loop {
        match insert_rows(pool, rows).await {
            Ok(()) => return,
            Err(e) if crate::db::is_unavailable(&e) && tokio::time::Instant::now() < until => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => {
                Error::internal("sim: transmission log", e).log();
                return;
            }
        }
    }
}

/// One transaction for `rows`, in their order (`seq` follows `unnest`'s order).
async fn insert_rows(pool: &Pool, rows: &[LogRow]) -> anyhow::Result<()> {
    let col = |f: fn(&LogRow) -> &str| rows.iter().map(f).collect::<Vec<_>>();
    let (ids, accounts, recipients, wa_ids) = (
        col(|r| &r.id),
        col(|r| &r.account_id),
        col(|r| &r.recipient),
        col(|r| &r.wa_id),
    );
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind).collect();
    let mimes: Vec<Option<&str>> = rows.iter().map(|r| r.mime.as_deref()).collect();
    let sizes: Vec<Option<i64>> = rows.iter().map(|r| r.size).collect();
    let ptts: Vec<bool> = rows.iter().map(|r| r.ptt).collect();
    let captions: Vec<bool> = rows.iter().map(|r| r.caption).collect();
    let client = pool.get().await?;
    let stmt = client.prepare_cached(INSERT_LOG).await?;
    let params: [&(dyn ToSql + Sync); 9] = [
        &accounts,
        &recipients,
        &wa_ids,
        &kinds,
        &mimes,
        &sizes,
        &ptts,
        &captions,
        &ids,
    ];
    // One flight: the transaction with its asynchronous commit, the rows, COMMIT (which rolls
    // back when the insert failed).
    let (begun, inserted, committed) = tokio::join!(
        biased;
        client.batch_execute("begin; set local synchronous_commit = off"),
        client.execute(&stmt, &params),
        client.batch_execute("commit"),
    );
    let done = begun.and(inserted.map(|_| ())).and(committed);
    if done.is_err() && client.batch_execute("rollback").await.is_err() {
        // A connection that cannot even roll back leaves the pool.
        let _ = deadpool_postgres::Object::take(client);
    }
    Ok(done?)
}

/// The transmission-log insert of [`insert_rows`]: `$1..$9` are its columns as arrays; a row
/// already written (a batch written again) is skipped.
const INSERT_LOG: &str = "insert into sim_transmissions
       (account_id, recipient, wa_id, kind, mime_type, size, ptt, caption, transmission)
     select a, rc, w, k, m, s, p, c, t
       from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                   $6::int8[], $7::bool[], $8::bool[], $9::text[])
            with ordinality as r(a, rc, w, k, m, s, p, c, t, n)
      order by n
     on conflict (transmission) do nothing";

fn attachment(
    mime_type: String,
    data: &[u8],
    filename: Option<String>,
    seconds: Option<u32>,
) -> InboundAttachment {
    InboundAttachment {
        mime_type,
        filename,
        size: Some(data.len() as u64),
        seconds,
        thumbnail: None,
        data: Some(data.to_vec()),
        media: None,
    }
}

/// The own-message echo, as the archive keeps it (`from_me`); the send path archives it.
fn echo(msg: OutboundMessage, at: chrono::DateTime<Utc>) -> Inbound {
    let (kind, text, attachment) = match msg.content {
        OutboundContent::Text(t) => (MessageType::Text, t, None),
        OutboundContent::Media {
            kind,
            mime_type,
            data,
            filename,
            caption,
            seconds,
        } => (
            match kind {
                MediaKind::Image => MessageType::Image,
                MediaKind::Video => MessageType::Video,
                MediaKind::Audio => MessageType::Audio,
                MediaKind::Document => MessageType::Document,
            },
            caption.unwrap_or_default(),
            Some(attachment(mime_type, &data, filename, seconds)),
        ),
        OutboundContent::Voice { data, seconds } => (
            MessageType::Voice,
            String::new(),
            Some(attachment("audio/ogg".into(), &data, None, Some(seconds))),
        ),
    };
    Inbound {
        chat_jid: msg.recipient,
        wa_id: msg.wa_id,
        sender_jid: None,
        push_name: None,
        from_me: true,
        timestamp: at,
        kind,
        text,
        target_wa_id: None,
        edit: false,
        mentions: Vec::new(),
        attachment,
    }
}
