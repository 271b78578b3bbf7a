//! Delivery and read receipts of journaled sends: the connector hands each one over
//! ([`Receipts`]) and the journal row that sent the message under its WhatsApp id keeps the
//! first time it was delivered (`delivered_at`) and read (`read_at`; read implies delivered).
//!
//! Each time is written once and never moved: a repeated receipt, one that arrives late with an
//! older time (an offline queue drained after a later one), a delivery after the read, or a
//! receipt from another member of a group changes nothing, so a time once shown stays true.
//! Ids the journal never sent (messages sent from the phone, say) match no row and are ignored.

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool};
use futures::future::BoxFuture;

use crate::connector::outbound::{Receipt, Receipts};
use crate::metrics;

/// The times of one receipt: `$1` account, `$2` WhatsApp ids, `$3` read (else delivered), `$4`
/// when. Only rows that gain a time are updated (and counted).
const RECORD: &str = "update send_journal
        set delivered_at = coalesce(delivered_at, $4),
            read_at = case when $3 then coalesce(read_at, $4) else read_at end
      where account_id = $1 and wa_id = any($2)
        and (delivered_at is null or ($3 and read_at is null))";

/// Record one receipt's time on the journal rows of its ids; returns how many rows gained one.
#[tracing::instrument(name = "postgres", skip_all, fields(db.system = "postgresql", db.operation = "journal.receipt"))]
pub async fn record(
    db: &impl GenericClient,
    account_id: &str,
    wa_ids: &[String],
    read: bool,
    at: DateTime<Utc>,
) -> anyhow::Result<u64> {
    let stmt = db.prepare_cached(RECORD).await?;
    Ok(db
        .execute(&stmt, &[&account_id, &wa_ids, &read, &at])
        .await?)
}

/// The journal as the connector's receipt recorder.
#[derive(Clone)]
pub struct JournalReceipts {
    db: Pool,
}

impl JournalReceipts {
    /// A recorder writing through `db`.
    pub fn new(db: Pool) -> Self {
        Self { db }
    }
}

impl Receipts for JournalReceipts {
    fn record(&self, receipt: Receipt) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let kind = receipt.kind.as_str();
            let ids = receipt.wa_ids.len();
            let written = async {
                let db = self.db.get().await?;
                let wa_ids = &receipt.wa_ids;
                record(
                    &db,
                    &receipt.account_id,
                    wa_ids,
                    receipt.kind.is_read(),
                    receipt.at,
                )
                .await
            }
            .await;
            match written {
                Ok(n) => {
                    let n = usize::try_from(n).unwrap_or(ids).min(ids);
                    metrics::receipts(kind, "recorded", n);
                    metrics::receipts(kind, "unchanged", ids - n);
                    tracing::debug!(kind, ids, recorded = n, "receipt of sent messages");
                    Ok(())
                }
                Err(e) => {
                    metrics::receipts(kind, "failed", ids);
                    Err(e)
                }
            }
        })
    }
}
