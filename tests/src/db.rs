//! A test database, made per test on a Postgres server and dropped with its value.

use crate::{database_server_url, random_hex};

/// A database made for one test; dropped (forcibly) when the value is dropped.
pub struct TestDb {
    /// Its URL.
    pub url: String,
    name: String,
    /// The server it was made on (where it is dropped from).
    server: String,
    keep: bool,
}

impl TestDb {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Create an empty database with a random name.
    pub async fn create() -> anyhow::Result<Self> {
        Self::create_on(&database_server_url()).await
    }

    /// Create an empty database with a random name on the server at `server_url` (a
    /// throwaway cluster, say).
    pub async fn create_on(server_url: &str) -> anyhow::Result<Self> {
        let name = format!("wazap_t_{}", random_hex(8));
        let url = wazap_worker::db::create_database(server_url, &name).await?;
        Ok(Self {
            url,
            name,
            server: server_url.to_owned(),
            keep: false,
        })
    }

    /// Keep the database when this value is dropped (the benchmark's `--keep`).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let admin = self.server.clone();
        let name = self.name.clone();
        // Drop runs outside any runtime guarantee: use a short-lived one on its own thread.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async move {
                let (client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                    .await
                    .ok()?;
                tokio::spawn(conn);
                client
                    .batch_execute(&format!("drop database if exists {name} with (force)"))
                    .await
                    .ok()
            })
        })
        .join();
    }
}
