//! The archive: the single writer that gives messages their positions, identity resolution
//! (JIDs → opaque ids), and the read queries behind the read tools.

use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

/// The archive's identity, created with the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveMeta {
    /// Changes when the database is re-created; cursors carry it.
    pub archive_id: uuid::Uuid,
}

/// A handle to the archive: its identity and its single writer.
#[derive(Clone)]
pub struct Archive {
    meta: ArchiveMeta,
}

impl Archive {
    /// Load (or create) the archive's identity and the default account, and start the writer.
    pub async fn start(pool: Pool, shutdown: CancellationToken) -> anyhow::Result<Self> {
        let _ = (pool, shutdown);
        todo!("archive writer")
    }

    /// The archive's identity.
    pub fn meta(&self) -> &ArchiveMeta {
        &self.meta
    }
}
