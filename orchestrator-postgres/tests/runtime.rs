//! The runtime on PostgreSQL: a durable node over a `PgStore` (state, journal, leases, timers
//! and the outbox in one database) runs many workflows at once, each exactly once, each
//! orchestrator step committing its outbox step with its state; nothing is left in flight. Once
//! on the in-process transport, once on the store's own queue (where the outbox step *is* the
//! settlement of the consumed event and the enqueueing of the products).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::memory::{Journal, Memory, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageClient, AverageInput, AverageV1, services};
use orchestrator_postgres::{PgStore, QueueConfig};

const CLIENT: &str = "com.test.client";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_node_on_postgres_runs_workflows_at_once_exactly_once() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let config = common::config(&url, &schema, Duration::from_secs(30), Retention::Keep);
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let client = AverageClient::new(CLIENT);
    let node = Node::builder(Arc::clone(&store))
        .durable()
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .service(client.clone())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .build()
        .await
        .expect("a node");
    run_many(Arc::new(node), &store, &client, 1_200).await;
    common::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_node_on_the_postgres_queue_runs_workflows_at_once_exactly_once() {
    let Some(url) = common::database_url() else { return };
    let schema = common::fresh_schema();
    let config = common::config(&url, &schema, Duration::from_secs(30), Retention::Keep);
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let queue = store.queue(QueueConfig::default());
    let client = AverageClient::new(CLIENT);
    let node = Node::builder(Arc::clone(&store))
        .durable()
        .transport(queue.clone())
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .service(client.clone())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .build()
        .await
        .expect("a node");
    run_many(Arc::new(node), &store, &client, 1_200).await;
    assert!(queue.dead_letters(0, 10).await.expect("dead letters").is_empty(), "no dead letter in the queue");
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "the queue is empty");
    common::drop_schema(&url, &schema).await;
}

/// Starts `n` averaging workflows at once on `node` and checks that each completed exactly once,
/// with its result and a gapless journal, and that nothing is left in flight.
async fn run_many<T: orchestrator::transport::Transport>(
    node: Arc<Node<PgStore<WorkflowRecord>, T>>,
    store: &PgStore<WorkflowRecord>,
    client: &AverageClient,
    n: usize,
) {
    #[allow(non_snake_case)]
    let N = n;
    let started = Instant::now();
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let node = Arc::clone(&node);
            tokio::spawn(async move {
                let values = vec![i as f64, (i + 2) as f64];
                let init = EventFactory::<AverageV1>::new()
                    .init(AverageInput { values }, Event::builder().source(CLIENT))
                    .expect("init");
                node.start(init).await.expect("started")
            })
        })
        .collect();
    let mut subjects = Vec::with_capacity(N);
    for task in tasks {
        subjects.push(task.await.expect("task"));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while client.completed() < N {
        assert!(Instant::now() < deadline, "only {} of {N} completed", client.completed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.shutdown().await;
    println!("{N} workflows at once on PostgreSQL ({}): {:?}", std::any::type_name::<T>(), started.elapsed());
    let seen = client.counts();
    assert_eq!(seen.len(), N, "every workflow completed");
    assert!(seen.values().all(|(times, _)| *times == 1), "each exactly once");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered");
    assert!(store.pending(0, 10).await.expect("outbox").is_empty(), "nothing left in flight");
    for (i, subject) in subjects.iter().enumerate().take(50) {
        assert_eq!(seen[subject].1, (i + 1) as f64, "workflow {i}'s result");
        let stored = store.read(subject).await.expect("read").expect("kept");
        assert!(stored.record.done);
        let journal = store.history(subject, 0, 10).await.expect("journal");
        assert_eq!(journal.iter().map(|e| e.version).collect::<Vec<_>>(), [1, 2, 3], "init, sum, quotient");
    }
}
