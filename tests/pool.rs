//! Worker pools on the in-process transport: slots, resizing, restarts, lifecycle events, the
//! task toolkit, poll failures and the graceful stop. Every test is bounded in time.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::runtime::pool::{
    Backoff, Consumer, ConsumerBuilder, ExitReason, FailureSettlement, LifecycleEvent, PollingConfig,
    PoolConfig, PoolError, TaskError, Toolkit, ToolkitError, WorkerId, handler_fn,
};
use orchestrator::runtime::{DeadLetterReason, Dispatcher, Heartbeat};
use orchestrator::transport::in_process::{InProcessDelivery, InProcessSubscription};
use orchestrator::transport::{
    Delivery, InProcessConfig, InProcessTransport, Subscription, Topics, Transport, TransportError,
};
use orchestrator::violation::Violation;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep, timeout};

const TOPIC: &str = "com.test.work";
const LIMIT: Duration = Duration::from_secs(30);
/// Lifecycle events kept for the tests' recorders: enough for every event of a test, so a
/// recorder starved of CPU (a loaded CI machine) never lags and misses some.
const EVENTS: usize = 1 << 16;

fn event(subject: &str) -> Event {
    Event::builder()
        .source("com.test.client")
        .r#type(TOPIC)
        .subject(subject)
        .data_json(json!({}))
        .build()
        .expect("a valid event")
}

fn events(n: usize) -> Vec<Event> {
    (0..n).map(|i| event(&format!("s{i}"))).collect()
}

fn in_process() -> Arc<InProcessTransport> {
    Arc::new(InProcessTransport::new(InProcessConfig::default()).expect("valid settings"))
}

/// Bounds a test.
async fn bounded<F: Future>(test: F) -> F::Output {
    timeout(LIMIT, test).await.expect("the test finished in time")
}

/// Every lifecycle event of a consumer, read from its channel when the log is looked at: what
/// was emitted before a look is in it (no recorder task that could lag behind).
struct Log {
    events: Mutex<broadcast::Receiver<LifecycleEvent>>,
    seen: Mutex<Vec<LifecycleEvent>>,
}

impl Log {
    /// The events so far, in the order they were emitted.
    fn lock(&self) -> std::sync::LockResult<std::sync::MutexGuard<'_, Vec<LifecycleEvent>>> {
        let mut seen = self.seen.lock();
        if let Ok(seen) = seen.as_mut() {
            let mut events = self.events.lock().expect("the channel");
            loop {
                match events.try_recv() {
                    Ok(event) => seen.push(event),
                    Err(broadcast::error::TryRecvError::Lagged(n)) => panic!("the log lagged by {n}"),
                    Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                        break;
                    }
                }
            }
        }
        seen
    }
}

/// Records every lifecycle event.
fn record(events: broadcast::Receiver<LifecycleEvent>) -> Arc<Log> {
    Arc::new(Log { events: Mutex::new(events), seen: Mutex::default() })
}

fn names(log: &Log, keep: impl Fn(&LifecycleEvent) -> bool) -> Vec<&'static str> {
    log.lock().expect("log").iter().filter(|e| keep(e)).map(LifecycleEvent::name).collect()
}

/// Waits until `f` holds, checking every 5 ms; fails, saying which wait, when it does not hold
/// within most of the test's bound.
#[track_caller]
fn eventually(mut f: impl FnMut() -> bool) -> impl Future<Output = ()> {
    let at = std::panic::Location::caller();
    async move {
        let deadline = Instant::now() + LIMIT - Duration::from_secs(5);
        while !f() {
            assert!(Instant::now() < deadline, "the condition waited for at {at} did not hold");
            sleep(Duration::from_millis(5)).await;
        }
    }
}

// ---- A transport that fails on demand and counts extensions. ----

#[derive(Default)]
struct Faults {
    /// Poll failures to return, in order, before polling normally again.
    polls: Mutex<VecDeque<bool>>,
    /// Every poll fails with this transience, forever.
    always: Mutex<Option<bool>>,
    extends: AtomicUsize,
    fail_extend: AtomicBool,
    /// Every subscription fails with this transience.
    subscribe: Mutex<Option<bool>>,
}

