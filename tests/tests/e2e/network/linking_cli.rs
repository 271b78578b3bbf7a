//! `wazap-worker link --phone DIGITS` against the test network, with the worker stopped: the
//! command asks WhatsApp for a pairing code and prints it, the phone types it, the command says
//! the phone is linked and exits 0, and the worker started afterwards on the same device store
//! is `live`. The command is this test binary re-run as a process of its own ([`link_process`]),
//! which carries out the command line in [`ARGS`] exactly as `wazap-worker` does.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt as _;

use super::{OWNER, account_until};
use crate::owner::Owner;

/// The variable carrying [`link_process`]'s command line (the words after `wazap-worker`):
/// libtest owns the process's own arguments.
const ARGS: &str = "WAZAP_TEST_WORKER_ARGS";

/// What the command prints before the code to type on the phone (`cli/link.rs`).
const CODE_PREFIX: &str = "then type: ";

/// Not a test of its own: the `wazap-worker` process [`link_from_the_terminal_with_a_pairing_code`]
/// starts by running this binary with `--ignored --exact`, the stack's environment and [`ARGS`].
#[tokio::test]
#[ignore = "run as a child process by the link command test"]
async fn link_process() -> anyhow::Result<()> {
    let args = std::env::var(ARGS)?;
    let command = wazap_worker::cli::parse(args.split_whitespace().map(str::to_owned))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let config = wazap_worker::Config::from_source(&wazap_shared::config::Env)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let code = wazap_worker::cli::run::execute(command, config).await;
    anyhow::ensure!(code == ExitCode::SUCCESS, "exit code {code:?}");
    Ok(())
}

#[tokio::test]
async fn link_from_the_terminal_with_a_pairing_code() -> anyhow::Result<()> {
    let net = super::start_network().await?;
    let phone = net.phone(OWNER, "Owner").await?;
    let mut stack = wazap_tests::Stack::whatsapp(&net.url()).await?;
    let gw = stack.gateway(&[]).await?;
    let owner = Owner::login(&stack, &gw).await?;
    let (a, _) = account_until(&owner, &gw, Duration::from_secs(10), |a| {
        a["state"] == "unpaired"
    })
    .await?;
    assert!(a["pairing_code"].is_null(), "{a}");

    // The command takes the device store: the worker is stopped first.
    stack.stop_worker().await?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "network::linking_cli::link_process",
            "--ignored",
            "--nocapture",
        ])
        .env_remove(wazap_worker::config::OWNER_PASSWORD)
        .envs(stack.worker_env())
        .env(ARGS, format!("link --phone {OWNER}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut said: Vec<String> = Vec::new();
    let mut typed = None;
    let read = async {
        while let Some(line) = lines.next_line().await? {
            if typed.is_none()
                && let Some((_, code)) = line.split_once(CODE_PREFIX)
            {
                let code = code.trim().to_owned();
                phone.enter_code(&code)?;
                typed = Some((code, started.elapsed()));
            }
            said.push(line);
        }
        anyhow::Ok(())
    };
    let finished = tokio::time::timeout(Duration::from_secs(60), read).await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let took = started.elapsed();
    eprintln!("link: code typed at {typed:?}, process done in {took:?}");
    let said = said.join("\n");
    anyhow::ensure!(
        finished.is_ok(),
        "the link command did not finish in 60 s; it said:\n{said}"
    );
    finished.expect("checked")?;
    let status =
        status.map_err(|_| anyhow::anyhow!("stderr closed, the process kept running"))??;
    let (code, _) = typed.ok_or_else(|| anyhow::anyhow!("no pairing code shown:\n{said}"))?;
    assert_eq!(code.len(), 8, "an 8-character code: {said}");
    assert!(status.success(), "the link command failed:\n{said}");
    assert!(
        said.contains("linked; start the worker"),
        "it never said the phone is linked:\n{said}"
    );
    assert!(
        !said.contains("scan with WhatsApp"),
        "with --phone it showed a QR code:\n{said}"
    );
    assert_eq!(net.companions(OWNER).len(), 1);

    // The worker, started again on the store the command wrote, is the linked device.
    stack.start_worker().await?;
    let restarted = Instant::now();
    account_until(&owner, &gw, Duration::from_secs(30), |a| {
        a["state"] == "live"
    })
    .await?;
    eprintln!("worker live {:?} after its start", restarted.elapsed());
    phone.stop().await;
    Ok(())
}
