//! The runtime seam end to end, on the in-process transport and the in-memory store: many
//! workflows started at once all complete exactly once; a store failing for a while and a lock
//! held elsewhere (on a transport whose lanes other processes share) are retried in the same
//! process; on the in-process transport steps take no lease; an orchestrator step costs two
//! store calls;
//! a node refuses a machine whose services nobody handles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::memory::{
    Acquired, Commit, EventKey, InMemory, Lease, Memory, MemoryError, Stored, Wake, WriteMeta,
};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, NodeError, RetryPolicy, WorkflowStatus};
use orchestrator::transport::{InProcessConfig, InProcessTransport, Topics, Transport, TransportError};
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AddV1, AverageClient, AverageInput, AverageV1, services};

const CLIENT: &str = "com.test.client";

fn init(i: usize) -> Event {
    let values = vec![i as f64, (i + 2) as f64];
    EventFactory::<AverageV1>::new()
        .init(AverageInput { values }, Event::builder().source(CLIENT))
        .expect("init")
}

/// A store around `InMemory` that counts calls per method and can fail commits (a full disk)
/// until a deadline.
#[derive(Default)]
struct Instrumented {
    inner: InMemory<WorkflowRecord>,
    calls: Mutex<HashMap<&'static str, usize>>,
    failing: AtomicBool,
    faults: AtomicUsize,
}

impl Instrumented {
    fn count(&self, method: &'static str) {
        *self.calls.lock().unwrap_or_else(PoisonError::into_inner).entry(method).or_default() += 1;
    }

    fn calls(&self) -> HashMap<&'static str, usize> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The error a full disk gives: transient.
#[derive(Debug)]
struct DiskFull;
impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("database or disk is full")
    }
}
impl std::error::Error for DiskFull {}

impl Memory<WorkflowRecord> for Instrumented {
    async fn read(&self, id: &str) -> Result<Option<Stored<WorkflowRecord>>, MemoryError> {
        self.count("read");
        self.inner.read(id).await
    }
    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        self.count("lock");
        self.inner.lock(id).await
    }
    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        self.count("renew");
        self.inner.renew(lease).await
    }
    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        self.count("unlock");
        self.inner.unlock(lease).await
    }
    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<WorkflowRecord>>, MemoryError> {
        self.count(if lock { "acquire (locking)" } else { "acquire" });
        self.inner.acquire(id, event, lock).await
    }
    async fn commit(&self, commit: Commit<'_, WorkflowRecord>) -> Result<u64, MemoryError> {
        self.count("commit");
        if self.failing.load(Ordering::SeqCst) {
            self.faults.fetch_add(1, Ordering::SeqCst);
            return Err(MemoryError::Backend {
                id: commit.id.to_owned(),
                transient: true,
                source: Box::new(DiskFull),
            });
        }
        self.inner.commit(commit).await
    }
    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        self.count("produced");
        self.inner.produced(id, event).await
    }
    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        self.count("claim_due");
        self.inner.claim_due(limit, claim).await
    }
    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        self.count("cleanup");
        self.inner.cleanup(id).await
    }
}

async fn node<M: Memory<WorkflowRecord> + 'static>(
    store: &Arc<M>,
    client: &AverageClient,
    retry: RetryPolicy,
) -> Node<M, orchestrator::transport::InProcessTransport> {
    node_on(store, client, retry, InProcessTransport::new(InProcessConfig::default()).expect("transport"))
        .await
}

async fn node_on<M: Memory<WorkflowRecord> + 'static, T: Transport>(
    store: &Arc<M>,
    client: &AverageClient,
    retry: RetryPolicy,
    transport: T,
) -> Node<M, T> {
    Node::builder(Arc::clone(store))
        .transport(transport)
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .service(client.clone())
        .orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<AverageFlow>())
        .retry(retry)
        .without_timers()
        .build()
        .await
        .expect("a node")
}

