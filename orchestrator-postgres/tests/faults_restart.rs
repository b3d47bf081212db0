//! A server restart: a durable node runs a few hundred averaging workflows on a throwaway
//! PostgreSQL cluster; once half of their steps are committed, the server is stopped the way a
//! crash stops it (`pg_ctl stop -m immediate`: no checkpoint, every connection cut) and started
//! again on the same port a moment later. The node's connections fail transiently, its workers
//! retry with backoff and reconnect once the server is back; at the end every workflow has
//! completed exactly once (one completion event, the one its journal holds, with the right
//! result: nothing committed before the crash was lost or applied twice), its journal is
//! gapless and agrees with its state, nothing is left in the outbox and nothing was
//! dead-lettered.
//!
//! The cluster is made by `initdb` in a temporary directory (see `common/cluster.rs`); the test
//! skips with a printed reason when it cannot be, and fails under CI.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::memory::{NodeId, Retention};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator_postgres::PgStore;

use common::cluster::Cluster;
use common::workload::{self, Client};

const WORKFLOWS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_complete_exactly_once_across_a_server_restart() {
    let Some(cluster) = tokio::task::block_in_place(Cluster::require) else { return };
    let url = cluster.url();
    let schema = common::fresh_schema();
    let config = common::config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let client = Client::default();
    let node = Arc::new(
        workload::node_builder(Arc::clone(&store), workload::transport(&store), client.clone())
            .retry(workload::patient_retry())
            .build()
            .await
            .expect("a node"),
    );

    let started = Instant::now();
    let inits = workload::start_all(&node, &schema, WORKFLOWS).await;
    // Midway: once half of the steps (three per workflow) are committed. Not a third: every
    // workflow's first step commits before any second one (the queue is FIFO), so at a third
    // the orchestrator steps may all be done and the services' acks too, with nothing in flight
    // for the crash to meet. At half, second steps are being committed.
    let steps = 3 * WORKFLOWS;
    let (watcher, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    let connection = tokio::spawn(connection);
    let count = format!("SELECT count(*) FROM \"{schema}\".journal");
    let deadline = Instant::now() + Duration::from_secs(60);
    let committed_at_crash = loop {
        let committed = watcher.query_one(&count, &[]).await.expect("count the journal").get::<_, i64>(0);
        if committed >= (steps / 2) as i64 {
            break committed;
        }
        assert!(Instant::now() < deadline, "half of the steps were not committed within a minute");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let before = node.dispatcher().stats();
    let retried_before = before.retried + before.settle_failures;
    let completed_before = client.completed();
    let crashed = Instant::now();
    tokio::task::block_in_place(|| cluster.crash());
    let completed_at_crash = client.completed();
    let crash_took = crashed.elapsed();
    drop(watcher);
    let _ = connection.await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    tokio::task::block_in_place(|| cluster.restart());
    let down = crashed.elapsed();

    let all_done = client.wait_for(WORKFLOWS, Duration::from_secs(90)).await;
    let dead = node.take_dead_letters();
    let stats = node.dispatcher().stats();
    assert!(
        all_done,
        "only {} of {WORKFLOWS} workflows completed after the restart; dead letters: {:?}\nserver log:\n{}",
        client.completed(),
        dead.iter().map(|d| format!("{}: {}", d.event.id(), d.reason)).collect::<Vec<_>>(),
        cluster.log()
    );
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    println!(
        "{WORKFLOWS} workflows in {:?}; the server was down {down:?} (stopping took {crash_took:?}) \
         with {committed_at_crash} of {steps} steps committed and \
         {completed_before}..{completed_at_crash} workflows completed; \
         {} deliveries retried ({retried_before} before the crash)",
        started.elapsed(),
        stats.retried
    );
    assert!(completed_at_crash < WORKFLOWS, "the server was stopped while workflows were running");
    let (checker_client, connection) =
        tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    let connection = tokio::spawn(connection);
    let committed = checker_client.query_one(&count, &[]).await.expect("count the journal").get::<_, i64>(0);
    assert_eq!(committed, steps as i64, "three steps per workflow, each committed once");
    drop(checker_client);
    let _ = connection.await;
    // Met: deliveries failed and were retried (the in-process transport) or their settlements
    // failed and they were delivered again (a database queue).
    assert!(
        stats.retried + stats.settle_failures > retried_before,
        "the restart was met by the node: {stats:?}"
    );
    assert!(
        dead.is_empty(),
        "nothing dead-lettered: {:?}",
        dead.iter().map(|d| format!("{}: {}", d.event.id(), d.reason)).collect::<Vec<_>>()
    );

    let mut config = common::config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    config.node = NodeId::new(format!("checker-{schema}"));
    let checker: PgStore<WorkflowRecord> = PgStore::open(config).await.expect("open");
    let redelivered = workload::check(&checker, &client.completions(), &inits).await;
    println!("completions delivered more than once (same event id): {redelivered}");
    drop(checker);
    drop(store);
    tokio::task::block_in_place(|| drop(cluster));
}
