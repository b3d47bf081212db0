//! The in-process broker (`orchestrator::broker`): FIFO and per-subject ordering under N workers,
//! concurrency across subjects, the bounded queue and backpressure without loss, retries of
//! transient failures, resolve, dead letters (bounded), domained events, shutdown, the log and
//! the counters.
//!
//! Concurrency is proven with barriers and overlap detection, never with timing thresholds; the
//! only timeout (`within`) turns a hang into a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use orchestrator::broker::{
    Broker, BrokerError, BrokerHandle, DEFAULT_CAPACITY, DeadLetter, DeadLetterReason, DomainedEvent,
    RetryPolicy,
};
use orchestrator::event::Event;
use orchestrator::handler::EventHandler;
use orchestrator::subject::Subject;
use orchestrator::violation::{TransactionCause, Violation};
use serde_json::{Value, json};
use tokio::sync::{Barrier, Semaphore, mpsc, oneshot};

const CLIENT: &str = "com.test.client";

/// Fails the test instead of hanging it.
async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future).await.expect("the broker hung")
}

/// An event from `source` to `to` (whose type is `to`).
fn event(source: &str, to: &str, subject: &str, data: Value) -> Event {
    Event::builder().source(source).r#type(to).to(to).subject(subject).data_json(data).build().unwrap()
}

/// An event produced by the handler on `from` in answer to `trigger`, on the same subject.
fn answer(trigger: &Event, from: &str, to: &str, r#type: &str, data: Value) -> Event {
    Event::builder()
        .source(from)
        .r#type(r#type)
        .to(to)
        .subject(trigger.subject())
        .parentid(trigger.id())
        .data_json(data)
        .build()
        .unwrap()
}

fn int(event: &Event, key: &str) -> i64 {
    event.data()[key].as_i64().unwrap_or_else(|| panic!("`{key}` in {:?}", event.data()))
}

fn text<'a>(event: &'a Event, key: &str) -> &'a str {
    event.data()[key].as_str().unwrap_or_else(|| panic!("`{key}` in {:?}", event.data()))
}

fn orchestration_subject() -> String {
    Subject::builder("com.test.chain", "1.0.0", CLIENT).build().unwrap().as_str().to_owned()
}

// ---------------------------------------------------------------------------------------------
// Test handlers

/// Answers `data.reply` with the same data.
struct Echo;

impl EventHandler for Echo {
    fn source(&self) -> &str {
        "com.test.echo"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let to = text(event, "reply");
        Ok(vec![answer(event, self.source(), to, "evt.test.echo.done", event.data_value().clone())])
    }
}

/// One step of a chain: adds `add` to `data.sum`, appends its topic to `data.trail`, and sends
/// the result to `next`, or to `data.reply` at the end of the chain.
struct Adder {
    topic: &'static str,
    add: i64,
    next: Option<&'static str>,
}

