//! Twenty 8 MiB media sends at once (#26 item 4), against the real `wazap-gateway` binary as a
//! child process (its RSS is its own) and a sim worker, once on `POST /api/send/media` and once
//! as `/mcp` calls of `send_media`: every send is answered `accepted` or `busy`, at least one goes out, the gateway's peak RSS grows by no more than one send's
//! worth ([`ONE_SEND_KIB`]; DESIGN §11's 40 MiB in all is printed: [`DESIGN_BOUND_KIB`]), and
//! the media bucket holds nothing once the sends are over (the worker deletes what it sent; a
//! busy send stored nothing).
//!
//! The storm itself (requests, raw sockets, the answers' tally) is `wazap_tests::media_storm`,
//! which `wazap-bench --only media` runs too, for the figures.

use std::time::Duration;

use wazap_shared::wire::grants::SendMode;
use wazap_tests::fixtures::person;
use wazap_tests::media_storm::{self, CREDENTIALS, Route, SENDS};
use wazap_tests::{Stack, status_kib};
use wazap_worker::config::ConnectorKind;

use crate::edge::client::spawn_gateway;

/// DESIGN §11: the gateway within 40 MiB RSS under load. Not met by the debug binary the tests
/// run, by its size: it idles at about 30 MiB, 25 MiB of it the binary's own file-backed pages.
/// Printed on every run; what is asserted is [`ONE_SEND_KIB`].
const DESIGN_BOUND_KIB: u64 = 40 * 1024;
/// What is asserted: the storm costs no more than one send in flight above idle (the body
/// budget admits one 12 MiB body at a time, the rest are `busy` before their bodies are read).
/// One send holds its 11.2 MiB JSON body, whose base64 is decoded in place over it
/// (`http::api_send`), and little else: measured 13.1–13.3 MiB above idle (debug binary, peak
/// about 43.5 MiB); as `/mcp` calls (`mcp::direct`, the same decoding) 13.7 MiB. Before the
/// in-place decoding, which kept the body, a copy of the base64 and the decoded bytes, it was
/// 31.9 MiB (peak 64.5 MiB); a copy of either would pass 18 MiB (a copied base64 on `/mcp`:
/// 24.4 MiB).
const ONE_SEND_KIB: u64 = 18 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_8_mib_sends_at_once_are_sent_or_busy_and_cost_one_send_of_memory()
-> anyhow::Result<()> {
    storm(Route::Api).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_storm_of_mcp_send_media_calls_costs_one_send_too() -> anyhow::Result<()> {
    storm(Route::Mcp).await
}

async fn storm(route: Route) -> anyhow::Result<()> {
    let stack = Stack::start(ConnectorKind::Sim).await?;
    let chat = stack.contact(&person("972503334444"), None, "Dana").await?;
    let mut tokens = Vec::new();
    for _ in 0..CREDENTIALS {
        tokens.push(stack.sending_connection(SendMode::All, vec![]).await?.1);
    }

    let gateway = spawn_gateway(&stack)?;
    let (addr, pid) = (gateway.addr.clone(), gateway.pid);
    media_storm::wait_answering(&addr, &tokens[0]).await?;
    let idle_kib = status_kib(pid, "VmRSS:")?;

    // Each send its own bytes (its own object), built before the storm.
    let requests = media_storm::requests(route, &chat, &tokens, "storm");
    let tally = media_storm::storm(&addr, route, requests).await?;
    if let Some((status, body)) = tally.other.first() {
        anyhow::bail!("a send was answered {status:?} {body}");
    }
    let (sent, busy) = (tally.sent, tally.busy);
    let peak_kib = status_kib(pid, "VmHWM:")?;
    eprintln!(
        "media storm ({route:?}): {sent} sent, {busy} busy; gateway RSS idle {idle_kib} KiB, peak {peak_kib} \
         KiB (DESIGN §11: {DESIGN_BOUND_KIB} KiB{})",
        if peak_kib <= DESIGN_BOUND_KIB {
            ", met"
        } else {
            ", NOT met"
        }
    );
    assert_eq!(sent + busy, SENDS);
    assert!(sent >= 1, "no send went out");
    assert!(
        peak_kib <= idle_kib + ONE_SEND_KIB,
        "the gateway's peak RSS was {peak_kib} KiB, idle {idle_kib} KiB: more than one send's \
         worth ({ONE_SEND_KIB} KiB)"
    );

    // Nothing stays in the bucket: the sent objects go with the worker's delete (1 s after
    // their send), and the busy sends stored nothing.
    media_storm::bucket_empty(&stack, Duration::from_secs(15)).await?;
    drop(gateway);
    Ok(())
}
