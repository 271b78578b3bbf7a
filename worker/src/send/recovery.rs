//! Start-up recovery of the journal (DESIGN §5): a send that was being handed over when the
//! worker stopped may have left, so it becomes `outcome_unknown` (and never transmits again);
//! one that was only reserved never left, so it becomes `failed`. Runs before any request is
//! served; there is exactly one worker.

use deadpool_postgres::Pool;

/// What recovery changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// `transmitting` → `outcome_unknown`.
    pub unknown: u64,
    /// `reserved` → `failed`.
    pub failed: u64,
    /// Outbox rows removed (expired, settled or echoed).
    pub swept: u64,
}

/// Settle every unfinished send and sweep the outbox, in one transaction.
pub async fn recover(pool: &Pool) -> anyhow::Result<Recovered> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let unknown = tx
        .execute(
            "update send_journal set state = 'outcome_unknown', updated_at = now()
             where state = 'transmitting'",
            &[],
        )
        .await?;
    let failed = tx
        .execute(
            "update send_journal set state = 'failed', updated_at = now()
             where state = 'reserved'",
            &[],
        )
        .await?;
    let swept = super::outbox::sweep(&tx).await?;
    tx.commit().await?;
    let r = Recovered {
        unknown,
        failed,
        swept,
    };
    if unknown + failed > 0 {
        tracing::warn!(
            outcome_unknown = unknown,
            failed,
            "unfinished sends settled after an unclean stop"
        );
    }
    Ok(r)
}
