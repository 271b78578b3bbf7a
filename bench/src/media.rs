//! Phase `media` (#26 item 4; only when named: `--only media`): the gateway's memory under a
//! storm of media sends, on a sim stack of its own. Twenty 8 MiB sends at once from four
//! credentials (`wazap_tests::media_storm`, the storm the e2e test `media_storm` asserts on),
//! once through `POST /api/send/media` and once as `/mcp` `tools/call` of `send_media` (the
//! direct route), each door on a fresh `wazap-gateway` child process (the release binary beside
//! this one): its RSS at idle (`VmRSS`), its peak (`VmHWM`, the kernel's high-water mark, read
//! once the storm is answered) and the answers: accepted, `busy`, other. DESIGN §11: 40 MiB.
//! The phase fails when an answer is neither accepted nor `busy`, or none is accepted.

use std::time::Duration;

use serde_json::{Value, json};
use wazap_shared::wire::grants::SendMode;
use wazap_tests::fixtures::person;
use wazap_tests::media_storm::{self, CREDENTIALS, MEDIA_BYTES, Route, SENDS, Tally};
use wazap_tests::{ChildGateway, Stack, TestDb, status_kib};
use wazap_worker::config::ConnectorKind;

/// DESIGN §11: the gateway within 40 MiB RSS.
const BUDGET_KIB: u64 = 40 * 1024;

/// One door's storm.
struct Door {
    route: Route,
    idle_kib: u64,
    peak_kib: u64,
    tally: Tally,
}

/// The figures.
#[derive(Default)]
pub(crate) struct MediaFigures {
    doors: Vec<Door>,
    /// Why the phase measured nothing.
    note: Option<String>,
}

/// Run the phase.
pub(crate) async fn run() -> anyhow::Result<MediaFigures> {
    let exe = std::env::current_exe()?.with_file_name("wazap-gateway");
    if !exe.exists() {
        return Ok(MediaFigures {
            note: Some(format!(
                "media storm skipped: {} not built (cargo build --release -p wazap-gateway)",
                exe.display()
            )),
            ..MediaFigures::default()
        });
    }
    let stack = Stack::on(TestDb::create().await?, ConnectorKind::Sim).await?;
    let chat = stack.contact(&person("972503334444"), None, "Dana").await?;
    let mut tokens = Vec::new();
    for _ in 0..CREDENTIALS {
        tokens.push(stack.sending_connection(SendMode::All, vec![]).await?.1);
    }
    let mut figures = MediaFigures::default();
    for route in Route::ALL {
        let tag = match route {
            Route::Api => "api",
            Route::Mcp => "mcp",
        };
        figures
            .doors
            .push(door(&stack, &exe, route, &chat, &tokens, tag).await?);
        // The next door starts as this one did: nothing left in the bucket.
        media_storm::bucket_empty(&stack, Duration::from_secs(15)).await?;
    }
    Ok(figures)
}

/// One storm on a fresh child gateway.
async fn door(
    stack: &Stack,
    exe: &std::path::Path,
    route: Route,
    chat: &str,
    tokens: &[String],
    tag: &str,
) -> anyhow::Result<Door> {
    let gateway = ChildGateway::spawn(stack, exe)?;
    media_storm::wait_answering(&gateway.addr, &tokens[0]).await?;
    let idle_kib = status_kib(gateway.pid, "VmRSS:")?;
    let requests = media_storm::requests(route, chat, tokens, tag);
    let tally = media_storm::storm(&gateway.addr, route, requests).await?;
    let peak_kib = status_kib(gateway.pid, "VmHWM:")?;
    drop(gateway);
    Ok(Door {
        route,
        idle_kib,
        peak_kib,
        tally,
    })
}

/// KiB as MiB.
fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl MediaFigures {
    /// Print the table on stdout.
    pub(crate) fn print(&self) {
        if let Some(note) = &self.note {
            println!("\n{note}");
            return;
        }
        println!(
            "\n| media storm: {SENDS} × {} MiB sends at once, {CREDENTIALS} credentials, child gateway | idle RSS MiB | peak RSS MiB | peak above idle MiB | accepted | busy | other | budget (DESIGN §11) |",
            MEDIA_BYTES / (1024 * 1024)
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for d in &self.doors {
            println!(
                "| `{}` | {:.1} | {:.1} | {:.1} | {} | {} | {} | peak ≤ 40 MiB: {} |",
                d.route.door(),
                mib(d.idle_kib),
                mib(d.peak_kib),
                mib(d.peak_kib.saturating_sub(d.idle_kib)),
                d.tally.sent,
                d.tally.busy,
                d.tally.other.len(),
                if d.peak_kib <= BUDGET_KIB {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
        for d in &self.doors {
            for (status, body) in &d.tally.other {
                println!("{}: answered {status:?} {body}", d.route.door());
            }
        }
    }

    /// The figures as JSON.
    pub(crate) fn to_json(&self) -> Value {
        let doors: serde_json::Map<String, Value> = self
            .doors
            .iter()
            .map(|d| {
                let name = match d.route {
                    Route::Api => "api_send_media",
                    Route::Mcp => "mcp_send_media",
                };
                let door = json!({
                    "idle_rss_kib": d.idle_kib,
                    "peak_rss_kib": d.peak_kib,
                    "peak_above_idle_kib": d.peak_kib.saturating_sub(d.idle_kib),
                    "accepted": d.tally.sent,
                    "busy": d.tally.busy,
                    "other": d.tally.other.len(),
                });
                (name.to_owned(), door)
            })
            .collect();
        json!({
            "sends": SENDS,
            "credentials": CREDENTIALS,
            "media_bytes": MEDIA_BYTES,
            "budget_rss_kib": BUDGET_KIB,
            "doors": doors,
            "note": self.note,
        })
    }

    /// An error when a door's send was answered neither accepted nor `busy`, or none was
    /// accepted.
    pub(crate) fn verdict(&self) -> anyhow::Result<()> {
        for d in &self.doors {
            anyhow::ensure!(
                d.tally.other.is_empty(),
                "media storm on {}: {} answers neither accepted nor busy",
                d.route.door(),
                d.tally.other.len()
            );
            anyhow::ensure!(
                d.tally.sent >= 1,
                "media storm on {}: no send accepted",
                d.route.door()
            );
        }
        Ok(())
    }
}
