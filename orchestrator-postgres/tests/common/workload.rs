//! The workload of the fault tests: averaging workflows (orchestrator → add → divide → client)
//! on a durable node, a client that records each completion by event id, and the check that
//! every workflow completed exactly once with its journal gapless and nothing left in flight.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::Memory;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::Outbox;
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, NodeBuilder, NodeError, RetryPolicy};
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_postgres::{PgQueue, PgStore, QueueConfig};

/// The client topic: workflows are started from it and send their completion to it.
pub const CLIENT: &str = "com.test.client";

/// The transport the fault tests' nodes run on (see [`transport`]).
pub type Transport = PgQueue;

/// The ONE place the fault tests choose their transport: the store's own queue, so a fault
/// meets the whole deployment on PostgreSQL (claims, settlements in the step's commit, the
/// listening connection). Claims lapse after 5 s, so a delivery whose settlement was lost comes
/// back soon.
pub fn transport(store: &PgStore<WorkflowRecord>) -> Transport {
    store.queue(QueueConfig {
        visibility: Duration::from_secs(5),
        poll: Duration::from_millis(50),
        // The fault tests retry for as long as it takes (`patient_retry`, 200 attempts).
        max_deliveries: None,
        ..QueueConfig::default()
    })
}

/// A durable node over `store` (every event in flight kept in the store's outbox) running the
/// averaging workflows on `transport` (from [`transport`]), with `client` as its client.
pub fn node_builder<M>(store: Arc<M>, transport: Transport, client: Client) -> NodeBuilder<M, Transport>
where
    M: Memory<WorkflowRecord> + Outbox + 'static,
{
    Node::builder(Arc::clone(&store))
        .transport(transport)
        .durable()
        .service(services::add().expect("the add service"))
        .service(services::divide().expect("the divide service"))
        .service(client)
        .orchestrator(Orchestrator::builder(store).machine::<AverageFlow>())
}

/// A retry policy patient enough to outlast the faults the tests inject (a connection killed
/// every few tens of milliseconds, a server down for a few seconds, a lease left to lapse): many
/// attempts, delays capped at 1 s. A lease taken by an `acquire` whose answer was lost (or not
/// released because the connection died) stays held until its TTL: every attempt until then is
/// denied, so each such fault costs several attempts. The tests bound the time they wait
/// anyway.
pub fn patient_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 200,
        initial: Duration::from_millis(20),
        max_delay: Duration::from_secs(1),
        multiplier: 2.0,
    }
}

