//! The real `whatsapp` connector end to end against wanet, the WhatsApp test network: a server on
//! a loopback websocket and simulated phones that are real whatsapp-rust clients.

mod bad_input;
mod certificate;
mod durable;
mod faults;
mod groups;
mod history;
mod killed;
mod linking;
mod linking_cli;
mod media;
mod messages;
mod people;
mod phones;
mod resend;
mod sending;
mod session;
mod stalled_archive;
mod two_accounts;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wanet::{Network, Phone};
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::{Gateway, Mcp, Stack};

use crate::owner::Owner;

/// A WhatsApp test network whose phones' numbers and texts are recorded for the leak scan (the
/// worker must log none of them).
pub(crate) async fn start_network() -> anyhow::Result<Network> {
    wanet::set_secret_hook(wazap_tests::leak::record_secret);
    Network::start().await
}

/// The account number of the phone the worker links to.
pub(crate) const OWNER: &str = "15550000001";

/// A worker and gateway on `net`, linked to `phone` from the dashboard, live.
pub(crate) struct Linked {
    pub(crate) stack: Stack,
    pub(crate) gw: Gateway,
    pub(crate) owner: Owner,
}

impl Linked {
    /// Start a worker on `net`, link `phone` by QR from the dashboard and wait until it is live.
    pub(crate) async fn start(net: &Network, phone: &Phone) -> anyhow::Result<Self> {
        let stack = Stack::whatsapp(&net.url()).await?;
        let gw = stack.gateway(&[]).await?;
        let owner = Owner::login(&stack, &gw).await?;
        let a = owner
            .post(&gw, "/api/account", json!({"action": "pair_with_qr"}))
            .await?;
        anyhow::ensure!(a.status == 200, "pair_with_qr: {}", a.text);
        let (a, _) = account_until(&owner, &gw, Duration::from_secs(10), |a| {
            a["qr"].as_str().is_some()
        })
        .await?;
        let scanned = Instant::now();
        phone.scan(a["qr"].as_str().unwrap_or_default())?;
        account_until(&owner, &gw, Duration::from_secs(30), |a| {
            a["state"] == "live"
        })
        .await?;
        // Shown with `--no-capture`: the figure bench/README.md records (scan to `live`).
        eprintln!(
            "linked: scan to live in {} ms",
            scanned.elapsed().as_millis()
        );
        Ok(Self { stack, gw, owner })
    }

    /// An MCP client of a new connection that may read every chat.
    pub(crate) async fn reader(&self) -> anyhow::Result<Mcp> {
        self.gw
            .mcp(&self.stack.token(ReadScope::all()).await?)
            .await
    }
}

/// `read_messages` with `args`, polled until `done` holds for its result, at most 10 s: the
/// result (what arrives through the worker takes a few milliseconds to be archived).
pub(crate) async fn read_until(
    mcp: &Mcp,
    args: Value,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = mcp.call("read_messages", args.clone()).await?;
        let last = if r.is_error {
            Value::Null
        } else {
            r.ok().clone()
        };
        if done(&last) {
            return Ok(last);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "read_messages {args} never matched; last: {last}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The number of messages in a `read_messages` result (0 for none or an error).
pub(crate) fn count(read: &Value) -> usize {
    read["messages"].as_array().map_or(0, Vec::len)
}

/// Poll the dashboard's account until `done` holds for it, at most `wait`; it, and every state
/// seen on the way.
pub(crate) async fn account_until(
    owner: &Owner,
    gw: &Gateway,
    wait: Duration,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<(Value, Vec<String>)> {
    let deadline = Instant::now() + wait;
    let mut seen: Vec<String> = Vec::new();
    loop {
        let a = owner.get(gw, "/api/account").await?.json;
        let state = a["state"].as_str().unwrap_or_default().to_owned();
        if seen.last() != Some(&state) {
            seen.push(state);
        }
        if done(&a) {
            return Ok((a, seen));
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "account stuck; states seen: {seen:?}, last: {a}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
