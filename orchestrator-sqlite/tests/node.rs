//! A durable node on SQLite: many workflows started at once, more than the in-process queue
//! holds, all complete exactly once, every event in flight kept in the outbox (nothing is left
//! there at the end), and each orchestrator step costs one writer operation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::memory::{DeadLetterStore, Journal, Memory};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageClient, AverageInput, AverageV1, services};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

const CLIENT: &str = "com.test.client";

async fn at_once_on_sqlite(n: usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let memory =
        Arc::new(SqliteConfig::new(dir.path().join("node.db")).open::<WorkflowRecord>().expect("open"));
    let client = AverageClient::new(CLIENT);
    let node = Arc::new(
        Node::builder(Arc::clone(&memory))
            .durable()
            .service(services::add().expect("add"))
            .service(services::divide().expect("divide"))
            .service(client.clone())
            .orchestrator(Orchestrator::builder(Arc::clone(&memory)).machine::<AverageFlow>())
            // The averaging flow has no timers; without the timer task every writer operation
            // below is a step's.
            .without_timers()
            .build()
            .await
            .expect("a node"),
    );
    let started = Instant::now();
    let operations_before = memory.stats().operations;
    let tasks: Vec<_> = (0..n)
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
    let mut subjects = Vec::with_capacity(n);
    for task in tasks {
        subjects.push(task.await.expect("task"));
    }
    let deadline = Instant::now() + Duration::from_secs(1_200);
    while client.completed() < n {
        assert!(Instant::now() < deadline, "only {} of {n} completed", client.completed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.shutdown().await;
    let elapsed = started.elapsed();
    let operations = memory.stats().operations - operations_before;
    println!("{n} workflows at once on SQLite: {elapsed:?}, {operations} writer operations");
    let seen = client.counts();
    assert_eq!(seen.len(), n, "every workflow completed");
    assert!(seen.values().all(|(times, _)| *times == 1), "each exactly once");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered");
    assert!(memory.pending(0, 10).await.expect("outbox").is_empty(), "nothing left in flight");
    for (i, subject) in subjects.iter().enumerate().take(100) {
        assert_eq!(seen[subject].1, (i + 1) as f64, "workflow {i}'s result");
        let stored = memory.read(subject).await.expect("read").expect("kept");
        assert!(stored.record.done);
        assert_eq!(memory.history(subject, 0, 10).await.expect("journal").len(), 3, "init, sum, quotient");
    }
    // Per workflow: 3 orchestrator steps of 1 operation (the commit with the outbox step; the
    // in-process transport's lanes are exclusive, so no lease is taken and the record comes from
    // the record cache or a reader), 3 outbox steps of the services and the client, 1 outbox
    // write of the init.
    assert_eq!(operations, n as u64 * (3 + 3 + 1), "writer operations per workflow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_started_at_once_on_sqlite_complete_exactly_once() {
    at_once_on_sqlite(2_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full size of the runtime-seam issue: run with --release -- --ignored"]
async fn twenty_thousand_workflows_at_once_on_sqlite_complete_exactly_once() {
    at_once_on_sqlite(20_000).await;
}

/// A durable node running the averaging workflow and its services on `memory`.
async fn average_node(
    memory: &Arc<SqliteMemory<WorkflowRecord>>,
) -> Node<SqliteMemory<WorkflowRecord>, orchestrator::transport::InProcessTransport> {
    Node::builder(Arc::clone(memory))
        .durable()
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(memory)).machine::<AverageFlow>())
        .build()
        .await
        .expect("a node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanently_bad_event_is_dead_lettered_and_leaves_the_outbox() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let memory =
        Arc::new(SqliteConfig::new(dir.path().join("bad.db")).open::<WorkflowRecord>().expect("open"));
    let node = average_node(&memory).await;
    let subject = Subject::builder("arvo.orc.calc.average", "1.0.0", CLIENT).build().expect("subject");
    // `values` must be a list of numbers: a contract violation, which no retry can cure.
    let bad = Event::builder()
        .source(CLIENT)
        .r#type("arvo.orc.calc.average")
        .dataschema("#/orc/calc/average/1.0.0")
        .orchestration_subject(&subject)
        .data_json(serde_json::json!({ "values": "none", "parentSubject$$": null }))
        .build()
        .expect("a well-formed event");
    node.start(bad).await.expect("started");
    node.transport().wait_idle().await;
    let dead = node.take_dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].reason.to_string().contains("Contract"), "{}", dead[0].reason);
    assert!(memory.pending(0, 10).await.expect("outbox").is_empty(), "it does not come back after a restart");
    assert!(memory.read(subject.as_str()).await.expect("read").is_none(), "no state was written");

    // An event no handler takes: dead too, and it leaves the outbox as well.
    let nobody = Subject::builder("arvo.orc.nobody", "1.0.0", CLIENT).build().expect("subject");
    let lost = Event::builder()
        .source(CLIENT)
        .r#type("arvo.orc.nobody")
        .orchestration_subject(&nobody)
        .data_json(serde_json::json!({ "parentSubject$$": null }))
        .build()
        .expect("a well-formed event");
    node.start(lost.clone()).await.expect("started");
    node.transport().wait_idle().await;
    assert!(memory.pending(0, 10).await.expect("outbox").is_empty(), "the unrouted event left the outbox");
    node.shutdown().await;
    drop(node);

    // Both are kept in the store, with why, after the process is gone.
    let memory =
        Arc::new(SqliteConfig::new(dir.path().join("bad.db")).open::<WorkflowRecord>().expect("reopen"));
    let buried = memory.buried(None, 0, 10).await.expect("the store's dead letters");
    assert_eq!(buried.len(), 2, "{buried:?}");
    assert_eq!(buried[0].event.subject(), subject.as_str());
    assert!(buried[0].reason.contains("Contract"), "{}", buried[0].reason);
    assert_eq!(buried[1].event, lost);
    assert!(
        buried[1].reason.contains("no handler") && buried[1].reason.contains("arvo.orc.nobody"),
        "{}",
        buried[1].reason
    );
    let of_nobody = memory.buried(Some(nobody.as_str()), 0, 10).await.expect("by workflow");
    assert_eq!(of_nobody.len(), 1);
    let again = average_node(&memory).await;
    assert_eq!(again.recovered(), 0, "nothing dead is delivered again");
    again.shutdown().await;
}
