//! `pg_ctl stop -m immediate` in the middle of a send load, then start: the worker rides it out
//! without a restart (its lease lapses and is renewed under the same epoch), every answer given
//! before the crash holds in the journal, nothing answered `failed` was transmitted, no
//! WhatsApp id goes out twice, and a retry of every key that got an error answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wazap_shared::wire::grants::SendMode;
use wazap_tests::Stack;
use wazap_tests::fault::PgCluster;
use wazap_worker::config::ConnectorKind;

use super::{Load, check_load, until_accepted_again};
use crate::send::{connection_with_token, contact};

#[tokio::test]
async fn a_postgres_crash_under_send_load_loses_no_answer_and_sends_nothing_twice()
-> anyhow::Result<()> {
    let pg = PgCluster::start().await?;
    let stack = Arc::new(Stack::start_on_server(&pg.url(), ConnectorKind::Sim).await?);
    let chat = contact(&stack, "972503330001", "Dana").await?;
    let (grant, _) = connection_with_token(&stack, SendMode::All, vec![]).await?;

    // Ten senders; each call's deadline travels to the worker.
    let load = Load::start(&stack, &grant, &chat, 10, Duration::from_secs(4));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let crashed = Instant::now();
    pg.stop_immediate().await?;
    // Down long enough for the lease (TTL 5 s) to lapse.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        stack.worker_running(),
        "the worker exited while Postgres was down"
    );
    pg.start_again().await?;

    // Recovered without a restart: a send is accepted again.
    let took = until_accepted_again(&stack, &grant, &chat).await?;
    println!("sends accepted again {took:?} after Postgres started");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let answers = load.finish().await?;
    assert!(stack.worker_running(), "the worker restarted or exited");

    let before = answers.iter().filter(|a| a.at < crashed).count();
    let errors = answers.iter().filter(|a| a.result.is_err()).count();
    println!(
        "{} answers ({before} before the crash), {errors} errors",
        answers.len()
    );
    assert!(before >= 10, "the load had not started before the crash");
    assert!(errors > 0, "the crash did not touch the load");
    check_load(&stack, &grant, &chat, &answers, crashed).await
}
