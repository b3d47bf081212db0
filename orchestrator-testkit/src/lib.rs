//! What the transport crates' tests share (`orchestrator-nats`, `orchestrator-redis`): averaging
//! workflows (orchestrator → add → divide → client) on durable nodes over SQLite and any
//! transport, a client that records each completion by event id, and the check that every
//! workflow completed exactly once with nothing left in flight.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout, missing_docs)]

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
use orchestrator::transport::Transport;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

pub const CLIENT: &str = "com.test.client";

/// The completion events received, by event id: (subject, average, deliveries).
pub type Seen = Arc<Mutex<HashMap<String, (String, f64, usize)>>>;

/// The client: records each completion by event id (a redelivered completion is a delivery,
/// not a second completion) and counts what this node's copy handled.
#[derive(Clone)]
pub struct Client {
    seen: Seen,
    /// How many completions this copy handled.
    pub handled: Arc<AtomicUsize>,
}

impl Client {
    pub fn new(seen: &Seen) -> Self {
        Self { seen: Arc::clone(seen), handled: Arc::default() }
    }
}

pub fn lock(seen: &Seen) -> std::sync::MutexGuard<'_, HashMap<String, (String, f64, usize)>> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many workflows completed (distinct subjects).
pub fn completed(seen: &Seen) -> usize {
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
pub fn open(path: &Path, owner: &str) -> Arc<SqliteMemory<WorkflowRecord>> {
    Arc::new(SqliteConfig::new(path).owner(owner).open::<WorkflowRecord>().expect("open the SQLite store"))
}

#[allow(clippy::expect_used)]
pub async fn node<T: Transport>(
    store: &Arc<SqliteMemory<WorkflowRecord>>,
    transport: T,
    client: Option<Client>,
) -> Node<SqliteMemory<WorkflowRecord>, T> {
    let builder = Node::builder(Arc::clone(store))
        .transport(transport)
        .durable()
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<AverageFlow>())
        .without_timers()
        .workers(16);
    let builder = match client {
        Some(client) => builder.service(client),
        None => builder,
    };
    builder.build().await.expect("a node")
}

#[allow(clippy::expect_used)]
pub fn init(tag: &str, i: usize) -> Event {
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
pub async fn wait_for(seen: &Seen, n: usize, within: Duration) {
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

/// What the transport still holds after a run: events not settled, and dead letters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Left {
    /// Events published and not settled.
    pub waiting: u64,
    /// Dead letters.
    pub dead_letters: usize,
}

/// Each workflow of `inits` completed exactly once (one completion event id) with its result,
/// its state is done after three steps (with `faults`, at least three: a service that ran again
/// sends a second answer, which the workflow journals without stepping), and nothing is left in
/// the outbox or the transport (`in_transport`).
pub async fn check_with(
    store: &SqliteMemory<WorkflowRecord>,
    seen: &Seen,
    inits: &[Event],
    faults: bool,
    in_transport: Left,
) {
    let seen = lock(seen).clone();
    let mut by_subject: HashMap<&str, Vec<f64>> = HashMap::new();
    for (subject, average, _) in seen.values() {
        by_subject.entry(subject.as_str()).or_default().push(*average);
    }
    assert_eq!(by_subject.len(), inits.len(), "every workflow completed, and no other");
    let mut extra = 0;
    for (i, init) in inits.iter().enumerate() {
        let averages = &by_subject[init.subject()];
        assert_eq!(averages, &vec![(i + 1) as f64], "workflow {i}: one completion with its result");
        let stored = store.read(init.subject()).await.expect("read").expect("its state");
        assert!(stored.record.done, "workflow {i} is done");
        let journal = store.history(init.subject(), 0, 100).await.expect("journal");
        let versions: Vec<u64> = journal.iter().map(|entry| entry.version).collect();
        assert_eq!(versions, (1..=stored.version).collect::<Vec<_>>(), "workflow {i}: a gapless journal");
        if faults {
            assert!(stored.version >= 3, "workflow {i}: init, sum, quotient at least");
            extra += stored.version - 3;
        } else {
            assert_eq!(stored.version, 3, "workflow {i}: init, sum, quotient");
        }
        let consumed: Vec<(&str, &str)> =
            journal.iter().filter_map(|e| e.consumed.as_ref()).map(|e| (e.source(), e.id())).collect();
        let distinct: HashSet<_> = consumed.iter().collect();
        assert_eq!(distinct.len(), consumed.len(), "workflow {i}: no event consumed twice");
        let completions = journal.iter().flat_map(|e| &e.produced).filter(|e| e.to() == Some(CLIENT)).count();
        assert_eq!(completions, 1, "workflow {i}: its completion produced once");
    }
    let redelivered = seen.values().filter(|(_, _, deliveries)| *deliveries > 1).count();
    println!(
        "{} workflows, {redelivered} completions delivered more than once, {extra} stale answers journaled",
        inits.len()
    );
    let left = store.pending(0, 10).await.expect("outbox");
    for pending in &left {
        println!(
            "left in the outbox: {} {} to {:?}",
            pending.event.r#type(),
            pending.event.id(),
            pending.event.to()
        );
    }
    assert!(left.is_empty(), "nothing left in the outbox");
    assert_eq!(in_transport, Left::default(), "nothing left in the transport, no dead letters");
}