/// Starts `n` workflows at once (each from its own task) and checks each completes exactly once
/// with the right result and nothing is dead-lettered.
async fn start_at_once_and_check(n: usize) {
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let client = AverageClient::new(CLIENT);
    let node = Arc::new(node(&store, &client, RetryPolicy::default()).await);
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let node = Arc::clone(&node);
            tokio::spawn(async move { node.start(init(i)).await.expect("started") })
        })
        .collect();
    let mut subjects = Vec::with_capacity(n);
    for task in tasks {
        subjects.push(task.await.expect("task"));
    }
    client.wait_for(n, Duration::from_secs(600)).await;
    node.shutdown().await;
    println!("{n} workflows at once: {:?}", started.elapsed());
    let counts = client.counts();
    assert_eq!(counts.len(), n, "every workflow completed");
    assert!(counts.values().all(|(times, _)| *times == 1), "each exactly once");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered");
    for subject in subjects.iter().take(50) {
        assert_eq!(node.status(subject).await.expect("status"), Some(WorkflowStatus::Done));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_started_at_once_beyond_capacity_all_complete_exactly_once() {
    // The default capacity is 1,000; 4,000 workflows each in flight at once overflow it many
    // times (init, add, divide, completion).
    start_at_once_and_check(4_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full size of the issue: run with --ignored --release"]
async fn twenty_thousand_workflows_started_at_once_all_complete_exactly_once() {
    start_at_once_and_check(20_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failing_writes_for_a_while_recovers_in_the_same_process() {
    let store = Arc::new(Instrumented::default());
    let client = AverageClient::new(CLIENT);
    let retry = RetryPolicy {
        max_attempts: 30,
        initial: Duration::from_millis(10),
        max_delay: Duration::from_millis(200),
        ..RetryPolicy::default()
    };
    let node = node(&store, &client, retry).await;
    store.failing.store(true, Ordering::SeqCst);
    for i in 0..40 {
        node.start(init(i)).await.expect("start");
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(client.completed(), 0, "nothing completes while the disk is full");
    assert!(store.faults.load(Ordering::SeqCst) >= 40, "every workflow hit the fault");
    store.failing.store(false, Ordering::SeqCst);
    client.wait_for(40, Duration::from_secs(30)).await;
    node.shutdown().await;
    assert!(client.counts().values().all(|(times, _)| *times == 1), "each exactly once");
    assert!(node.take_dead_letters().is_empty(), "retried, not dead-lettered");
    assert!(node.dispatcher().stats().retried > 0);
}

/// The in-process transport, but claiming that other processes may consume the same lanes (as a
/// broker's transport does): the node's steps then take the store's lease.
struct SharedLanes(InProcessTransport);

impl Transport for SharedLanes {
    type Subscription = <InProcessTransport as Transport>::Subscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        self.0.publish(events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<Self::Subscription, TransportError> {
        self.0.subscribe(topics).await
    }

    fn close(&self) {
        self.0.close();
    }

    fn exclusive_lanes(&self) -> bool {
        false
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_elsewhere_is_retried_until_released() {
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let client = AverageClient::new(CLIENT);
    let retry = RetryPolicy {
        max_attempts: 30,
        initial: Duration::from_millis(10),
        max_delay: Duration::from_millis(100),
        ..RetryPolicy::default()
    };
    let transport = SharedLanes(InProcessTransport::new(InProcessConfig::default()).expect("transport"));
    let node = node_on(&store, &client, retry, transport).await;
    let event = init(7);
    // Another node holds the workflow's lease.
    let held = store.lock(event.subject()).await.expect("lock").expect("free");
    node.start(event).await.expect("start");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(client.completed(), 0, "the workflow waits for the lease");
    store.unlock(&held).await.expect("unlock");
    client.wait_for(1, Duration::from_secs(10)).await;
    node.shutdown().await;
    assert_eq!(client.counts().values().next().map(|c| c.1), Some(8.0));
    assert!(node.dispatcher().stats().retried > 0, "the denied deliveries were retried");
    assert!(node.take_dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_in_process_transport_steps_take_no_lease_and_a_stale_writer_is_refused() {
    let store = Arc::new(Instrumented::default());
    let client = AverageClient::new(CLIENT);
    let node = node(&store, &client, RetryPolicy::default()).await;
    let event = init(7);
    // Another process holds the workflow's lease and read it before it existed.
    let held = store.lock(event.subject()).await.expect("lock").expect("free");
    let subject = node.start(event).await.expect("start");
    client.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(client.counts().values().next().map(|c| c.1), Some(8.0), "not held up by the lease");
    // Its write, against what it read, loses nothing: the compare-and-swap refuses it.
    let record = store.read(&subject).await.expect("read").expect("a record").record;
    let stale = store
        .commit(Commit::new(&subject, record, None, WriteMeta::new(&subject, "com.other")).lease(Some(&held)))
        .await;
    assert!(matches!(stale, Err(MemoryError::Conflict { .. })), "{stale:?}");
    let calls = store.calls();
    assert_eq!(calls.get("acquire (locking)"), None, "no step took a lease: {calls:?}");
    assert_eq!(calls.get("lock"), Some(&1), "only the other process's: {calls:?}");
    assert_eq!(calls.get("acquire"), Some(&3), "three steps: {calls:?}");
    node.shutdown().await;
    assert!(node.take_dead_letters().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_step_costs_two_store_round_trips() {
    let store = Arc::new(Instrumented::default());
    let client = AverageClient::new(CLIENT);
    let node = node(&store, &client, RetryPolicy::default()).await;
    for i in 0..20 {
        node.start(init(i)).await.expect("start");
    }
    client.wait_for(20, Duration::from_secs(30)).await;
    node.shutdown().await;
    let calls = store.calls();
    // Each averaging workflow takes three orchestrator steps: init, sum, quotient.
    let steps = 20 * 3;
    assert_eq!(calls.get("acquire"), Some(&steps), "one acquire per step: {calls:?}");
    assert_eq!(calls.get("commit"), Some(&steps), "one commit per step: {calls:?}");
    let total: usize = calls.values().sum();
    assert_eq!(total, 2 * steps, "nothing else: {calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_whose_services_nobody_handles_is_refused() {
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let refused = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .build()
        .await
        .expect_err("divide has no handler");
    match &refused {
        NodeError::MissingServices(missing) => {
            assert_eq!(missing.len(), 1);
            assert_eq!(missing[0].service, "com.calc.divide");
            assert_eq!(missing[0].orchestrator, "arvo.orc.calc.average");
        }
        other => panic!("expected MissingServices, got {other:?}"),
    }
    assert!(refused.to_string().contains("NodeBuilder::remote"), "the message says what to do: {refused}");
    let remote = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .remote("com.calc.divide")
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .build()
        .await
        .expect("a service declared remote is fine");
    remote.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_awaits_the_completion_and_a_redelivered_init_starts_nothing() {
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .client(CLIENT)
        .build()
        .await
        .expect("node");
    let event = init(1);
    let done = node.run(event.clone()).await.expect("run");
    assert_eq!(done.data()["average"], 2.0);
    let version = store.read(event.subject()).await.expect("read").expect("kept").version;
    // The same init again, after completion (default retention keeps the workflow).
    node.transport().publish(vec![event.clone()]).await.expect("publish");
    node.transport().wait_idle().await;
    let after = store.read(event.subject()).await.expect("read").expect("kept");
    assert_eq!(after.version, version, "a redelivered init writes nothing");
    assert_eq!(node.status(event.subject()).await.expect("status"), Some(WorkflowStatus::Done));
    let other = Event::builder()
        .source("com.someone.else")
        .r#type("com.someone.ask")
        .subject("s")
        .data_json(serde_json::json!({}))
        .build()
        .expect("event");
    assert!(matches!(node.run(other).await, Err(NodeError::NotAClient { .. })));
    node.shutdown().await;
    assert!(node.take_dead_letters().is_empty());
}

/// A node records in its store's catalog what tools need to show its workflows without the
/// user's code: the orchestrator's version with its chart and the contracts it uses, and each
/// contract's document. A store without a catalog (the counting wrapper above) is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_records_its_workflows_in_the_stores_catalog() {
    use orchestrator::memory::{Catalog, DefinitionKind};
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .without_timers()
        .build()
        .await
        .expect("a node");
    let recorded = store.definitions().await.expect("the catalog");
    let keys: Vec<(DefinitionKind, &str)> =
        recorded.iter().map(|r| (r.definition.kind, r.definition.name.as_str())).collect();
    assert_eq!(
        keys,
        [
            (DefinitionKind::Contract, "arvo.orc.calc.average"),
            (DefinitionKind::Contract, "com.calc.add"),
            (DefinitionKind::Contract, "com.calc.divide"),
            (DefinitionKind::Orchestrator, "arvo.orc.calc.average"),
        ],
        "the orchestrator and the contracts it uses, each once"
    );
    let add = &recorded[1].definition;
    assert_eq!(add.document, AddV1::versioned().to_json_schema(), "Arvo's toJsonSchema() of the version");
    let flow = &recorded[3].definition.document;
    assert_eq!(flow["machine"], <AverageFlow as orchestrator::machine::Machine>::NAME);
    assert_eq!(flow["resumable"], false);
    assert_eq!(flow["contract"]["type"], "arvo.orc.calc.average");
    let services: Vec<&str> = flow["services"]
        .as_array()
        .expect("services")
        .iter()
        .map(|s| s["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(services, ["com.calc.add", "com.calc.divide"]);
    let mermaid = flow["chart"]["mermaid"].as_str().expect("a Mermaid chart");
    assert!(mermaid.starts_with("stateDiagram-v2"), "{mermaid}");
    assert!(flow["chart"]["dot"].as_str().expect("a DOT chart").starts_with("digraph"));
    assert!(flow["chart"]["xstate"]["states"].is_object(), "an XState machine");
    node.shutdown().await;
}

/// A node runs its handlers through worker pools: the default one, and one of its own for a
/// service, which can be resized while workflows run and reports its lifecycle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_runs_a_service_in_a_pool_of_its_own_that_can_be_resized() {
    use orchestrator::handler::EventHandler;
    use orchestrator::runtime::NODE_POOL;
    use orchestrator::runtime::pool::LifecycleEvent;
    use orchestrator::transport::{InProcessConfig, InProcessTransport};

    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let add = services::add().expect("add");
    let topic = add.source().to_owned();
    let node = Node::builder(Arc::clone(&store))
        .service(add)
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .client(CLIENT)
        // Given explicitly, the transport is consumed by topic: the service's pool alone takes
        // its events (with the default in-process transport, the default pool takes every
        // topic, this one included).
        .transport(InProcessTransport::new(InProcessConfig::default()).expect("transport"))
        .workers(3)
        .pool(topic.clone(), 2)
        .build()
        .await
        .expect("node");
    let mut events = node.consumer().subscribe();
    let pool = node.consumer().pool(&topic).expect("the service's pool");
    assert_eq!((pool.workers(), node.consumer().pool(NODE_POOL).expect("default").workers()), (2, 3));
    let done = node.run(init(1)).await.expect("run");
    assert_eq!(done.data()["average"], 2.0);
    pool.resize(4).await.expect("resized");
    assert_eq!(pool.workers(), 4);
    let done = node.run(init(3)).await.expect("run");
    assert_eq!(done.data()["average"], 4.0);
    // The service's tasks ran in its pool.
    let (mut in_pool, mut elsewhere) = (0, 0);
    while let Ok(event) = events.try_recv() {
        if let LifecycleEvent::TaskSuccess { worker, task } = event
            && task.event_type == topic
        {
            if *worker.pool == *topic { in_pool += 1 } else { elsewhere += 1 }
        }
    }
    assert_eq!((in_pool, elsewhere), (2, 0), "the add service ran in its own pool");
    node.stop().await;
    assert!(pool.state().stopped);
    assert!(node.take_dead_letters().is_empty());
    let unknown = Node::builder(Arc::clone(&store)).pool("com.nobody", 1).build().await;
    assert!(matches!(unknown, Err(NodeError::NoHandlerForPool { .. })));
}

/// An event built in code is held to the node's limit (1 MiB by default, the limit the parsers
/// apply to bytes): an 8.9 MB init is refused by `start` with a typed error naming it, and
/// nothing is stored, published or delivered. Before, it went through the transport, the
/// store and the handlers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_larger_than_the_limit_is_refused_and_nothing_is_stored_or_delivered() {
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(Arc::clone(&store))
        .service(services::add().expect("add"))
        .service(services::divide().expect("divide"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .client(CLIENT)
        .without_timers()
        .build()
        .await
        .expect("node");
    // An init built in code carrying 8.9 MB.
    let small_init = init(1);
    let mut data = small_init.data().clone();
    data.insert("blob".to_owned(), serde_json::Value::String("x".repeat(8_900_000)));
    let big = small_init.to_builder().data_json(serde_json::Value::Object(data)).build().expect("init");
    assert!(big.encoded_len() > 8_800_000, "{}", big.encoded_len());
    for refused in [node.start(big.clone()).await.map(drop), node.run(big.clone()).await.map(drop)] {
        match refused {
            Err(NodeError::EventTooLarge(e)) => {
                assert_eq!((e.id.as_str(), e.size, e.max), (big.id(), big.encoded_len(), 1024 * 1024));
                assert!(e.to_string().contains(big.id()), "{e}");
            }
            other => panic!("expected EventTooLarge, got {other:?}"),
        }
    }
    node.transport().wait_idle().await;
    assert_eq!(node.status(big.subject()).await.expect("status"), None, "nothing stored");
    assert_eq!(node.dispatcher().stats().delivered, 0, "nothing delivered");

    node.shutdown().await;
}
