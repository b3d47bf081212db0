//! Durable nodes over SQLite on the NATS transport: many averaging workflows (orchestrator →
//! add → divide → client) complete exactly once, with nothing left in flight; two nodes over
//! the same database file and stream share the work.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::{Journal, Memory};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::Node;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_nats::{NatsConfig, NatsTransport};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

use common::{config, delete, nats_url};

const CLIENT: &str = "com.test.client";

/// The completion events received, by event id: (subject, average, deliveries).
type Seen = Arc<Mutex<HashMap<String, (String, f64, usize)>>>;

/// The client: records each completion by event id (a redelivered completion is a delivery,
/// not a second completion) and counts what this node's copy handled.
#[derive(Clone)]
struct Client {
    seen: Seen,
    handled: Arc<AtomicUsize>,
}

impl Client {
    fn new(seen: &Seen) -> Self {
        Self { seen: Arc::clone(seen), handled: Arc::default() }
    }
}

fn lock(seen: &Seen) -> std::sync::MutexGuard<'_, HashMap<String, (String, f64, usize)>> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many workflows completed (distinct subjects).
fn completed(seen: &Seen) -> usize {
    lock(seen).values().map(|(subject, _, _)| subject.clone()).collect::<HashSet<_>>().len()
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let average = event.data()["average"].as_f64().ok_or_else(|| Violation::contract("no average"))?;
        self.handled.fetch_add(1, Ordering::SeqCst);
        lock(&self.seen)
            .entry(event.id().to_owned())
            .or_insert((event.subject().to_owned(), average, 0))
            .2 += 1;
        Ok(Vec::new())
    }
}

#[allow(clippy::expect_used)]
fn open(path: &Path, owner: &str) -> Arc<SqliteMemory<WorkflowRecord>> {
    Arc::new(SqliteConfig::new(path).owner(owner).open::<WorkflowRecord>().expect("open the SQLite store"))
}

#[allow(clippy::expect_used)]
async fn node(
    store: &Arc<SqliteMemory<WorkflowRecord>>,
    transport: NatsTransport,
    client: Client,
) -> Node<SqliteMemory<WorkflowRecord>, NatsTransport> {
    Node::builder(Arc::clone(store))
        .transport(transport)
        .durable()
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .service(client)
        .orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<AverageFlow>())
        .without_timers()
        .workers(16)
        .build()
        .await
        .expect("a node")
}

#[allow(clippy::expect_used)]
fn init(tag: &str, i: usize) -> Event {
    let accepts = AverageV1::versioned();
    let subject = Subject::builder(accepts.accepts().event_type(), accepts.version_str(), CLIENT)
        .execution_id(format!("{tag}-{i:04}"))
        .build()
        .expect("a subject");
    EventFactory::<AverageV1>::new()
        .init(
            AverageInput { values: vec![i as f64, (i + 2) as f64] },
            Event::builder().source(CLIENT).id(format!("init-{tag}-{i:04}")).orchestration_subject(&subject),
        )
        .expect("an init event")
}

/// Waits until `n` workflows completed, at most `within`.
async fn wait_for(seen: &Seen, n: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while completed(seen) < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} workflows completed within {within:?}",
            completed(seen)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each workflow of `inits` completed exactly once (one completion event id) with its result,
/// its state is done after three steps, and nothing is left in the outbox or the stream.
#[allow(clippy::expect_used)]
async fn check(
    store: &SqliteMemory<WorkflowRecord>,
    transport: &NatsTransport,
    seen: &Seen,
    inits: &[Event],
) {
    let seen = lock(seen).clone();
    let mut by_subject: HashMap<&str, Vec<f64>> = HashMap::new();
    for (subject, average, _) in seen.values() {
        by_subject.entry(subject.as_str()).or_default().push(*average);
    }
    assert_eq!(by_subject.len(), inits.len(), "every workflow completed, and no other");
    for (i, init) in inits.iter().enumerate() {
        let averages = &by_subject[init.subject()];
        assert_eq!(averages, &vec![(i + 1) as f64], "workflow {i}: one completion with its result");
        let stored = store.read(init.subject()).await.expect("read").expect("its state");
        assert!(stored.record.done, "workflow {i} is done");
        assert_eq!(stored.version, 3, "workflow {i}: init, sum, quotient");
        assert_eq!(store.history(init.subject(), 0, 10).await.expect("journal").len(), 3);
    }
    let redelivered = seen.values().filter(|(_, _, deliveries)| *deliveries > 1).count();
    println!("{} workflows, {redelivered} completions delivered more than once", inits.len());
    assert!(store.pending(0, 10).await.expect("outbox").is_empty(), "nothing left in the outbox");
    assert_eq!(transport.waiting().await.expect("waiting"), 0, "nothing left in the stream");
    assert!(transport.dead_letters(0, 10).await.expect("dead letters").is_empty(), "no dead letters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_node_on_nats_completes_every_workflow_exactly_once() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = open(&dir.path().join("node.db"), "node-a");
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let seen = Seen::default();
    let node = Arc::new(node(&store, transport.clone(), Client::new(&seen)).await);
    let started = Instant::now();
    let inits: Vec<Event> = (0..n).map(|i| init("one", i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .map(|init| {
            let node = Arc::clone(&node);
            tokio::spawn(async move { node.start(init).await.expect("started") })
        })
        .collect();
    for start in starts {
        start.await.expect("a start");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    println!("{n} workflows on one node over NATS: {:?}", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_over_one_stream_share_the_work() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("shared.db");
    let deployment: NatsConfig = config(&url);
    let (store_a, store_b) = (open(&path, "node-a"), open(&path, "node-b"));
    let transport_a = NatsTransport::connect(deployment.clone()).await.expect("connect");
    let transport_b = NatsTransport::connect(deployment).await.expect("connect");
    let seen = Seen::default();
    let (client_a, client_b) = (Client::new(&seen), Client::new(&seen));
    let node_a = Arc::new(node(&store_a, transport_a.clone(), client_a.clone()).await);
    let node_b = Arc::new(node(&store_b, transport_b.clone(), client_b.clone()).await);
    let inits: Vec<Event> = (0..n).map(|i| init("two", i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, init)| {
            let node = Arc::clone(if i % 2 == 0 { &node_a } else { &node_b });
            tokio::spawn(async move { node.start(init).await.expect("started") })
        })
        .collect();
    for start in starts {
        start.await.expect("a start");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    let (delivered_a, delivered_b) =
        (node_a.dispatcher().stats().delivered, node_b.dispatcher().stats().delivered);
    println!(
        "deliveries: node a {delivered_a}, node b {delivered_b}; completions handled: a {}, b {}",
        client_a.handled.load(Ordering::SeqCst),
        client_b.handled.load(Ordering::SeqCst)
    );
    assert!(delivered_a > 0 && delivered_b > 0, "both nodes handled events");
    for node in [&node_a, &node_b] {
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
        assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by a node");
    }
    check(&store_a, &transport_a, &seen, &inits).await;
    delete(&transport_a).await;
}