impl EventHandler for Adder {
    fn source(&self) -> &str {
        self.topic
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        // Give other subjects a chance to interleave.
        tokio::task::yield_now().await;
        let mut data = event.data().clone();
        data["sum"] = json!(int(event, "sum") + self.add);
        data["trail"].as_array_mut().unwrap().push(json!(self.topic));
        let (to, r#type) = match self.next {
            Some(next) => (next, next),
            None => (text(event, "reply"), "evt.test.chain.done"),
        };
        Ok(vec![answer(event, self.topic, to, r#type, Value::Object(data))])
    }
}

fn chain_broker(workers: usize) -> orchestrator::broker::BrokerBuilder {
    Broker::builder()
        .handler(Adder { topic: "com.test.a", add: 1, next: Some("com.test.b") })
        .handler(Adder { topic: "com.test.b", add: 10, next: Some("com.test.c") })
        .handler(Adder { topic: "com.test.c", add: 100, next: None })
        .workers(workers)
}

fn chain_start(reply: &str, subject: &str, sum: i64) -> Event {
    event(reply, "com.test.a", subject, json!({ "sum": sum, "reply": reply, "trail": [] }))
}

/// `data.width` copies of the event to itself with `depth - 1`, each on its own subject;
/// at depth 0, a leaf answer to `data.reply`.
struct FanOut;

impl EventHandler for FanOut {
    fn source(&self) -> &str {
        "com.test.fanout"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let (width, depth, reply) = (int(event, "width"), int(event, "depth"), text(event, "reply"));
        if depth == 0 {
            return Ok(vec![answer(
                event,
                self.source(),
                reply,
                "evt.test.leaf",
                json!({ "leaf": event.subject() }),
            )]);
        }
        Ok((0..width)
            .map(|i| {
                Event::builder()
                    .source(self.source())
                    .r#type(self.source())
                    .subject(format!("{}.{i}", event.subject()))
                    .parentid(event.id())
                    .data_json(json!({ "width": width, "depth": depth - 1, "reply": reply }))
                    .build()
                    .unwrap()
            })
            .collect())
    }
}

/// Records `(subject, data.n)` in handling order and detects two events of one subject being
/// handled at the same time.
#[derive(Default)]
struct Trace {
    order: Mutex<Vec<(String, i64)>>,
    active: Mutex<HashSet<String>>,
    overlaps: AtomicUsize,
}

struct Recorder(Arc<Trace>);

impl EventHandler for Recorder {
    fn source(&self) -> &str {
        "com.test.record"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let subject = event.subject().to_owned();
        if !self.0.active.lock().unwrap().insert(subject.clone()) {
            self.0.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.0.order.lock().unwrap().push((subject.clone(), int(event, "n")));
        // Stay in flight across several scheduling points, so a second event of the same subject
        // would be caught overlapping if the broker let it start.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        self.0.active.lock().unwrap().remove(&subject);
        Ok(vec![])
    }
}

fn record(subject: &str, n: i64) -> Event {
    event(CLIENT, "com.test.record", subject, json!({ "n": n }))
}

/// Waits at a barrier: it returns only if `parties` events are handled at the same time.
struct Rendezvous {
    topic: &'static str,
    barrier: Arc<Barrier>,
    spans: Arc<Mutex<Vec<(String, Instant, Instant)>>>,
}

impl EventHandler for Rendezvous {
    fn source(&self) -> &str {
        self.topic
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let start = Instant::now();
        self.barrier.wait().await;
        self.spans.lock().unwrap().push((event.subject().to_owned(), start, Instant::now()));
        Ok(vec![])
    }
}

/// Reports that it started, then waits for a permit; answers `data.reply` if there is one.
struct Gate {
    started: mpsc::UnboundedSender<String>,
    permits: Arc<Semaphore>,
}

impl EventHandler for Gate {
    fn source(&self) -> &str {
        "com.test.gate"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.started.send(event.id().to_owned()).unwrap();
        self.permits.acquire().await.unwrap().forget();
        Ok(match event.data().get("reply").and_then(Value::as_str) {
            Some(reply) => vec![answer(event, self.source(), reply, "evt.test.gate.done", json!({}))],
            None => vec![],
        })
    }
}

fn gate() -> (Gate, mpsc::UnboundedReceiver<String>, Arc<Semaphore>) {
    let (started, receiver) = mpsc::unbounded_channel();
    let permits = Arc::new(Semaphore::new(0));
    (Gate { started, permits: Arc::clone(&permits) }, receiver, permits)
}

/// Returns a violation when `data.fail` is true, an echo otherwise.
struct Strict;

impl EventHandler for Strict {
    fn source(&self) -> &str {
        "com.test.strict"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        if event.data()["fail"] == json!(true) {
            return Err(Violation::contract(format!("event {} is not acceptable", event.id())));
        }
        Ok(vec![answer(event, self.source(), text(event, "reply"), "evt.test.strict.done", json!({}))])
    }
}

/// Counts its calls.
struct Counter {
    topic: &'static str,
    calls: Arc<AtomicUsize>,
}

impl EventHandler for Counter {
    fn source(&self) -> &str {
        self.topic
    }
    async fn execute(&self, _: &Event) -> Result<Vec<Event>, Violation> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(vec![])
    }
}

/// Asks a human: produces a question to `com.test.approver` in domain `human.review`.
struct Asker;

impl EventHandler for Asker {
    fn source(&self) -> &str {
        "com.test.ask"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let question = Event::builder()
            .source(self.source())
            .r#type("com.test.approver")
            .subject(event.subject())
            .parentid(event.id())
            .domain("human.review")
            .data_json(json!({ "question": "approve?", "reply": text(event, "reply") }))
            .build()
            .unwrap();
        Ok(vec![question])
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering and concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_subject_is_handled_in_publish_order_by_many_workers() {
    let trace = Arc::new(Trace::default());
    let broker = Broker::builder().handler(Recorder(Arc::clone(&trace))).workers(8).build().unwrap();
    for n in 0..300 {
        broker.publish(record("only", n)).unwrap();
    }
    within(broker.wait_idle()).await;
    let order: Vec<i64> = trace.order.lock().unwrap().iter().map(|(_, n)| *n).collect();
    assert_eq!(order, (0..300).collect::<Vec<_>>());
    assert_eq!(trace.overlaps.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_worker_is_fifo_across_subjects() {
    let trace = Arc::new(Trace::default());
    let broker = Broker::builder().handler(Recorder(Arc::clone(&trace))).workers(1).build().unwrap();
    let published: Vec<(String, i64)> = (0..60).map(|n| (format!("s{}", n % 3 + n % 2), n)).collect();
    for (subject, n) in &published {
        broker.publish(record(subject, *n)).unwrap();
    }
    within(broker.wait_idle()).await;
    assert_eq!(*trace.order.lock().unwrap(), published, "plain FIFO, not Arvo's LIFO");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_subject_keeps_its_order_while_subjects_interleave() {
    const SUBJECTS: usize = 16;
    const PER_SUBJECT: i64 = 40;
    let trace = Arc::new(Trace::default());
    let broker = Broker::builder().handler(Recorder(Arc::clone(&trace))).workers(8).build().unwrap();
    let subjects: Vec<String> = (0..SUBJECTS).map(|_| orchestration_subject()).collect();
    for n in 0..PER_SUBJECT {
        for subject in &subjects {
            broker.publish(record(subject, n)).unwrap();
        }
    }
    within(broker.wait_idle()).await;
    assert_eq!(trace.overlaps.load(Ordering::SeqCst), 0, "two events of one subject overlapped");
    let order = trace.order.lock().unwrap();
    assert_eq!(order.len(), SUBJECTS * PER_SUBJECT as usize);
    let mut per_subject: HashMap<&str, Vec<i64>> = HashMap::new();
    for (subject, n) in order.iter() {
        per_subject.entry(subject).or_default().push(*n);
    }
    for subject in &subjects {
        assert_eq!(per_subject[subject.as_str()], (0..PER_SUBJECT).collect::<Vec<_>>(), "{subject}");
    }
    assert_eq!(broker.stats().delivered, (SUBJECTS * PER_SUBJECT as usize) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn different_subjects_run_at_the_same_time() {
    // Each handler waits at a 2-party barrier: they can only finish if both run at once.
    let spans = Arc::new(Mutex::new(vec![]));
    let broker = Broker::builder()
        .handler(Rendezvous {
            topic: "com.test.rendezvous",
            barrier: Arc::new(Barrier::new(2)),
            spans: Arc::clone(&spans),
        })
        .workers(2)
        .build()
        .unwrap();
    broker.publish(event(CLIENT, "com.test.rendezvous", "left", json!({}))).unwrap();
    broker.publish(event(CLIENT, "com.test.rendezvous", "right", json!({}))).unwrap();
    within(broker.wait_idle()).await;
    let spans = spans.lock().unwrap();
    let [(a, a_start, a_end), (b, b_start, b_end)] = &spans[..] else { panic!("{spans:?}") };
    assert_ne!(a, b);
    assert!(a_start < b_end && b_start < a_end, "the two executions overlap in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_subject_runs_at_the_same_time_in_different_handlers() {
    // A workflow calling two services at once: ordering is per handler and subject, so the two
    // services handle their events of the same subject concurrently (each waits for the other).
    let spans = Arc::new(Mutex::new(vec![]));
    let barrier = Arc::new(Barrier::new(2));
    let broker = Broker::builder()
        .handler(Rendezvous {
            topic: "com.test.left",
            barrier: Arc::clone(&barrier),
            spans: Arc::clone(&spans),
        })
        .handler(Rendezvous { topic: "com.test.right", barrier, spans: Arc::clone(&spans) })
        .workers(2)
        .build()
        .unwrap();
    broker.publish(event(CLIENT, "com.test.left", "workflow", json!({}))).unwrap();
    broker.publish(event(CLIENT, "com.test.right", "workflow", json!({}))).unwrap();
    within(broker.wait_idle()).await;
    let spans = spans.lock().unwrap();
    let [(_, a_start, a_end), (_, b_start, b_end)] = &spans[..] else { panic!("{spans:?}") };
    assert!(a_start < b_end && b_start < a_end, "the two executions overlap in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fan_out_runs_to_quiescence() {
    let broker = Broker::builder().handler(FanOut).workers(4).build().unwrap();
    let start = event(CLIENT, "com.test.fanout", "root", json!({ "width": 3, "depth": 4, "reply": CLIENT }));
    let last = within(broker.resolve(start)).await.unwrap().expect("a leaf answer");
    assert_eq!(last.r#type(), "evt.test.leaf");
    let stats = broker.stats();
    // 1 + 3 + 9 + 27 + 81 fan-out deliveries; the 81 leaf answers are collected.
    assert_eq!(stats.delivered, 121);
    assert_eq!(stats.collected, 81);
    assert_eq!(stats.published, 121 + 81);
    assert_eq!(stats.produced, 120 + 81);
    assert_eq!((stats.queued, stats.in_flight, stats.dead_lettered), (0, 0, 0));
}

// ---------------------------------------------------------------------------------------------
// Resolve

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resolve_returns_the_completion_and_can_be_repeated() {
    let broker = chain_broker(4).build().unwrap();
    let subject = orchestration_subject();
    for (round, sum) in [(1, 5), (2, 1000)] {
        let done = within(broker.resolve(chain_start(CLIENT, &subject, sum))).await.unwrap();
        let done = done.unwrap_or_else(|| panic!("round {round}: no completion"));
        assert_eq!(int(&done, "sum"), sum + 111, "round {round}");
        assert_eq!(done.source(), "com.test.c");
        assert_eq!(done.to(), Some(CLIENT));
        assert_eq!(done.subject(), subject);
        assert_eq!(done.data()["trail"], json!(["com.test.a", "com.test.b", "com.test.c"]));
    }
    // Once a resolve is over, events to its source are no longer collected.
    broker.publish(chain_start(CLIENT, &subject, 0)).unwrap();
    within(broker.wait_idle()).await;
    let letters = broker.take_dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].reason, DeadLetterReason::NoHandler { to: CLIENT.to_owned() });
    let stats = broker.stats();
    assert_eq!((stats.published, stats.delivered, stats.collected, stats.produced), (12, 9, 2, 9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resolve_without_an_answer_returns_none() {
    let calls = Arc::new(AtomicUsize::new(0));
    let broker = Broker::builder()
        .handler(Counter { topic: "com.test.count", calls: Arc::clone(&calls) })
        .build()
        .unwrap();
    let answer = within(broker.resolve(event(CLIENT, "com.test.count", "s", json!({})))).await.unwrap();
    assert_eq!(answer, None);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resolve_from_a_handler_topic_is_refused() {
    let broker = Broker::builder().handler(Echo).build().unwrap();
    let from_handler = event("com.test.echo", "com.test.echo", "s", json!({ "reply": "com.test.echo" }));
    let err = broker.resolve(from_handler).await.unwrap_err();
    assert_eq!(err, BrokerError::SourceIsHandlerTopic { topic: "com.test.echo".to_owned() });
    assert!(err.to_string().contains("com.test.echo"), "{err}");
    assert_eq!(broker.stats().published, 0, "nothing was published");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_resolves_need_distinct_sources() {
    let (gate, mut started, permits) = gate();
    let broker = Broker::builder().handler(gate).handler(Echo).workers(4).build().unwrap();
    let first = tokio::spawn({
        let broker = broker.clone();
        async move { broker.resolve(event(CLIENT, "com.test.gate", "one", json!({ "reply": CLIENT }))).await }
    });
    within(started.recv()).await.unwrap();
    // Same source while the first is in progress: refused.
    let err = broker.resolve(event(CLIENT, "com.test.echo", "two", json!({ "reply": CLIENT }))).await;
    assert_eq!(err.unwrap_err(), BrokerError::ResolveInProgress { topic: CLIENT.to_owned() });
    // A different source: fine (it returns once the whole broker is idle, so after the gate).
    let other = "com.test.other";
    let second = tokio::spawn({
        let broker = broker.clone();
        async move {
            broker.resolve(event(other, "com.test.echo", "three", json!({ "reply": other, "k": 3 }))).await
        }
    });
    permits.add_permits(1);
    let first = within(first).await.unwrap().unwrap().expect("gate answer");
    let second = within(second).await.unwrap().unwrap().expect("echo answer");
    assert_eq!((first.r#type(), first.to()), ("evt.test.gate.done", Some(CLIENT)));
    assert_eq!((second.r#type(), second.to(), int(&second, "k")), ("evt.test.echo.done", Some(other), 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn a_thousand_interleaved_chains_complete_exactly() {
    const CHAINS: i64 = 1000;
    let broker = chain_broker(8).capacity(4 * CHAINS as usize).build().unwrap();
    let tasks: Vec<_> = (0..CHAINS)
        .map(|i| {
            let broker = broker.clone();
            tokio::spawn(async move {
                let source = format!("com.test.client.c{i}");
                let subject = orchestration_subject();
                let done = broker.resolve(chain_start(&source, &subject, i * 1000)).await.unwrap();
                (i, source, subject, done)
            })
        })
        .collect();
    for task in tasks {
        let (i, source, subject, done) = within(task).await.unwrap();
        let done = done.unwrap_or_else(|| panic!("chain {i}: no completion"));
        assert_eq!(int(&done, "sum"), i * 1000 + 111, "chain {i}");
        assert_eq!(done.to(), Some(source.as_str()));
        assert_eq!(done.subject(), subject);
        assert_eq!(done.data()["trail"], json!(["com.test.a", "com.test.b", "com.test.c"]));
    }
    let stats = broker.stats();
    let n = CHAINS as u64;
    assert_eq!((stats.published, stats.delivered, stats.collected, stats.produced), (4 * n, 3 * n, n, 3 * n));
    assert_eq!((stats.dead_lettered, stats.rejected, stats.queued, stats.in_flight), (0, 0, 0, 0));
}

// ---------------------------------------------------------------------------------------------
// The bounded queue and publishing errors

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_is_a_typed_error() {
    let (gate, mut started, permits) = gate();
    let broker = Broker::builder().handler(gate).workers(1).capacity(2).build().unwrap();
    let gated = |n: i64| event(CLIENT, "com.test.gate", &format!("s{n}"), json!({ "n": n }));
    broker.publish(gated(0)).unwrap();
    within(started.recv()).await.unwrap(); // in flight: it no longer takes a slot
    broker.publish(gated(1)).unwrap();
    broker.publish(gated(2)).unwrap();
    let full = broker.publish(gated(3)).unwrap_err();
    assert_eq!(full, BrokerError::QueueFull { capacity: 2 });
    assert_eq!(full.to_string(), "the event queue is full (capacity 2)");
    let stats = broker.stats();
    assert_eq!((stats.published, stats.rejected, stats.queued, stats.in_flight), (3, 1, 2, 1));

    // `publish_wait` waits for room instead.
    let waiting = tokio::spawn({
        let broker = broker.clone();
        async move { broker.publish_wait(gated(4)).await }
    });
    permits.add_permits(1); // event 0 finishes; event 1 takes the worker and frees a slot
    within(waiting).await.unwrap().unwrap();
    permits.add_permits(3);
    within(broker.wait_idle()).await;
    assert_eq!(broker.stats().delivered, 4);
    assert_eq!(broker.capacity(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_event_without_to_is_refused_by_id() {
    let broker = Broker::builder().handler(Echo).build().unwrap();
    let no_to = Event::from_json_value(json!({
        "id": "no-to-1", "source": CLIENT, "specversion": "1.0", "type": "com.test.echo", "subject": "s",
        "datacontenttype": "application/json", "data": {}, "time": "2024-01-01T00:00:00Z",
    }))
    .unwrap();
    assert_eq!(no_to.to(), None);
    let err = broker.publish(no_to.clone()).unwrap_err();
    assert_eq!(err, BrokerError::MissingTo { id: "no-to-1".to_owned() });
    assert!(err.to_string().contains("no-to-1"), "{err}");
    assert_eq!(broker.resolve(no_to.clone()).await.unwrap_err(), err);
    assert_eq!(broker.publish_wait(no_to).await.unwrap_err(), err);
    assert_eq!(broker.stats().rejected, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn produced_events_are_admitted_over_capacity() {
    let calls = Arc::new(AtomicUsize::new(0));
    let broker = Broker::builder()
        .handler(FanOut)
        .handler(Counter { topic: CLIENT, calls: Arc::clone(&calls) })
        .workers(1)
        .capacity(2)
        .build()
        .unwrap();
    // Depth 1, width 5: five products, but only two slots. Products are never refused (the
    // broker used to dead-letter the three that did not fit).
    broker
        .publish(event(CLIENT, "com.test.fanout", "root", json!({ "width": 5, "depth": 1, "reply": CLIENT })))
        .unwrap();
    within(broker.wait_idle()).await;
    assert!(broker.take_dead_letters().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 5, "every branch completed");
    assert_eq!(broker.stats().rejected, 0);
}

// ---------------------------------------------------------------------------------------------
// Dead letters

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_event_without_handler_is_a_dead_letter_and_processing_continues() {
    let broker = Broker::builder().handler(Echo).workers(1).build().unwrap();
    let lost = event(CLIENT, "com.test.nowhere", "s", json!({}));
    broker.publish(lost.clone()).unwrap();
    let echoed =
        within(broker.resolve(event(CLIENT, "com.test.echo", "s", json!({ "reply": CLIENT, "k": 7 }))))
            .await
            .unwrap()
            .expect("the echo still runs");
    assert_eq!(int(&echoed, "k"), 7);
    let letters = broker.take_dead_letters();
    assert_eq!(
        letters,
        vec![DeadLetter {
            event: lost,
            reason: DeadLetterReason::NoHandler { to: "com.test.nowhere".to_owned() }
        }]
    );
    assert_eq!(letters[0].reason.to_string(), "no handler registered for `to` = `com.test.nowhere`");
    assert!(broker.take_dead_letters().is_empty(), "taken");
    assert_eq!(broker.stats().dead_lettered, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_violation_goes_to_on_error_and_processing_continues() {
    let reported = Arc::new(Mutex::new(Vec::<DeadLetter>::new()));
    let broker = Broker::builder()
        .handler(Strict)
        .workers(2)
        .on_error({
            let reported = Arc::clone(&reported);
            move |letter| reported.lock().unwrap().push(letter)
        })
        .build()
        .unwrap();
    let bad = event(CLIENT, "com.test.strict", "s", json!({ "fail": true, "reply": CLIENT }));
    broker.publish(bad.clone()).unwrap();
    let good = event(CLIENT, "com.test.strict", "s", json!({ "fail": false, "reply": CLIENT }));
    let done = within(broker.resolve(good)).await.unwrap().expect("the next event still runs");
    assert_eq!(done.r#type(), "evt.test.strict.done");
    let reported = reported.lock().unwrap();
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].event, bad);
    match &reported[0].reason {
        DeadLetterReason::Violation(v) => {
            assert_eq!(v.kind(), "Contract");
            assert!(v.message().contains(bad.id()));
        }
        other => panic!("{other:?}"),
    }
    assert!(broker.take_dead_letters().is_empty(), "the callback got it; nothing kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_handler_is_a_dead_letter_and_the_worker_survives() {
    struct Boom;
    impl EventHandler for Boom {
        fn source(&self) -> &str {
            "com.test.boom"
        }
        async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
            tokio::task::yield_now().await;
            panic!("boom on {}", event.subject());
        }
    }
    let broker = Broker::builder().handler(Boom).handler(Echo).workers(1).build().unwrap();
    broker.publish(event(CLIENT, "com.test.boom", "s", json!({}))).unwrap();
    let echoed =
        within(broker.resolve(event(CLIENT, "com.test.echo", "s", json!({ "reply": CLIENT })))).await;
    assert!(echoed.unwrap().is_some(), "the only worker still runs");
    let letters = broker.take_dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].reason, DeadLetterReason::Panicked { message: "boom on s".to_owned() });
}

// ---------------------------------------------------------------------------------------------
// Domained events

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn domained_events_go_to_the_callback_which_can_reply() {
    let approver_calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::<DomainedEvent>::new()));
    let broker = Broker::builder()
        .handler(Asker)
        .handler(Counter { topic: "com.test.approver", calls: Arc::clone(&approver_calls) })
        .on_domained({
            let seen = Arc::clone(&seen);
            move |domained: DomainedEvent, handle: BrokerHandle| {
                let seen = Arc::clone(&seen);
                async move {
                    // A human (or an external system) answers, later.
                    tokio::task::yield_now().await;
                    let reply = text(&domained.event, "reply").to_owned();
                    let answer = answer(
                        &domained.event,
                        "com.test.human",
                        &reply,
                        "evt.test.approved",
                        json!({ "ok": true }),
                    );
                    seen.lock().unwrap().push(domained);
                    handle.publish(answer).unwrap();
                }
            }
        })
        .build()
        .unwrap();
    let done = within(broker.resolve(event(CLIENT, "com.test.ask", "s", json!({ "reply": CLIENT }))))
        .await
        .unwrap()
        .expect("the callback's reply is awaited");
    assert_eq!((done.r#type(), done.data()["ok"].clone()), ("evt.test.approved", json!(true)));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].domain, "human.review");
    assert_eq!(seen[0].event.domain(), Some("human.review"));
    assert_eq!(seen[0].event.to(), Some("com.test.approver"));
    assert_eq!(approver_calls.load(Ordering::SeqCst), 0, "domained events are not published");
    let stats = broker.stats();
    assert_eq!((stats.produced, stats.domained, stats.published), (1, 1, 2));
    assert!(broker.take_domained().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn domained_events_without_callback_are_kept() {
    let approver_calls = Arc::new(AtomicUsize::new(0));
    let broker = Broker::builder()
        .handler(Asker)
        .handler(Counter { topic: "com.test.approver", calls: Arc::clone(&approver_calls) })
        .build()
        .unwrap();
    let ask = event(CLIENT, "com.test.ask", "s", json!({ "reply": CLIENT }));
    let answer = within(broker.resolve(ask.clone())).await.unwrap();
    assert_eq!(answer, None);
    let kept = broker.take_domained();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].domain, "human.review");
    assert_eq!(kept[0].event.parentid(), Some(ask.id()));
    assert_eq!(approver_calls.load(Ordering::SeqCst), 0);
    assert!(broker.take_domained().is_empty(), "taken");
    assert!(broker.take_dead_letters().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Shutdown and lifetime

/// Re-sends itself `data.left` more times.
struct Countdown;

impl EventHandler for Countdown {
    fn source(&self) -> &str {
        "com.test.countdown"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        tokio::task::yield_now().await;
        let left = int(event, "left");
        Ok(if left == 0 {
            vec![]
        } else {
            vec![answer(event, self.source(), self.source(), self.source(), json!({ "left": left - 1 }))]
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_drains_everything_then_refuses() {
    let broker = Broker::builder().handler(Countdown).workers(3).build().unwrap();
    for s in 0..20 {
        broker.publish(event(CLIENT, "com.test.countdown", &format!("s{s}"), json!({ "left": 5 }))).unwrap();
    }
    within(broker.shutdown()).await;
    let stats = broker.stats();
    assert_eq!((stats.delivered, stats.queued, stats.in_flight), (120, 0, 0), "all 20 × 6 handled");
    assert!(broker.is_closed() && broker.handle().is_closed());
    let again = event(CLIENT, "com.test.countdown", "late", json!({ "left": 0 }));
    assert_eq!(broker.publish(again.clone()), Err(BrokerError::Closed));
    assert_eq!(broker.publish_wait(again.clone()).await, Err(BrokerError::Closed));
    assert_eq!(broker.resolve(again).await, Err(BrokerError::Closed));
    within(broker.shutdown()).await; // idempotent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiting_publisher_is_released_by_shutdown() {
    let (gate, mut started, permits) = gate();
    let broker = Broker::builder().handler(gate).workers(1).capacity(1).build().unwrap();
    broker.publish(event(CLIENT, "com.test.gate", "a", json!({}))).unwrap();
    within(started.recv()).await.unwrap();
    broker.publish(event(CLIENT, "com.test.gate", "b", json!({}))).unwrap();
    let waiting = tokio::spawn({
        let handle = broker.handle();
        async move { handle.publish_wait(event(CLIENT, "com.test.gate", "c", json!({}))).await }
    });
    tokio::task::yield_now().await;
    let shutdown = tokio::spawn({
        let broker = broker.clone();
        async move { broker.shutdown().await }
    });
    assert_eq!(within(waiting).await.unwrap(), Err(BrokerError::Closed));
    permits.add_permits(2);
    within(shutdown).await.unwrap();
    assert_eq!(broker.stats().delivered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_the_broker_stops_its_workers() {
    /// Signals when the broker lets go of it (its workers have stopped, and no handle is left).
    struct Watched(Mutex<Option<oneshot::Sender<()>>>);
    impl EventHandler for Watched {
        fn source(&self) -> &str {
            "com.test.watched"
        }
        async fn execute(&self, _: &Event) -> Result<Vec<Event>, Violation> {
            Ok(vec![])
        }
    }
    impl Drop for Watched {
        fn drop(&mut self) {
            if let Some(tx) = self.0.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    }
    let (tx, rx) = oneshot::channel();
    let broker = Broker::builder().handler(Watched(Mutex::new(Some(tx)))).workers(4).build().unwrap();
    let handle = broker.handle();
    broker.publish(event(CLIENT, "com.test.watched", "s", json!({}))).unwrap();
    drop(broker);
    // Closed at once; a handle stays usable for inspection.
    assert_eq!(handle.publish(event(CLIENT, "com.test.watched", "s", json!({}))), Err(BrokerError::Closed));
    drop(handle);
    // The handler is released once the workers have drained the queue and returned.
    within(rx).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Configuration, log and counters

#[tokio::test]
async fn configuration_errors_are_typed() {
    let err = Broker::builder().handler(Echo).handler(Echo).build().unwrap_err();
    assert_eq!(err, BrokerError::DuplicateHandler { topic: "com.test.echo".to_owned() });
    assert!(matches!(Broker::builder().workers(0).build(), Err(BrokerError::InvalidConfig { .. })));
    assert!(matches!(Broker::builder().capacity(0).build(), Err(BrokerError::InvalidConfig { .. })));
    let broker = Broker::builder().handler(Echo).handler(FanOut).build().unwrap();
    let mut topics: Vec<_> = broker.topics().collect();
    topics.sort_unstable();
    assert_eq!(topics, ["com.test.echo", "com.test.fanout"]);
    assert_eq!(broker.capacity(), DEFAULT_CAPACITY);
    assert!(broker.workers() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_can_be_registered_as_trait_objects() {
    use orchestrator::handler::DynEventHandler;
    let echo: Arc<dyn DynEventHandler> = Arc::new(Echo);
    let broker = Broker::builder().shared_handler(echo).build().unwrap();
    let err = Broker::builder().shared_handler(Arc::new(Echo)).handler(Echo).build().unwrap_err();
    assert_eq!(err, BrokerError::DuplicateHandler { topic: "com.test.echo".to_owned() });
    let done =
        within(broker.resolve(event(CLIENT, "com.test.echo", "s", json!({ "reply": CLIENT, "k": 1 }))));
    assert_eq!(int(&done.await.unwrap().unwrap(), "k"), 1);
}

#[test]
fn building_outside_a_runtime_is_an_error() {
    assert_eq!(Broker::builder().handler(Echo).build().unwrap_err(), BrokerError::NoRuntime);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_log_records_every_published_event_in_order() {
    let broker = chain_broker(1).log(true).build().unwrap();
    let start = chain_start(CLIENT, "s", 0);
    within(broker.resolve(start.clone())).await.unwrap().unwrap();
    let log = broker.take_log();
    let route: Vec<_> = log.iter().map(|e| (e.source(), e.to().unwrap())).collect();
    assert_eq!(
        route,
        [
            (CLIENT, "com.test.a"),
            ("com.test.a", "com.test.b"),
            ("com.test.b", "com.test.c"),
            ("com.test.c", CLIENT),
        ]
    );
    assert_eq!(log[0], start);
    for pair in log.windows(2) {
        assert_eq!(pair[1].parentid(), Some(pair[0].id()));
    }
    assert!(broker.take_log().is_empty(), "taken");

    let quiet = chain_broker(1).build().unwrap();
    within(quiet.resolve(chain_start(CLIENT, "s", 0))).await.unwrap().unwrap();
    assert!(quiet.take_log().is_empty(), "off by default");
}

// ---------------------------------------------------------------------------------------------
// Backpressure without loss, retries, bounded dead letters

/// Roots (`data.depth` 1) wait for the gate, then fan out into five children (depth 0) on their
/// own subjects; each child answers `data.reply`.
struct Burst {
    open: Arc<Semaphore>,
}

impl EventHandler for Burst {
    fn source(&self) -> &str {
        "com.test.burst"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let reply = text(event, "reply");
        if int(event, "depth") == 0 {
            return Ok(vec![answer(event, self.source(), reply, "evt.test.leaf", json!({}))]);
        }
        drop(self.open.acquire().await.unwrap());
        Ok((0..5)
            .map(|i| {
                Event::builder()
                    .source(self.source())
                    .r#type(self.source())
                    .subject(format!("{}.{i}", event.subject()))
                    .parentid(event.id())
                    .data_json(json!({ "depth": 0, "reply": reply }))
                    .build()
                    .unwrap()
            })
            .collect())
    }
}

/// The loss the issue measured: with the default capacity (1000), handlers whose products do
/// not fit in the queue used to turn them into dead letters. 1,200 roots × (1 + 5 + 5) = 13,200
/// events (more roots with more than 100 workers); the queue is full when the roots
/// fan out, so every product goes over capacity.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fan_out_beyond_the_default_capacity_loses_nothing() {
    let open = Arc::new(Semaphore::new(0));
    let leaves = Arc::new(AtomicUsize::new(0));
    let broker = Broker::builder()
        .handler(Burst { open: Arc::clone(&open) })
        .handler(Counter { topic: "com.test.sink", calls: Arc::clone(&leaves) })
        .build()
        .unwrap();
    assert_eq!(broker.capacity(), DEFAULT_CAPACITY);
    // More than the queue and the workers at the gate hold: 1,200 with up to 100 workers.
    let roots = (DEFAULT_CAPACITY + 200).max(DEFAULT_CAPACITY + broker.workers() + 100);
    let root = |n: usize| {
        event(CLIENT, "com.test.burst", &format!("root{n}"), json!({ "depth": 1, "reply": "com.test.sink" }))
    };
    let publisher = tokio::spawn({
        let broker = broker.clone();
        async move {
            for n in 0..roots {
                broker.publish_wait(root(n)).await.unwrap();
            }
        }
    });
    // Every worker holds a root at the gate and the queue is full: the publisher waits.
    within(async {
        while broker.stats().queued < DEFAULT_CAPACITY {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert_eq!(broker.stats().queued, DEFAULT_CAPACITY, "publishers wait at capacity");
    open.add_permits(broker.workers());
    within(publisher).await.unwrap();
    within(broker.wait_idle()).await;
    let stats = broker.stats();
    assert!(broker.take_dead_letters().is_empty(), "no product was dropped");
    assert_eq!(leaves.load(Ordering::SeqCst), roots * 5, "every chain completed");
    assert_eq!((stats.dead_lettered, stats.rejected, stats.retried), (0, 0, 0));
    assert_eq!(stats.published, (roots * 11) as u64);
    assert_eq!(stats.delivered, (roots * 11) as u64);
}

/// Fails with a lock denial on the first `failures` attempts of each event, then answers
/// `data.reply`; records `(n, attempt, ok)` in handling order.
struct Flaky {
    failures: usize,
    attempts: Mutex<HashMap<String, usize>>,
    trace: Attempts,
}

impl EventHandler for Flaky {
    fn source(&self) -> &str {
        "com.test.flaky"
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap();
            let attempt = attempts.entry(event.id().to_owned()).or_default();
            *attempt += 1;
            *attempt
        };
        let ok = attempt > self.failures;
        self.trace.lock().unwrap().push((int(event, "n"), attempt, ok));
        if !ok {
            return Err(Violation::transaction(
                TransactionCause::LockUnacquired,
                "lock held by another worker",
            ));
        }
        Ok(vec![answer(event, self.source(), text(event, "reply"), "evt.test.flaky.done", json!({}))])
    }
}

/// Each attempt: the event's `n`, the attempt number, whether it succeeded.
type Attempts = Arc<Mutex<Vec<(i64, usize, bool)>>>;

fn flaky(failures: usize) -> (Flaky, Attempts) {
    let trace = Arc::new(Mutex::new(Vec::new()));
    (Flaky { failures, attempts: Mutex::default(), trace: Arc::clone(&trace) }, trace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_denial_is_retried_in_order_until_it_succeeds() {
    let (handler, trace) = flaky(3);
    let broker = Broker::builder().handler(handler).workers(4).build().unwrap();
    let ask = |n: i64| event(CLIENT, "com.test.flaky", "s", json!({ "n": n, "reply": CLIENT }));
    broker.publish(ask(1)).unwrap();
    let done = within(broker.resolve(ask(2))).await.unwrap().expect("the answer");
    assert_eq!(done.r#type(), "evt.test.flaky.done");
    assert!(broker.take_dead_letters().is_empty(), "transient failures are not dead letters");
    let trace = trace.lock().unwrap().clone();
    assert_eq!(
        trace,
        [
            (1, 1, false),
            (1, 2, false),
            (1, 3, false),
            (1, 4, true),
            (2, 1, false),
            (2, 2, false),
            (2, 3, false),
            (2, 4, true)
        ],
        "each event is retried before the next event of its subject runs"
    );
    let stats = broker.stats();
    assert_eq!((stats.delivered, stats.retried, stats.dead_lettered, stats.delayed), (8, 6, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retries_exhausted_become_a_dead_letter() {
    let (handler, trace) = flaky(3);
    let policy = RetryPolicy { max_attempts: 2, initial: Duration::from_millis(1), ..RetryPolicy::default() };
    let broker = Broker::builder().handler(handler).retry(policy).workers(2).build().unwrap();
    let ask = event(CLIENT, "com.test.flaky", "s", json!({ "n": 1, "reply": CLIENT }));
    assert_eq!(within(broker.resolve(ask.clone())).await.unwrap(), None);
    let letters = broker.take_dead_letters();
    assert_eq!(
        letters,
        vec![DeadLetter {
            event: ask,
            reason: DeadLetterReason::RetriesExhausted {
                attempts: 2,
                violation: Violation::transaction(
                    TransactionCause::LockUnacquired,
                    "lock held by another worker"
                ),
            },
        }]
    );
    assert!(
        letters[0].reason.to_string().starts_with("the handler still failed after 2 attempts"),
        "{}",
        letters[0].reason
    );
    assert_eq!(trace.lock().unwrap().len(), 2);
    let stats = broker.stats();
    assert_eq!((stats.delivered, stats.retried, stats.dead_lettered), (2, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dead_letter_buffer_is_bounded() {
    let broker = Broker::builder().handler(Echo).workers(1).dead_letter_capacity(10).build().unwrap();
    let lost: Vec<_> = (0..50).map(|n| event(CLIENT, "com.test.nowhere", "s", json!({ "n": n }))).collect();
    for event in &lost {
        broker.publish_wait(event.clone()).await.unwrap();
    }
    within(broker.wait_idle()).await;
    let letters = broker.take_dead_letters();
    let kept: Vec<_> = letters.iter().map(|l| l.event.clone()).collect();
    assert_eq!(kept, lost[40..], "the last ten, oldest first");
    assert_eq!(broker.dead_letters_dropped(), 40);
    let stats = broker.stats();
    assert_eq!((stats.dead_lettered, stats.dead_letters_dropped), (50, 40));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_publish_timeout_bounds_the_wait() {
    let (gate, mut started, permits) = gate();
    let broker = Broker::builder()
        .handler(gate)
        .workers(1)
        .capacity(1)
        .publish_timeout(Some(Duration::from_millis(50)))
        .build()
        .unwrap();
    broker.publish(event(CLIENT, "com.test.gate", "a", json!({}))).unwrap();
    within(started.recv()).await.unwrap();
    broker.publish(event(CLIENT, "com.test.gate", "b", json!({}))).unwrap();
    let full = within(broker.publish_wait(event(CLIENT, "com.test.gate", "c", json!({})))).await;
    assert_eq!(full, Err(BrokerError::QueueFull { capacity: 1 }));
    permits.add_permits(2);
    within(broker.wait_idle()).await;
    assert_eq!((broker.stats().delivered, broker.stats().rejected), (2, 1));
}

// ---------------------------------------------------------------------------------------------
// The event size limit

/// An event built in code is held to the limit the parsers apply to bytes (1 MiB by default):
/// an 8.9 MB one is refused at publish with a typed error naming it, and nothing is queued;
/// a handler producing an event larger than the limit publishes none of its products and its
/// event is a dead letter saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_larger_than_the_limit_are_refused_where_they_enter() {
    let broker = Broker::builder().handler(Echo).workers(2).build().unwrap();
    let big = event(CLIENT, "com.test.echo", "s", json!({"reply": CLIENT, "blob": "x".repeat(8_900_000)}));
    for refused in [broker.publish(big.clone()), broker.publish_wait(big.clone()).await] {
        match refused {
            Err(BrokerError::EventTooLarge(e)) => {
                assert_eq!((e.id.as_str(), e.size, e.max), (big.id(), big.encoded_len(), 1024 * 1024));
                assert!(e.size > 8_900_000, "{e}");
            }
            other => panic!("expected EventTooLarge, got {other:?}"),
        }
    }
    within(broker.wait_idle()).await;
    assert_eq!(broker.stats().published, 0, "nothing was queued");

    // Under the limit in, over it out: the echo adds its own envelope around the same data.
    let limit = 2_000;
    let broker = Broker::builder().handler(Echo).workers(2).max_event_bytes(limit).build().unwrap();
    let reply = "com.test.nobody";
    let mut data = json!({"reply": reply, "blob": ""});
    let fits = |data: &Value| event(CLIENT, "com.test.echo", "s", data.clone()).encoded_len();
    data["blob"] = json!("x".repeat(limit - fits(&data)));
    let trigger = event(CLIENT, "com.test.echo", "s", data);
    assert_eq!(trigger.encoded_len(), limit);
    broker.publish(trigger.clone()).unwrap();
    within(broker.wait_idle()).await;
    let dead = broker.take_dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].event.id(), trigger.id(), "the event whose handler produced it");
    match &dead[0].reason {
        DeadLetterReason::EventTooLarge(e) => {
            assert_eq!((e.event_type.as_str(), e.max), ("evt.test.echo.done", limit));
            assert!(e.size > limit);
        }
        other => panic!("expected EventTooLarge, got {other:?}"),
    }
    assert_eq!(broker.stats().published, 1, "the echo published nothing");
    broker.shutdown().await;
}
