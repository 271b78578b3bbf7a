//! A throwaway nats-server for one test, so a test can kill NATS and start it again (same port,
//! same JetStream store, as a restarted deployment would) without touching the machine's server.
//!
//! It runs `WAZAP_TEST_NATS_SERVER` (`scripts/services.sh` exports a JetStream-capable one),
//! else `nats-server` from the `PATH`, on 127.0.0.1 and a free port, with JetStream on (the
//! gateway's media bucket needs it, DESIGN §8) and its store in a fresh temporary directory.
//! [`NatsServer::start_configured`] loads a configuration file first (e.g. `deploy/nats.conf`'s
//! users and permissions), the command line still choosing address, port, monitoring port and
//! store, and logs to a file the test can read ([`NatsServer::log`]).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A running (or killed) throwaway nats-server; dropping it kills it and removes its store.
#[derive(Debug)]
pub struct NatsServer {
    port: u16,
    store: PathBuf,
    child: Option<Child>,
    /// A configuration file, the environment its `$VAR`s read, the monitoring port and the log.
    configured: Option<Configured>,
}

#[derive(Debug)]
struct Configured {
    file: PathBuf,
    env: Vec<(String, String)>,
    http_port: u16,
    log: PathBuf,
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl NatsServer {
    /// Start one on a free loopback port and wait until it accepts connections.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(None).await
    }

    /// Start one with the configuration `config` (the text of a nats-server configuration
    /// file, written beside the store) and `env` set for its `$VAR` references. Address, port,
    /// monitoring port and store come from the command line, which overrides the file's.
    pub async fn start_configured(config: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let name = format!("wazap-nats-{}", crate::random_hex(6));
        let file = std::env::temp_dir().join(format!("{name}.conf"));
        std::fs::write(&file, config)?;
        let configured = Configured {
            file,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            http_port: free_port()?,
            log: std::env::temp_dir().join(format!("{name}.log")),
        };
        Self::start_with(Some(configured)).await
    }

    async fn start_with(configured: Option<Configured>) -> anyhow::Result<Self> {
        let port = free_port()?;
        let store = std::env::temp_dir().join(format!("wazap-nats-{}", crate::random_hex(6)));
        let mut server = Self {
            port,
            store,
            child: None,
            configured,
        };
        server.start_again().await?;
        Ok(server)
    }

    /// What a configured server logged so far (empty for an unconfigured one).
    pub fn log(&self) -> String {
        self.configured
            .as_ref()
            .and_then(|c| std::fs::read_to_string(&c.log).ok())
            .unwrap_or_default()
    }

    /// `http://127.0.0.1:<port>` of a configured server's monitoring endpoints (`/healthz`,
    /// `/connz`, `/jsz`; the same across restarts), `None` for an unconfigured one.
    pub fn monitor_url(&self) -> Option<String> {
        self.configured
            .as_ref()
            .map(|c| format!("http://127.0.0.1:{}", c.http_port))
    }

    /// Whether it runs (it was not killed, or was started again).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// `nats://127.0.0.1:<port>` (the same across restarts).
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kill it (SIGKILL, as a crash would) and wait until it is gone: every client's
    /// connection ends.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.start_kill()?;
            child.wait().await?;
        }
        Ok(())
    }

    /// Start it (again) on the same port and store, and wait until it accepts connections.
    pub async fn start_again(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.child.is_none(), "nats-server is already running");
        let bin =
            std::env::var("WAZAP_TEST_NATS_SERVER").unwrap_or_else(|_| "nats-server".to_owned());
        let mut command = Command::new(bin);
        if let Some(c) = &self.configured {
            command
                .arg("-c")
                .arg(&c.file)
                .args(["-m", &c.http_port.to_string(), "-l"])
                .arg(&c.log)
                .envs(c.env.iter().map(|(k, v)| (k, v)));
        }
        let child = command
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            anyhow::ensure!(Instant::now() < deadline, "nats-server did not come up");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.store);
        if let Some(c) = &self.configured {
            let _ = std::fs::remove_file(&c.file);
            let _ = std::fs::remove_file(&c.log);
        }
    }
}
