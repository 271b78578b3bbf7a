//! `wazap-bench`: fills a fresh archive through the worker's batch ingest path, then measures
//! tools end to end through `/mcp` (gateway → NATS → worker → Postgres) with an MCP client.
//! Prints a table and writes the figures as JSON. DESIGN §11 holds the budgets.

/// The allocator the worker and gateway binaries use, so in-process figures match them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod accounts;
mod args;
mod dataset;
mod faults;
mod ingest;
mod latency;
mod media;
mod phone;
mod phone_cases;
mod phone_lookups;
mod phone_people;
mod phone_text;
mod plans;
mod raw_mcp;
mod search;
mod send;
mod wait;

use std::time::Duration;

use wazap_shared::grant::ConnectionKind;
use wazap_shared::wire::grants::ReadScope;
use wazap_tests::{Stack, TestDb};
use wazap_worker::config::ConnectorKind;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = match args::Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("wazap-bench: {msg}\n{}", args::USAGE);
            std::process::exit(64);
        }
    };
    // JSON logs on stderr with `TEST_LOG=1` (and `RUST_LOG`), as in the tests.
    wazap_tests::init_logs();
    if std::env::var_os(faults::WORKER_ROLE).is_some() {
        // The holder the `faults` phase kills: a worker of the stack named in the environment.
        let config = wazap_worker::Config::from_source(&wazap_shared::config::Env)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        return wazap_worker::run(config, tokio_util::sync::CancellationToken::new()).await;
    }
    // The phases that make archives of their own, first: their figures under their names.
    let mut named = serde_json::Map::new();
    if args.runs("accounts") {
        let figures = accounts::run(&args).await?;
        figures.print();
        named.insert("accounts".into(), figures.to_json());
    }
    if args.runs("faults") {
        let figures = faults::run().await?;
        figures.print();
        named.insert("faults".into(), figures.to_json());
    }
    if args.runs("media") {
        let figures = media::run().await?;
        figures.print();
        named.insert("media".into(), figures.to_json());
        if let Err(e) = figures.verdict() {
            std::fs::write(&args.out, serde_json::to_vec_pretty(&named)?)?;
            return Err(e);
        }
    }
    if args.only_named() {
        std::fs::write(&args.out, serde_json::to_vec_pretty(&named)?)?;
        eprintln!("wazap-bench: wrote {}", args.out);
        return Ok(());
    }
    let mut db = TestDb::create().await?;
    if args.keep {
        db.keep();
    }
    eprintln!(
        "wazap-bench: database {}",
        db.url.rsplit('/').next().unwrap_or_default()
    );
    let ingest = ingest::fill(&db.url, &args).await?;

    let mut stack = Stack::on(db, ConnectorKind::Sim).await?;
    let gw = stack.gateway(&[("WAZAP_MCP_MAX_CONCURRENCY", "2")]).await?;
    let (connection, token) = stack
        .token_with(
            ReadScope::all(),
            ConnectionKind::Local,
            Duration::from_secs(86_400),
        )
        .await?;
    let busy_chat = ingest.busy_chat_id.clone();
    let live_commit_ms = ingest.live_commit_ms;
    let phone = ingest.phone.clone();
    let mut report = latency::Report::new(&args, ingest);
    // The phone shape's cases of the other tools, checked for what they find (issue 29).
    let mut cases = phone_cases::PhoneCases::new(phone.clone(), args.requests);
    if args.runs("reads") {
        latency::run_reads(&gw.mcp_url(), &token, &args, &mut report).await?;
        latency::run_rpc(&stack, &connection, &token, &args, &mut report).await?;
        latency::run_gateway_only(&gw.mcp_url(), &token, &args, &mut report).await?;
        let phase = phone_cases::Phase::Reads;
        cases
            .run(phase, &stack, &gw.mcp_url(), &token, &mut report)
            .await?;
    }
    let search = if args.runs("search") {
        Some(
            search::run(
                &stack,
                &gw.mcp_url(),
                &token,
                args.requests,
                &mut report,
                phone.as_ref(),
                &busy_chat,
            )
            .await?,
        )
    } else {
        None
    };
    if args.runs("search") {
        let phase = phone_cases::Phase::Search;
        cases
            .run(phase, &stack, &gw.mcp_url(), &token, &mut report)
            .await?;
    }
    // Printed now, so a later phase that fails or hangs does not take these figures with it.
    report.print();
    let mut figures = report.to_json();
    if let Some(search) = search {
        search.print();
        figures["search"] = search.to_json();
    }
    if phone.is_some() {
        cases.print();
        figures["phone_cases"] = cases.to_json();
    }
    if args.runs("wait") {
        let wait = wait::run(&stack, &gw.mcp_url(), &token, live_commit_ms).await?;
        wait.print();
        figures["wait"] = wait.to_json();
    }
    if args.runs("send") {
        let sends = send::run(
            &stack,
            &gw.mcp_url(),
            &token,
            &connection,
            &busy_chat,
            args.requests,
        )
        .await?;
        sends.print();
        figures["send"] = sends.to_json();
    }
    // Last: it restarts the worker under each plan_cache_mode (issue 29 item 3).
    let plans = if args.runs("plans") {
        let mut calls = latency::read_calls(&report);
        calls.extend(search::calls(phone.as_ref(), &busy_chat));
        calls.extend(phone_cases::calls(phone.as_ref()));
        let plans = plans::run(&mut stack, &gw.mcp_url(), &token, calls).await?;
        plans.print();
        figures["plans"] = plans.to_json();
        Some(plans)
    } else {
        None
    };
    for (phase, value) in named {
        figures[phase] = value;
    }
    std::fs::write(&args.out, serde_json::to_vec_pretty(&figures)?)?;
    eprintln!("wazap-bench: wrote {}", args.out);
    gw.stop().await?;
    drop(stack);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let plans = plans.map_or(Ok(()), |p| p.verdict());
    cases.verdict().and(plans)
}
