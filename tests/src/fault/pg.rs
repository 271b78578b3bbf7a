//! A throwaway PostgreSQL cluster for one test, so a test can crash Postgres
//! (`pg_ctl stop -m immediate`) and start it again without touching the machine's server.
//!
//! It uses the installed server binaries (`WAZAP_TEST_PG_BIN`, else `/usr/local/bin`, else the
//! newest `/usr/lib/postgresql/*/bin`). `initdb` refuses to run as root, so when the test runs
//! as root (CI does) every server command runs as the `postgres` OS user through `runuser`, in
//! a directory that user owns. The cluster listens on 127.0.0.1 only, trusts every local
//! connection, and keeps `fsync` on (the worker refuses to run without it).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The OS user the server runs as when the test runs as root.
const SERVER_USER: &str = "postgres";
/// Where clusters live: `<temp>/wazap-pg-<random>`.
const PREFIX: &str = "wazap-pg-";
/// The file naming the test process a cluster belongs to.
const OWNER: &str = "owner.pid";

/// A running (or stopped) throwaway cluster; dropping it stops it at once and removes its files.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_root: bool,
}

impl PgCluster {
    /// Create a cluster in a fresh temporary directory and start it on a free port.
    pub async fn start() -> anyhow::Result<Self> {
        let bin = server_bin()?;
        let as_root = is_root()?;
        reap(&bin, as_root);
        let dir = std::env::temp_dir().join(format!("{PREFIX}{}", crate::random_hex(6)));
        std::fs::create_dir(&dir)?;
        std::fs::write(dir.join(OWNER), std::process::id().to_string())?;
        let cluster = Self {
            bin,
            port: free_port()?,
            as_root,
            dir,
        };
        if cluster.as_root {
            run(Command::new("chown")
                .arg(format!("{SERVER_USER}:"))
                .arg(&cluster.dir))
            .await?;
        }
        let mut initdb = cluster.server_command("initdb");
        initdb
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(cluster.data());
        run(&mut initdb).await?;
        // Settings live in the data directory, so `start_again` keeps them.
        let settings = format!(
            "\nport = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = on\nsynchronous_commit = on\nshared_buffers = 16MB\nmax_connections = 60\n\
             logging_collector = off\n",
            cluster.port,
            cluster.dir.display()
        );
        let conf = cluster.data().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf)?;
        text.push_str(&settings);
        std::fs::write(&conf, text)?;
        cluster.start_again().await?;
        Ok(cluster)
    }

    /// The URL of its `postgres` database (a server URL for [`crate::Stack::start_on_server`]).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Start it (again), on the same port and data, and wait until it accepts connections.
    pub async fn start_again(&self) -> anyhow::Result<()> {
        let mut start = self.pg_ctl("start");
        start
            .args(["-w", "-t", "30", "-l"])
            .arg(self.dir.join("server.log"));
        run(&mut start).await
    }

    /// Stop it the way a crash would: `pg_ctl stop -m immediate` (no checkpoint; the next
    /// start replays the WAL). Clients see their connections end.
    pub async fn stop_immediate(&self) -> anyhow::Result<()> {
        let mut stop = self.pg_ctl("stop");
        stop.args(["-m", "immediate", "-w"]);
        run(&mut stop).await
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn pg_ctl(&self, action: &str) -> Command {
        let mut c = self.server_command("pg_ctl");
        c.arg(action).arg("-D").arg(self.data());
        c
    }

    /// `program` of the server's binaries, as the server's OS user.
    fn server_command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut c = if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", SERVER_USER, "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        // The server inherits nothing it could hold open (pg_ctl's `-l` takes its output).
        c.stdin(Stdio::null()).current_dir(&self.dir);
        c
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .pg_ctl("stop")
            .args(["-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Stop and remove the clusters of test processes that are gone (killed by a timeout, say, so
/// their `Drop` never ran): a server left running would hold its memory and port for good.
fn reap(bin: &Path, as_root: bool) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for dir in entries.flatten().map(|e| e.path()) {
        let ours = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(PREFIX));
        let owner = std::fs::read_to_string(dir.join(OWNER)).unwrap_or_default();
        let alive = Path::new("/proc").join(owner.trim()).exists();
        if !ours || owner.trim().is_empty() || alive {
            continue;
        }
        let orphan = PgCluster {
            bin: bin.to_owned(),
            dir,
            port: 0,
            as_root,
        };
        // Its Drop stops the server (if it still runs) and removes the directory.
        drop(orphan);
    }
}

/// Run `command` to completion off the async threads; its output goes into the error.
async fn run(command: &mut Command) -> anyhow::Result<()> {
    let described = format!("{command:?}");
    let mut command = tokio::process::Command::from(std::mem::replace(command, Command::new("")));
    let out = command.output().await?;
    anyhow::ensure!(
        out.status.success(),
        "{described} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Where `initdb` and `pg_ctl` are.
fn server_bin() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("WAZAP_TEST_PG_BIN") {
        return Ok(dir.into());
    }
    let local = Path::new("/usr/local/bin");
    if local.join("initdb").exists() && local.join("pg_ctl").exists() {
        return Ok(local.into());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort_by_key(|b| {
        b.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found
        .pop()
        .ok_or_else(|| anyhow::anyhow!("no initdb found; set WAZAP_TEST_PG_BIN"))
}

/// A port nobody listens on now (the kernel's pick for port 0).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether this process runs as root (`id -u`, to need no libc binding).
fn is_root() -> anyhow::Result<bool> {
    let out = Command::new("id").arg("-u").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}
