//! The SQLite outbox: the conformance suite, durability across reopening, and handlers wrapped in
//! `Outboxed` driving a workflow through the broker until nothing is left in flight.

use std::sync::Arc;

use orchestrator::broker::Broker;
use orchestrator::handler::EventHandler;
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::outbox::{InMemoryOutbox, Outbox, Outboxed, publish, redeliver, testing};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};
use serde_json::json;

fn store(path: &std::path::Path) -> SqliteMemory<WorkflowRecord> {
    SqliteConfig::new(path).open().expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_outbox_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    testing::conformance(|| {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        store(&dir.path().join(format!("outbox-{i}.db")))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_outbox_conforms() {
    testing::conformance(InMemoryOutbox::new).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_in_flight_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reopen.db");
    let (a, b) = (testing::event("s-1"), testing::event("s-1"));
    {
        let m = store(&path);
        m.advance(None, &[a.clone(), b.clone()]).await.unwrap();
        m.advance(Some(a.id()), &[]).await.unwrap();
    }
    let m = store(&path);
    let pending = m.pending(0, 10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].event, b, "the event read back is the event stored");
}

fn average_init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new()
        .init(AverageInput { values }, Event::builder().source("com.test.client"))
        .expect("init event")
}

/// The client: takes completions, produces nothing.
#[derive(Clone, Default)]
struct Client(Arc<std::sync::Mutex<Vec<Event>>>);

impl EventHandler for Client {
    fn source(&self) -> &str {
        "com.test.client"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event.clone());
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outboxed_handlers_leave_nothing_in_flight_once_workflows_finish() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(store(&dir.path().join("flow.db")));
    let orc = Orchestrator::builder(Arc::clone(&memory)).machine::<AverageFlow>().build().unwrap();
    let client = Client::default();
    let broker = Broker::builder()
        .handler(Outboxed::new(orc, Arc::clone(&memory)))
        .handler(Outboxed::new(services::add().unwrap(), Arc::clone(&memory)))
        .handler(Outboxed::new(services::divide().unwrap(), Arc::clone(&memory)))
        .handler(Outboxed::new(client.clone(), Arc::clone(&memory)))
        .workers(2)
        .build()
        .unwrap();
    for i in 0..10 {
        publish(&*memory, &broker.handle(), average_init(vec![f64::from(i), f64::from(i + 2)]))
            .await
            .unwrap();
    }
    broker.wait_idle().await;
    assert!(broker.take_dead_letters().is_empty());
    let mut averages: Vec<f64> =
        client.0.lock().unwrap().iter().map(|e| e.data()["average"].as_f64().unwrap()).collect();
    averages.sort_by(f64::total_cmp);
    assert_eq!(averages, (1..=10).map(f64::from).collect::<Vec<_>>());
    assert!(memory.pending(0, 100).await.unwrap().is_empty(), "every event was consumed and settled");
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_left_in_flight_are_redelivered_once() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(store(&dir.path().join("redeliver.db")));
    let orc = Orchestrator::builder(Arc::clone(&memory)).machine::<AverageFlow>().build().unwrap();
    // A previous run got as far as the add request, then died: the request is in flight.
    let init = average_init(vec![2.0, 4.0]);
    memory.advance(None, std::slice::from_ref(&init)).await.unwrap();
    let first = Outboxed::new(orc.clone(), Arc::clone(&memory)).execute(&init).await.unwrap();
    assert_eq!(first.len(), 1, "the add request");
    let pending = memory.pending(0, 10).await.unwrap();
    assert_eq!(pending.iter().map(|p| p.event.id()).collect::<Vec<_>>(), [first[0].id()]);

    let client = Client::default();
    let broker = Broker::builder()
        .handler(Outboxed::new(orc, Arc::clone(&memory)))
        .handler(Outboxed::new(services::add().unwrap(), Arc::clone(&memory)))
        .handler(Outboxed::new(services::divide().unwrap(), Arc::clone(&memory)))
        .handler(Outboxed::new(client.clone(), Arc::clone(&memory)))
        .workers(2)
        .build()
        .unwrap();
    assert_eq!(redeliver(&*memory, &broker.handle(), 1).await.unwrap(), 1);
    broker.wait_idle().await;
    let completions = client.0.lock().unwrap().clone();
    assert_eq!(completions.len(), 1, "{completions:?}");
    assert_eq!(completions[0].data_value(), &json!({"average": 3.0}));
    assert!(memory.pending(0, 10).await.unwrap().is_empty());
    // A second start finds nothing to redeliver.
    assert_eq!(redeliver(&*memory, &broker.handle(), 10).await.unwrap(), 0);
    broker.shutdown().await;
}

/// Fails with a contract violation, or with a transient one.
struct Refuses(Violation);

impl EventHandler for Refuses {
    fn source(&self) -> &str {
        "com.test.refuses"
    }
    async fn execute(&self, _: &Event) -> Result<Vec<Event>, Violation> {
        Err(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_violation_settles_the_event_unless_it_is_transient() {
    let outbox = Arc::new(InMemoryOutbox::new());
    let event = testing::event("s-9");
    outbox.advance(None, std::slice::from_ref(&event)).await.unwrap();
    let transient = Outboxed::new(
        Refuses(Violation::transaction(TransactionCause::LockUnacquired, "held")),
        Arc::clone(&outbox),
    );
    assert!(transient.execute(&event).await.is_err());
    assert_eq!(outbox.len(), 1, "a lock denied is retried after a restart");
    let final_ = Outboxed::new(Refuses(Violation::contract("bad payload")), Arc::clone(&outbox));
    assert!(final_.execute(&event).await.is_err());
    assert!(outbox.is_empty(), "a contract violation would only repeat: settled");
}
