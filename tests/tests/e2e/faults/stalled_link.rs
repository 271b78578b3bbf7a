//! The worker's link to Postgres stalls (a blackhole through [`Proxy`]: sockets open, nothing
//! moves) in the middle of a send load, long enough for its lease to lapse, then passes again
//! and the held bytes arrive late. A reservation that reaches Postgres after its caller gave up
//! must not be transmitted; nothing goes out twice; the worker serves again without a restart.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wazap_shared::wire::grants::SendMode;
use wazap_tests::Stack;
use wazap_tests::fault::{PgCluster, Proxy};
use wazap_worker::config::ConnectorKind;

use super::{Load, check_load, until_accepted_again};
use crate::send::{connection_with_token, contact};

/// Each load call's deadline.
const DEADLINE: chrono::Duration = chrono::Duration::seconds(3);

// Multi-threaded: the proxy's tasks must keep running while a drop blocks a thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_postgres_link_under_send_load_sends_nothing_twice() -> anyhow::Result<()> {
    let pg = PgCluster::start().await?;
    let proxy = Proxy::start(([127, 0, 0, 1], pg.port()).into()).await?;
    let through = format!("postgres://postgres@{}/postgres", proxy.addr());
    let stack = Arc::new(Stack::start_on_server(&through, ConnectorKind::Sim).await?);
    let chat = contact(&stack, "972503330001", "Dana").await?;
    let (grant, _) = connection_with_token(&stack, SendMode::All, vec![]).await?;

    let load = Load::start(&stack, &grant, &chat, 6, DEADLINE.to_std()?);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stalled = Instant::now();
    proxy.stall();
    // Past the lease's TTL (5 s) and every caller's deadline.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(stack.worker_running(), "the worker exited during the stall");
    proxy.pass();

    let took = until_accepted_again(&stack, &grant, &chat).await?;
    println!("sends accepted again {took:?} after the link passed");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let answers = load.finish().await?;
    assert!(stack.worker_running(), "the worker restarted or exited");

    let errors = answers.iter().filter(|a| a.result.is_err()).count();
    println!("{} answers, {errors} errors", answers.len());
    assert!(errors > 0, "the stall did not touch the load");
    // A reservation that reached Postgres after its caller's deadline was handed to nobody.
    // The rows are read before `check_load` retries the keys that got an error: a retry may
    // reserve a key whose first call never reached Postgres, under its own, later deadline.
    let created: HashMap<String, (chrono::DateTime<chrono::Utc>, String)> = stack
        .pool
        .get()
        .await?
        .query(
            "select request_id, created_at, wa_id from send_journal",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    check_load(&stack, &grant, &chat, &answers, stalled).await?;
    let transmitted: HashSet<String> = crate::send::transmissions(&stack)
        .await?
        .into_iter()
        .map(|t| t.wa_id)
        .collect();
    let mut late = 0;
    for a in answers.iter().filter(|a| a.result.is_err()) {
        let Some((at, wa_id)) = created.get(&a.key) else {
            continue;
        };
        // The calls' clock is the database's (one machine); a margin for the rounding.
        if *at > a.sent + DEADLINE + chrono::Duration::milliseconds(50) {
            late += 1;
            assert!(
                !transmitted.contains(wa_id),
                "{} was reserved after its caller's deadline and transmitted",
                a.key
            );
        }
    }
    println!("{late} reservations reached Postgres after their caller's deadline");
    // The stack (its database dropped through the proxy) goes before the proxy and cluster.
    drop(stack);
    Ok(())
}
