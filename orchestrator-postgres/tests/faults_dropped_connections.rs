//! Dropped connections: a durable node over a `PgStore` runs a few hundred averaging workflows
//! while another connection keeps killing the store's connections mid-flight
//! (`pg_terminate_backend` every few tens of milliseconds on a backend with the store's
//! `application_name`, one running a statement when there is one, and now and then on all),
//! whatever they are doing: an `acquire`, a `commit` in its transaction, an outbox step. The
//! failures are transient, so the runtime retries them with jittered backoff; at the end every
//! workflow has completed exactly once (one completion event, with the right result), its journal
//! is gapless and agrees with its state, no event was consumed twice, nothing is left in the
//! outbox, nothing was dead-lettered, and connections were indeed killed and deliveries indeed
//! retried.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use orchestrator::memory::{NodeId, Retention};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator_postgres::PgStore;

use common::workload::{self, Client};

const WORKFLOWS: usize = 300;

/// `url` with `application_name` set, so that the killer finds this store's connections and
/// only them.
fn with_application_name(url: &str, name: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={name}")
}

/// Until `stop`, every 20–100 ms, kills one backend named `victims`, picked at random among
/// those running a statement if any (every tenth round, all of them); returns how many it killed and in how many rounds.
async fn killer(url: String, victims: String, stop: Arc<AtomicBool>) -> (i64, usize) {
    let (client, connection) =
        tokio_postgres::connect(&with_application_name(&url, "faults-killer"), tokio_postgres::NoTls)
            .await
            .expect("the killer's connection");
    let connection = tokio::spawn(connection);
    let mut killed = 0;
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(fastrand::u64(20..100))).await;
        let limit: i64 = if rounds % 10 == 9 { 1_000 } else { 1 };
        let row = client
            .query_one(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM ( \
                   SELECT pid FROM pg_stat_activity \
                   WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1 \
                   ORDER BY state = 'active' DESC, random() LIMIT $2) AS victims",
                &[&victims, &limit],
            )
            .await
            .expect("pg_terminate_backend");
        killed += row.get::<_, i64>(0);
        rounds += 1;
    }
    drop(client);
    let _ = connection.await;
    (killed, rounds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_complete_exactly_once_while_connections_are_killed() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let victims = format!("faults-{schema}");
    let config = common::config(
        &with_application_name(&url, &victims),
        &schema,
        // Short leases: a lease whose `acquire` answer was killed blocks its workflow until then.
        Duration::from_secs(2),
        Retention::Keep,
    );
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let client = Client::default();
    let node = Arc::new(
        workload::node_builder(Arc::clone(&store), workload::transport(&store), client.clone())
            .retry(workload::patient_retry())
            .build()
            .await
            .expect("a node"),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let killing = tokio::spawn(killer(url.clone(), victims, Arc::clone(&stop)));
    let started = Instant::now();
    let inits = workload::start_all(&node, &schema, WORKFLOWS).await;
    let all_done = client.wait_for(WORKFLOWS, Duration::from_secs(120)).await;
    stop.store(true, Ordering::Relaxed);
    let (killed, rounds) = tokio::time::timeout(Duration::from_secs(10), killing)
        .await
        .expect("the killer stops")
        .expect("the killer");
    let dead = node.take_dead_letters();
    let stats = node.dispatcher().stats();
    assert!(
        all_done,
        "only {} of {WORKFLOWS} workflows completed; dead letters: {:?}",
        client.completed(),
        dead.iter().map(|d| format!("{}: {}", d.event.id(), d.reason)).collect::<Vec<_>>()
    );
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    println!(
        "{WORKFLOWS} workflows in {:?}: {killed} connections killed in {rounds} rounds, {} deliveries retried",
        started.elapsed(),
        stats.retried
    );
    assert!(killed > 0, "connections were killed");
    assert!(stats.retried > 0, "the killed connections were met and retried");
    assert!(
        dead.is_empty(),
        "nothing dead-lettered: {:?}",
        dead.iter().map(|d| format!("{}: {}", d.event.id(), d.reason)).collect::<Vec<_>>()
    );

    // Checked on a store of its own (the node's pool may still hold connections killed last).
    let mut config = common::config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    config.node = NodeId::new(format!("checker-{schema}"));
    let checker: PgStore<WorkflowRecord> = PgStore::open(config).await.expect("open");
    let redelivered = workload::check(&checker, &client.completions(), &inits).await;
    println!("completions delivered more than once (same event id): {redelivered}");
    common::drop_schema(&url, &schema).await;
}