struct Faulty {
    inner: InProcessTransport,
    faults: Arc<Faults>,
}

struct FaultySubscription {
    inner: InProcessSubscription,
    faults: Arc<Faults>,
}

struct FaultyDelivery {
    inner: InProcessDelivery,
    faults: Arc<Faults>,
}

fn failure(transient: bool) -> TransportError {
    TransportError::Backend { transient, source: "the server went away".into() }
}

impl Transport for Faulty {
    type Subscription = FaultySubscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        self.inner.publish(events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<FaultySubscription, TransportError> {
        if let Some(transient) = *self.faults.subscribe.lock().expect("faults") {
            return Err(failure(transient));
        }
        Ok(FaultySubscription {
            inner: self.inner.subscribe(topics).await?,
            faults: Arc::clone(&self.faults),
        })
    }

    fn close(&self) {
        self.inner.close();
    }
}

impl Subscription for FaultySubscription {
    type Delivery = FaultyDelivery;

    async fn next(&mut self) -> Option<FaultyDelivery> {
        let inner = self.inner.next().await?;
        Some(FaultyDelivery { inner, faults: Arc::clone(&self.faults) })
    }

    async fn try_next(&mut self) -> Result<Option<FaultyDelivery>, TransportError> {
        if let Some(transient) = *self.faults.always.lock().expect("faults") {
            return Err(failure(transient));
        }
        let queued = self.faults.polls.lock().expect("faults").pop_front();
        if let Some(transient) = queued {
            return Err(failure(transient));
        }
        Ok(self.next().await)
    }
}

impl Delivery for FaultyDelivery {
    fn event(&self) -> &Event {
        self.inner.event()
    }
    fn attempt(&self) -> u32 {
        self.inner.attempt()
    }
    async fn ack(self, produced: Vec<Event>) -> Result<(), TransportError> {
        self.inner.ack(produced).await
    }
    async fn nack(self, delay: Duration) -> Result<(), TransportError> {
        self.inner.nack(delay).await
    }
    async fn extend(&self, by: Duration) -> Result<(), TransportError> {
        if self.faults.fail_extend.load(Ordering::SeqCst) {
            return Err(failure(true));
        }
        self.faults.extends.fetch_add(1, Ordering::SeqCst);
        self.inner.extend(by).await
    }
    async fn terminate(self, reason: String) -> Result<(), TransportError> {
        self.inner.terminate(reason).await
    }
}

fn faulty() -> (Arc<Faulty>, InProcessTransport, Arc<Faults>) {
    let inner = InProcessTransport::new(InProcessConfig::default()).expect("valid settings");
    let faults = Arc::new(Faults::default());
    (Arc::new(Faulty { inner: inner.clone(), faults: Arc::clone(&faults) }), inner, faults)
}

fn quick_polling(max_consecutive_failures: u32) -> PollingConfig {
    PollingConfig {
        backoff: Backoff {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(20),
            multiplier: 2.0,
        },
        max_consecutive_failures,
    }
}

async fn succeed(_: Event, kit: Toolkit) {
    kit.success(Vec::new()).expect("the first response");
}

// ---- Lifecycle events. ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_reports_received_start_success_done_and_the_worker_its_whole_life() {
    bounded(async {
        let transport = in_process();
        let builder = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC), handler_fn(succeed));
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        let one = event("s1");
        transport.publish(vec![one.clone()]).await.expect("published");
        transport.wait_idle().await;
        consumer.stop().await;
        sleep(Duration::from_millis(20)).await;
        let of_task = names(&log, |e| e.task().is_some_and(|t| t.event_id == one.id()));
        assert_eq!(of_task, ["task:received", "task:start", "task:success", "task:done"]);
        let of_worker = names(&log, |e| e.name().starts_with("worker:"));
        assert_eq!(of_worker, ["worker:starting", "worker:running", "worker:stopping", "worker:stopped"]);
        let stopped = log.lock().expect("log").iter().find_map(|e| match e {
            LifecycleEvent::WorkerStopped { reason, .. } => Some(reason.clone()),
            _ => None,
        });
        assert_eq!(stopped, Some(ExitReason::Stopped));
        let polls = names(&log, |e| e.name().starts_with("polling:"));
        assert_eq!(&polls[..2], ["polling:starting", "polling:success"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_poll_error_stops_the_worker_with_its_reason_and_stop_does_not_hang() {
    bounded(async {
        let (transport, _, faults) = faulty();
        *faults.always.lock().expect("faults") = Some(false);
        let builder = ConsumerBuilder::on(transport)
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).restart_interval(Duration::from_secs(3600)), handler_fn(succeed));
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started: the worker ran, then stopped");
        let pool = consumer.pool(TOPIC).expect("the pool");
        eventually(|| pool.state().awaiting_restart == 1).await;
        let of_worker = names(&log, |e| e.name().starts_with("worker:") || e.name() == "polling:error");
        assert_eq!(
            of_worker,
            [
                "worker:starting",
                "worker:running",
                "polling:error",
                "worker:error",
                "worker:stopping",
                "worker:stopped"
            ]
        );
        let reasons: Vec<_> = log
            .lock()
            .expect("log")
            .iter()
            .filter_map(|e| match e {
                LifecycleEvent::WorkerStopped { reason, .. } => Some(reason.clone()),
                LifecycleEvent::PollingError { error, attempts, .. } => {
                    assert!(!error.retryable);
                    assert_eq!(*attempts, 1);
                    None
                }
                _ => None,
            })
            .collect();
        assert!(matches!(&reasons[..], [ExitReason::FatalPoll(e)] if !e.retryable), "{reasons:?}");
        // A stop after the failure returns at once, and does not rewrite the reason.
        consumer.stop().await;
        assert!(pool.state().stopped);
        assert_eq!(names(&log, |e| e.name() == "worker:stopped").len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_whose_workers_cannot_subscribe_does_not_start() {
    bounded(async {
        for (transient, expected) in [(false, "fatal"), (true, "threshold")] {
            let (transport, _, faults) = faulty();
            *faults.subscribe.lock().expect("faults") = Some(transient);
            let builder = ConsumerBuilder::on(transport)
                .events_capacity(EVENTS)
                .pool(PoolConfig::new(TOPIC).polling(quick_polling(2)), handler_fn(succeed));
            let log = record(builder.subscribe());
            let refused = builder.start().await.expect_err("no subscription, no start");
            match (&refused, expected) {
                (PoolError::NotStarted { reason: ExitReason::FatalPoll(e), .. }, "fatal") => {
                    assert!(!e.retryable);
                }
                (
                    PoolError::NotStarted { reason: ExitReason::PollFailures { failures: 2, .. }, .. },
                    "threshold",
                ) => {}
                _ => panic!("{expected}: {refused:?}"),
            }
            sleep(Duration::from_millis(20)).await;
            let of_worker = names(&log, |e| e.name().starts_with("worker:"));
            assert_eq!(of_worker, ["worker:starting", "worker:error", "worker:stopping", "worker:stopped"]);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consecutive_failure_threshold_stops_the_worker_and_it_is_restarted_after_the_interval() {
    bounded(async {
        let (transport, inner, faults) = faulty();
        // Three transient failures in a row: the threshold (3, not the default 5) is reached.
        faults.polls.lock().expect("faults").extend([true, true, true]);
        let interval = Duration::from_millis(300);
        let builder = ConsumerBuilder::on(transport).events_capacity(EVENTS).pool(
            PoolConfig::new(TOPIC).polling(quick_polling(3)).restart_interval(interval),
            handler_fn(succeed),
        );
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        let pool = consumer.pool(TOPIC).expect("the pool");
        let failed_at = Instant::now();
        eventually(|| pool.state().restarts == 1 && pool.workers() == 1).await;
        let waited = failed_at.elapsed();
        let attempts: Vec<u32> = log
            .lock()
            .expect("log")
            .iter()
            .filter_map(|e| match e {
                LifecycleEvent::PollingError { attempts, .. } => Some(*attempts),
                _ => None,
            })
            .collect();
        assert_eq!(attempts, [1, 2, 3]);
        let first = WorkerId { pool: TOPIC.into(), n: 1 };
        let exit = log.lock().expect("log").iter().find_map(|e| match e {
            LifecycleEvent::WorkerStopped { worker, reason } if *worker == first => Some(reason.clone()),
            _ => None,
        });
        assert!(matches!(exit, Some(ExitReason::PollFailures { failures: 3, .. })), "{exit:?}");
        // The replacement came after the restart interval (measured from after the failures).
        assert!(waited + Duration::from_millis(100) >= interval, "restarted after {waited:?}");
        // And it works.
        inner.publish(events(5)).await.expect("published");
        // The transport counts an ack just after it wakes `wait_idle`.
        eventually(|| inner.stats().acked == 5).await;
        consumer.stop().await;
    })
    .await;
}

// ---- Slots and resizing. ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_never_holds_more_deliveries_than_it_has_slots() {
    bounded(async {
        let transport = in_process();
        let running: Arc<Mutex<HashMap<WorkerId, usize>>> = Arc::default();
        let most = Arc::new(AtomicUsize::new(0));
        let (r, m) = (Arc::clone(&running), Arc::clone(&most));
        let handler = handler_fn(move |_: Event, kit: Toolkit| {
            let (running, most) = (Arc::clone(&r), Arc::clone(&m));
            async move {
                let now = {
                    let mut running = running.lock().expect("running");
                    let count = running.entry(kit.worker().clone()).or_default();
                    *count += 1;
                    *count
                };
                most.fetch_max(now, Ordering::SeqCst);
                sleep(Duration::from_millis(10)).await;
                *running.lock().expect("running").get_mut(kit.worker()).expect("counted") -= 1;
                kit.success(Vec::new()).expect("the first response");
            }
        });
        let consumer = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).workers(2).slots(3), handler)
            .start()
            .await
            .expect("started");
        transport.publish(events(120)).await.expect("published");
        let mut claimed = 0;
        while transport.stats().acked < 120 {
            // Deliveries handed out and not settled: never more than 2 workers × 3 slots.
            claimed = claimed.max(transport.stats().in_flight);
            sleep(Duration::from_millis(1)).await;
        }
        assert!(claimed <= 6, "{claimed} deliveries claimed at once");
        assert!(claimed >= 2, "the slots were used ({claimed})");
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} tasks at once in one worker");
        consumer.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resizing_up_and_down_while_tasks_run_loses_nothing_and_never_jams() {
    bounded(async {
        let transport = in_process();
        let handled: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let h = Arc::clone(&handled);
        let handler = handler_fn(move |event: Event, kit: Toolkit| {
            let handled = Arc::clone(&h);
            async move {
                sleep(Duration::from_millis(3)).await;
                *handled.lock().expect("handled").entry(event.id().to_owned()).or_default() += 1;
                kit.success(Vec::new()).expect("the first response");
            }
        });
        let builder = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC), handler);
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        let pool = consumer.pool(TOPIC).expect("the pool").clone();
        let published = events(300);
        transport.publish(published.clone()).await.expect("published");
        for size in [5, 2, 4, 4, 0, 3, 3, 1, 6] {
            pool.resize(size).await.expect("resized");
            assert_eq!(pool.workers(), size, "the count after resizing to {size}");
            sleep(Duration::from_millis(15)).await;
        }
        eventually(|| transport.stats().acked == 300).await;
        eventually(|| pool.state().retiring == 0).await;
        assert_eq!(pool.workers(), 6);
        let handled = handled.lock().expect("handled").clone();
        assert_eq!(handled.len(), 300, "every event handled");
        assert!(handled.values().all(|n| *n == 1), "each once: retired workers finished their tasks");
        assert_eq!(transport.stats().acked, 300);
        // Every worker started, minus those still running, has stopped.
        let count = |name: &str| names(&log, |e| e.name() == name).len();
        eventually(|| count("worker:starting") - count("worker:stopped") == 6).await;
        consumer.stop().await;
        assert!(pool.resize(2).await.is_err(), "a stopped pool refuses to grow");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_one_pool_waits_for_its_own_workers_only() {
    bounded(async {
        let transport = in_process();
        let consumer = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new("com.test.a").workers(2), handler_fn(succeed))
            .pool(PoolConfig::new("com.test.b").workers(2), handler_fn(succeed))
            .start()
            .await
            .expect("started");
        let (a, b) = (consumer.pool("com.test.a").expect("a"), consumer.pool("com.test.b").expect("b"));
        a.stop().await;
        assert!(a.state().stopped);
        assert_eq!(b.workers(), 2);
        assert!(!b.state().stopped, "b runs on");
        consumer.stop().await;
        assert!(b.state().stopped);
    })
    .await;
}

// ---- The toolkit. ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_response_is_refused_and_the_first_stands() {
    bounded(async {
        let transport = in_process();
        let seconds: Arc<Mutex<Vec<Result<(), ToolkitError>>>> = Arc::default();
        let s = Arc::clone(&seconds);
        let handler = handler_fn(move |_: Event, kit: Toolkit| {
            let seconds = Arc::clone(&s);
            async move {
                // Two responses at once from two threads: exactly one is recorded.
                let (a, b) = (kit.clone(), kit.clone());
                let one = std::thread::spawn(move || a.success(Vec::new()));
                let two = std::thread::spawn(move || b.failure(Violation::execution("late")));
                let results = [one.join().expect("thread"), two.join().expect("thread")];
                assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
                seconds.lock().expect("seconds").push(kit.success(Vec::new()));
            }
        });
        let builder = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC), handler);
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        transport.publish(events(20)).await.expect("published");
        transport.wait_idle().await;
        consumer.stop().await;
        let seconds = seconds.lock().expect("seconds").clone();
        assert_eq!(seconds.len(), 20);
        assert!(seconds.iter().all(|r| *r == Err(ToolkitError::AlreadyResponded)));
        eventually(|| transport.stats().acked + transport.stats().terminated == 20).await;
        let stats = transport.stats();
        assert_eq!(stats.acked + stats.terminated, 20, "each settled once, by its first response");
        let refused = log
            .lock()
            .expect("log")
            .iter()
            .filter(|e| matches!(e, LifecycleEvent::TaskErrored { error: TaskError::SecondResponse, .. }))
            .count();
        assert_eq!(refused, 40, "one concurrent and one late second response per task");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_response_a_panic_or_a_missed_deadline_is_an_explicit_failure_never_stranded() {
    bounded(async {
        let transport = in_process();
        let handler = handler_fn(|event: Event, kit: Toolkit| async move {
            match event.subject() {
                "silent" => {}
                "panics" => panic!("the handler broke"),
                "slow" => {
                    assert!(kit.deadline().is_some());
                    sleep(Duration::from_secs(3600)).await;
                }
                _ => kit.failure(Violation::execution("refused")).expect("the first response"),
            }
        });
        let dispatcher = Arc::new(Dispatcher::new(Vec::new()).expect("no handler"));
        let builder = ConsumerBuilder::new(Arc::clone(&transport), Arc::clone(&dispatcher), ())
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).slots(4).task_timeout(Some(Duration::from_millis(100))), handler);
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        let all = ["silent", "panics", "slow", "fails"].map(event);
        transport.publish(all.to_vec()).await.expect("published");
        // Nothing is stranded: the transport goes idle with every delivery settled.
        transport.wait_idle().await;
        consumer.stop().await;
        eventually(|| transport.stats().terminated == 4).await;
        let mut reasons: Vec<String> = dispatcher
            .dead_letters()
            .take()
            .into_iter()
            .map(|d| match d.reason {
                DeadLetterReason::Panicked { message } => format!("panic: {message}"),
                other => other.to_string(),
            })
            .collect();
        reasons.sort();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons.iter().any(|r| r == "panic: the handler broke"), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("without responding")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("deadline")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("refused")), "{reasons:?}");
        let errors: Vec<TaskError> = log
            .lock()
            .expect("log")
            .iter()
            .filter_map(|e| match e {
                LifecycleEvent::TaskErrored { error, .. } => Some(error.clone()),
                _ => None,
            })
            .collect();
        assert!(errors.contains(&TaskError::NoResponse));
        assert!(errors.contains(&TaskError::DeadlineExceeded(Duration::from_millis(100))));
        assert!(errors.iter().any(|e| matches!(e, TaskError::Panicked(m) if m == "the handler broke")));
        let failures = log
            .lock()
            .expect("log")
            .iter()
            .filter(|e| {
                matches!(e, LifecycleEvent::TaskFailure { settlement: FailureSettlement::DeadLettered, .. })
            })
            .count();
        assert_eq!(failures, 4);
        assert_eq!(names(&log, |e| e.name() == "task:done").len(), 4);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_extend_the_delivery_automatically_and_on_demand() {
    bounded(async {
        let (transport, inner, faults) = faulty();
        let handler = handler_fn(|_: Event, kit: Toolkit| async move {
            kit.heartbeat().await.expect("extended");
            sleep(Duration::from_millis(250)).await;
            kit.success(Vec::new()).expect("the first response");
        });
        let builder = ConsumerBuilder::on(transport).events_capacity(EVENTS).pool(
            PoolConfig::new(TOPIC).heartbeat(Some(Heartbeat::from_lease(Duration::from_millis(150)))),
            handler,
        );
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        inner.publish(vec![event("s1")]).await.expect("published");
        inner.wait_idle().await;
        consumer.stop().await;
        eventually(|| inner.stats().acked == 1).await;
        let extends = faults.extends.load(Ordering::SeqCst);
        // One on demand, then one every 50 ms for 250 ms (about 4; timers may slip).
        assert!((3..=7).contains(&extends), "{extends} extensions");
        assert_eq!(names(&log, |e| e.name() == "task:heartbeat").len(), extends);
        assert_eq!(inner.stats().acked, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_fires_the_token_and_a_handler_that_gives_up_hands_the_task_back() {
    bounded(async {
        let (transport, inner, faults) = faulty();
        faults.fail_extend.store(true, Ordering::SeqCst);
        let handler = handler_fn(|_: Event, kit: Toolkit| async move {
            assert!(matches!(kit.heartbeat().await, Err(ToolkitError::Heartbeat(_))));
            assert!(kit.is_cancelled(), "the lease may be lost: the token fired");
            // Gives up without responding: handed back, not failed.
        });
        let builder =
            ConsumerBuilder::on(transport).events_capacity(EVENTS).pool(PoolConfig::new(TOPIC), handler);
        let log = record(builder.subscribe());
        let consumer = builder.start().await.expect("started");
        inner.publish(vec![event("s1")]).await.expect("published");
        eventually(|| inner.stats().nacked >= 1).await;
        consumer.stop().await;
        assert_eq!(inner.stats().terminated, 0);
        let errors = names(&log, |e| e.name() == "task:errored");
        assert!(errors.len() >= 2, "{errors:?}");
    })
    .await;
}

// ---- Stopping. ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_fires_the_cancellation_token_of_running_tasks() {
    bounded(async {
        let transport = in_process();
        let started = Arc::new(AtomicUsize::new(0));
        let s = Arc::clone(&started);
        let handler = handler_fn(move |_: Event, kit: Toolkit| {
            let started = Arc::clone(&s);
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                kit.cancellation().cancelled().await;
                // Wound down cleanly within the grace period.
                kit.success(Vec::new()).expect("the first response");
            }
        });
        let consumer = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).slots(2), handler)
            .start()
            .await
            .expect("started");
        transport.publish(events(2)).await.expect("published");
        eventually(|| started.load(Ordering::SeqCst) == 2).await;
        let stopping = Instant::now();
        consumer.stop().await;
        assert!(stopping.elapsed() < Duration::from_secs(5), "no wait for the grace period");
        assert_eq!(transport.stats().acked, 2);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_stop_lets_short_tasks_finish_and_hands_long_ones_back_losing_nothing() {
    bounded(async {
        let transport = in_process();
        let handled: Arc<Mutex<Vec<String>>> = Arc::default();
        let h = Arc::clone(&handled);
        // Ignores its cancellation token: short tasks finish, long ones outlast the grace.
        let handler = handler_fn(move |event: Event, kit: Toolkit| {
            let handled = Arc::clone(&h);
            async move {
                let long = event.subject().starts_with("long");
                sleep(Duration::from_millis(if long { 60_000 } else { 100 })).await;
                handled.lock().expect("handled").push(event.id().to_owned());
                kit.success(Vec::new()).expect("the first response");
            }
        });
        let consumer: Consumer = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).slots(4).grace(Duration::from_millis(400)), handler)
            .start()
            .await
            .expect("started");
        let all = ["short1", "short2", "long1", "long2"].map(event);
        transport.publish(all.to_vec()).await.expect("published");
        eventually(|| transport.stats().in_flight == 4).await;
        let stopping = Instant::now();
        consumer.stop().await;
        let took = stopping.elapsed();
        assert!(took >= Duration::from_millis(350) && took < Duration::from_secs(5), "{took:?}");
        assert_eq!(handled.lock().expect("handled").len(), 2, "the short ones finished");
        let stats = transport.stats();
        assert_eq!((stats.acked, stats.nacked), (2, 2), "the long ones were handed back");
        // Handed back, they are delivered again: nothing was lost.
        let retried: Arc<Mutex<HashSet<String>>> = Arc::default();
        let r = Arc::clone(&retried);
        let again = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(
                PoolConfig::new(TOPIC).slots(4),
                handler_fn(move |event: Event, kit: Toolkit| {
                    let retried = Arc::clone(&r);
                    async move {
                        assert_eq!(kit.task().attempt, 2);
                        retried.lock().expect("retried").insert(event.subject().to_owned());
                        kit.success(Vec::new()).expect("the first response");
                    }
                }),
            )
            .start()
            .await
            .expect("started");
        eventually(|| transport.stats().acked == 4).await;
        again.stop().await;
        let retried = retried.lock().expect("retried");
        assert_eq!(*retried, HashSet::from(["long1".to_owned(), "long2".to_owned()]));
        assert_eq!(transport.stats().acked, 4);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_a_waiting_poll_gets_while_stopping_is_handed_back_not_lost() {
    bounded(async {
        let transport = in_process();
        let consumer = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC).poll_grace(Duration::from_millis(500)), handler_fn(succeed))
            .start()
            .await
            .expect("started");
        // The idle worker waits in its poll; the stop lets that poll return for 500 ms.
        sleep(Duration::from_millis(20)).await;
        let stopping = tokio::spawn(async move { consumer.stop().await });
        sleep(Duration::from_millis(100)).await;
        transport.publish(vec![event("late")]).await.expect("published");
        stopping.await.expect("stopped");
        let stats = transport.stats();
        assert_eq!((stats.acked, stats.nacked), (0, 1), "claimed by the stopping worker, handed back");
        // Still there for the next consumer.
        let again = ConsumerBuilder::on(Arc::clone(&transport))
            .events_capacity(EVENTS)
            .pool(PoolConfig::new(TOPIC), handler_fn(succeed))
            .start()
            .await
            .expect("started");
        eventually(|| transport.stats().acked == 1).await;
        again.stop().await;
    })
    .await;
}