/// Workflow `i` of test `tag`: a fixed subject and init id, so any process recognises it. It
/// averages `i` and `i + 2`: the result is `i + 1`.
pub fn init_event(tag: &str, i: usize) -> Event {
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

/// Starts `init` on `node`, trying again (up to 100 times, 50 ms apart) while the store or the
/// transport fails transiently: the init enters the outbox once (an id already there is not
/// added twice).
pub async fn start<M>(node: &Node<M, Transport>, init: &Event)
where
    M: Memory<WorkflowRecord> + 'static,
{
    for attempt in 1..=100 {
        match node.start(init.clone()).await {
            Ok(_) => return,
            Err(NodeError::Store(e)) if e.is_transient() && attempt < 100 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(NodeError::Transport(e)) if e.is_transient() && attempt < 100 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("starting {}: {e}", init.id()),
        }
    }
}

/// Starts workflows `0..n` of test `tag` on `node`, all at once (see [`start`]), and returns
/// their inits.
pub async fn start_all<M>(node: &Arc<Node<M, Transport>>, tag: &str, n: usize) -> Vec<Event>
where
    M: Memory<WorkflowRecord> + 'static,
{
    let inits: Vec<Event> = (0..n).map(|i| init_event(tag, i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .map(|init| {
            let node = Arc::clone(node);
            tokio::spawn(async move { start(&node, &init).await })
        })
        .collect();
    for started in starts {
        started.await.expect("a start");
    }
    inits
}

/// One completion event the client received.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The workflow's subject.
    pub subject: String,
    /// Its result.
    pub average: f64,
    /// How many times this event (same id) was delivered: more than once when the outbox step
    /// after the client failed and the delivery was retried (at-least-once delivery).
    pub deliveries: usize,
}

/// The client: records each completion by event id. A redelivered completion (same id) counts
/// as a delivery, not as a second completion; a workflow that completed twice would show two
/// event ids.
#[derive(Clone, Default)]
pub struct Client {
    seen: Arc<Mutex<HashMap<String, Completion>>>,
    /// Print `COMPLETED <subject> <event id> <average>` for each completion (a child process reporting to
    /// its parent).
    print: bool,
}

impl Client {
    /// A client that prints each completion on stdout.
    pub fn printing() -> Self {
        Self { print: true, ..Self::default() }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<String, Completion>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many workflows completed (distinct subjects).
    pub fn completed(&self) -> usize {
        self.seen().values().map(|c| c.subject.as_str()).collect::<HashSet<_>>().len()
    }

    /// Every completion event received, by event id.
    pub fn completions(&self) -> HashMap<String, Completion> {
        self.seen().clone()
    }

    /// Waits until `n` workflows have completed, at most `within`; false if they did not.
    pub async fn wait_for(&self, n: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.completed() < n {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let average = event.data()["average"].as_f64().ok_or_else(|| Violation::contract("no average"))?;
        let subject = event.subject().to_owned();
        if self.print {
            println!("COMPLETED {subject} {} {average}", event.id());
        }
        self.seen()
            .entry(event.id().to_owned())
            .or_insert(Completion { subject, average, deliveries: 0 })
            .deliveries += 1;
        Ok(Vec::new())
    }
}

/// Checks the outcome of workflows `inits` (`inits[i]` is workflow `i` of [`init_event`]):
/// each completed exactly once (one completion event id) with the right result, its state is
/// done, its journal is gapless (versions `1..=version`: init, sum, quotient) and agrees with
/// the state, no event was consumed twice, one completion was produced, and nothing is left in
/// the outbox. Returns how many completions were delivered more than once (same id).
pub async fn check(
    store: &PgStore<WorkflowRecord>,
    completions: &HashMap<String, Completion>,
    inits: &[Event],
) -> usize {
    let mut by_subject: HashMap<&str, Vec<&Completion>> = HashMap::new();
    for completion in completions.values() {
        by_subject.entry(completion.subject.as_str()).or_default().push(completion);
    }
    let known: HashSet<&str> = inits.iter().map(Event::subject).collect();
    let strangers: Vec<&&str> = by_subject.keys().filter(|s| !known.contains(**s)).collect();
    assert!(strangers.is_empty(), "completions of workflows never started: {strangers:?}");
    let pending = store.pending(0, 10).await.expect("reading the outbox");
    assert!(
        pending.is_empty(),
        "nothing left in flight, but the outbox holds {:?}",
        pending.iter().map(|p| (p.event.r#type().to_owned(), p.event.id().to_owned())).collect::<Vec<_>>()
    );
    for (i, init) in inits.iter().enumerate() {
        let subject = init.subject();
        let got = by_subject.get(subject).map_or(&[][..], Vec::as_slice);
        assert_eq!(got.len(), 1, "workflow {i} completed {} times (distinct completion events)", got.len());
        assert_eq!(got[0].average, (i + 1) as f64, "workflow {i}'s result");

        let (stored, journal) = super::journal::check_done(store, i, subject, init).await;
        assert_eq!(stored.version, 3, "workflow {i}: three steps (init, sum, quotient)");
        let completions_produced =
            journal.iter().flat_map(|e| &e.produced).filter(|e| e.to() == Some(CLIENT));
        let completions_produced: Vec<&str> = completions_produced.map(Event::id).collect();
        assert_eq!(completions_produced.len(), 1, "workflow {i}: completion events produced");
        assert!(
            completions.contains_key(completions_produced[0]),
            "workflow {i}: the completion delivered is the one journaled"
        );
    }
    completions.values().filter(|c| c.deliveries > 1).count()
}
