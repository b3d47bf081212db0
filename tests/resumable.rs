//! The resumable orchestrator (`orchestrator::orchestration::resumable`, Arvo's `ArvoResumable`):
//! sequential chains, fan-out/fan-in, idempotency (Arvo's bug 8 fixed), validation, the failure
//! latch, concurrency and a thousand interleaved workflows through the broker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::broker::Broker;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, InMemoryConfig, Memory, Retention, Stored};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::orchestration::resumable::{
    Request, Resumable, ResumableInput, ResumableOutput, ResumableState, ResumableStatus,
};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, MulV1, Operands, Product, Sum, services,
};
use serde_json::json;

type Mem = InMemory<WorkflowRecord>;

const CLIENT: &str = "com.test.client";
const AVG: &str = "arvo.orc.calc.average";

fn client() -> EventBuilder {
    Event::builder().source(CLIENT)
}

fn fast_memory() -> Mem {
    InMemory::new(InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() })
}

fn average_init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new().init(AverageInput { values }, client()).unwrap()
}

async fn one<H: EventHandler>(handler: &H, event: &Event) -> Event {
    let mut out = handler.execute(event).await.unwrap();
    assert_eq!(out.len(), 1, "expected one event, got {out:?}");
    out.remove(0)
}

async fn state(memory: &Mem, subject: &str) -> (ResumableState, u64) {
    let Stored { record, version } = memory.read(subject).await.unwrap().expect("a record");
    (ResumableState::from_record(&record).unwrap(), version)
}

/// Executes `event`, retrying while the lock is held by someone else.
async fn execute_retrying<H: EventHandler>(handler: &H, event: &Event) -> Vec<Event> {
    loop {
        match handler.execute(event).await {
            Err(v) if v.transaction_cause() == Some(TransactionCause::LockUnacquired) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            other => return other.unwrap(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resumables

/// Context of the sequential resumable: how many values.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SeqCtx {
    n: f64,
}

/// add(values[0], values[1]) → mul(sum, 1/n) → done.
fn sequential(memory: Mem, calls: Arc<AtomicUsize>) -> Resumable<Mem> {
    Resumable::builder(memory)
        .service::<AddV1>()
        .service::<MulV1>()
        .version(move |input: ResumableInput<AverageV1, SeqCtx>| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if let Some(init) = input.init {
                    let n = init.values.len() as f64;
                    let (a, b) = (init.values[0], init.values.get(1).copied().unwrap_or(0.0));
                    return Ok(ResumableOutput::wait()
                        .context(SeqCtx { n })
                        .request(Request::new::<AddV1>(Operands { a, b })));
                }
                let ctx = input.context.clone().ok_or("no context")?;
                let service = input.service().ok_or("no service event")?;
                if service.r#type() == "evt.calc.add.success" {
                    let sums = input.collected::<AddV1, Sum>()?;
                    let [sum] = sums.as_slice() else { return Err("one sum".into()) };
                    return Ok(ResumableOutput::wait()
                        .request(Request::new::<MulV1>(Operands { a: sum.sum, b: 1.0 / ctx.n })));
                }
                let products = input.collected::<MulV1, Product>()?;
                let [product] = products.as_slice() else {
                    return Err("one product".into());
                };
                Ok(ResumableOutput::complete(AverageOutput { average: product.product }))
            }
        })
        .build()
        .unwrap()
}

/// Context of the fan-out resumable.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FanCtx {
    n: usize,
    /// Fail (ordinary error) on the first response.
    fail: bool,
}

/// Fans out add(v, 0) for every value, waits until every sum arrived, completes with the mean.
/// With `n = 2` values it then multiplies the total by 0.5 (fan-out, then a sequential step).
fn fan_out(memory: Mem, calls: Arc<AtomicUsize>, uncollected: Arc<AtomicUsize>) -> Resumable<Mem> {
    Resumable::builder(memory)
        .service::<AddV1>()
        .service::<MulV1>()
        .version(move |input: ResumableInput<AverageV1, FanCtx>| {
            calls.fetch_add(1, Ordering::SeqCst);
            let uncollected = Arc::clone(&uncollected);
            async move {
                if let Some(init) = input.init {
                    let n = init.values.len();
                    let fail = init.values.first() == Some(&-1.0);
                    return Ok(ResumableOutput::wait().context(FanCtx { n, fail }).requests(
                        init.values.iter().map(|&a| Request::new::<AddV1>(Operands { a, b: 0.0 })),
                    ));
                }
                let ctx = input.context.clone().ok_or("no context")?;
                if ctx.fail {
                    return Err("the workflow failed on purpose".into());
                }
                let service = input.service().ok_or("no service event")?;
                if !input.collected.all().any(|e| e.id() == service.id()) {
                    uncollected.fetch_add(1, Ordering::SeqCst);
                    return Ok(ResumableOutput::wait());
                }
                if let [product] = input.collected::<MulV1, Product>()?.as_slice() {
                    return Ok(ResumableOutput::complete(AverageOutput { average: product.product }));
                }
                let sums = input.collected::<AddV1, Sum>()?;
                if sums.len() < ctx.n {
                    return Ok(ResumableOutput::wait());
                }
                let total: f64 = sums.iter().map(|s| s.sum).sum();
                if ctx.n == 2 {
                    return Ok(
                        ResumableOutput::wait().request(Request::new::<MulV1>(Operands { a: total, b: 0.5 }))
                    );
                }
                Ok(ResumableOutput::complete(AverageOutput { average: total / ctx.n as f64 }))
            }
        })
        .build()
        .unwrap()
}

fn counters() -> (Arc<AtomicUsize>, Arc<AtomicUsize>) {
    (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)))
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sequential_chain_completes_with_the_exact_result() {
    let calls = Arc::new(AtomicUsize::new(0));
    let res = sequential(fast_memory(), Arc::clone(&calls));
    assert_eq!(res.source(), AVG);
    assert_eq!(res.versions(), vec!["1.0.0"]);
    let broker = Broker::builder()
        .handler(res.clone())
        .handler(services::add().unwrap())
        .handler(services::mul().unwrap())
        .build()
        .unwrap();
    let init = average_init(vec![2.0, 4.0]);
    let done = broker.resolve(init.clone()).await.unwrap().expect("a completion");
    assert_eq!(done.r#type(), "arvo.orc.calc.average.done");
    assert_eq!(done.data_value(), &json!({"average": 3.0}));
    assert_eq!(done.source(), AVG);
    assert_eq!(done.subject(), init.subject());
    assert_eq!(done.to(), Some(CLIENT));
    assert_eq!(done.parentid(), Some(init.id()));
    assert_eq!(done.dataschema(), Some("#/orc/calc/average/1.0.0"));
    assert_eq!(done.redirectto(), Some(AVG));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let (st, _) = state(res.memory(), init.subject()).await;
    assert_eq!(st.status, ResumableStatus::Done);
    assert_eq!(st.context, json!({"n": 2.0}));
    assert!(broker.take_dead_letters().is_empty());
    broker.shutdown().await;
}

#[tokio::test]
async fn requests_are_built_like_a_machines() {
    let res = sequential(fast_memory(), Arc::default());
    let init = client().accesscontrol("role=tester").r#type(AVG);
    let init = EventFactory::<AverageV1>::new().init(AverageInput { values: vec![1.0, 2.0] }, init).unwrap();
    let request = one(&res, &init).await;
    assert_eq!(request.r#type(), "com.calc.add");
    assert_eq!(request.source(), AVG);
    assert_eq!(request.subject(), init.subject());
    assert_eq!(request.to(), Some("com.calc.add"));
    assert_eq!(request.redirectto(), Some(AVG));
    assert_eq!(request.parentid(), Some(init.id()));
    assert_eq!(request.accesscontrol(), Some("role=tester"));
    assert_eq!(request.dataschema(), Some("#/calc/add/1.0.0"));
    assert_eq!(request.data_value(), &json!({"a": 1.0, "b": 2.0}));
    let (st, version) = state(res.memory(), init.subject()).await;
    assert_eq!(version, 1);
    assert_eq!(st.status, ResumableStatus::Active);
    assert_eq!(st.events.expected.keys().collect::<Vec<_>>(), vec![request.id()]);
    assert!(st.events.expected[request.id()].is_empty());
}

#[tokio::test]
async fn a_fan_out_completes_only_when_every_response_arrived() {
    let (calls, uncollected) = counters();
    let res = fan_out(fast_memory(), Arc::clone(&calls), Arc::clone(&uncollected));
    let values: Vec<f64> = (1..=8).map(f64::from).collect();
    let init = average_init(values);
    let requests = res.execute(&init).await.unwrap();
    assert_eq!(requests.len(), 8);
    let add = services::add().unwrap();
    let mut sums = Vec::new();
    for request in &requests {
        sums.push(one(&add, request).await);
    }
    let (last, first) = sums.split_last().unwrap();
    for (i, sum) in first.iter().enumerate() {
        assert!(res.execute(sum).await.unwrap().is_empty(), "response {i} must wait");
        let (st, _) = state(res.memory(), init.subject()).await;
        assert_eq!(st.events.expected.values().map(Vec::len).sum::<usize>(), i + 1);
    }
    let done = one(&res, last).await;
    assert_eq!(done.data_value(), &json!({"average": 4.5}));
    assert_eq!(calls.load(Ordering::SeqCst), 9);
    assert_eq!(uncollected.load(Ordering::SeqCst), 0);
    // After done: redeliveries get what they produced the first time (the journal), and the
    // function does not run.
    assert!(res.execute(&sums[0]).await.unwrap().is_empty());
    assert_eq!(res.execute(&init).await.unwrap(), requests);
    assert_eq!(calls.load(Ordering::SeqCst), 9);
}

#[tokio::test]
async fn a_duplicate_init_does_not_run_the_function_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let res = sequential(fast_memory(), Arc::clone(&calls));
    let init = average_init(vec![1.0, 3.0]);
    let request = one(&res, &init).await;
    // The same event (its journaled request again), and another init event (new id) of the
    // same workflow (nothing).
    assert_eq!(res.execute(&init).await.unwrap(), vec![request.clone()]);
    let again = init.to_builder().id("another-init-id").build().unwrap();
    assert!(res.execute(&again).await.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The workflow continues normally.
    let (st, _) = state(res.memory(), init.subject()).await;
    assert!(st.events.expected.contains_key(request.id()));
    let sum = one(&services::add().unwrap(), &request).await;
    let mul = one(&res, &sum).await;
    let product = one(&services::mul().unwrap(), &mul).await;
    let done = one(&res, &product).await;
    assert_eq!(done.data_value(), &json!({"average": 2.0}));
    assert_eq!(done.parentid(), Some(init.id()));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_duplicate_response_is_harmless() {
    let (calls, _) = counters();
    let res = fan_out(fast_memory(), Arc::clone(&calls), Arc::default());
    let init = average_init(vec![1.0, 2.0, 6.0]);
    let requests = res.execute(&init).await.unwrap();
    let add = services::add().unwrap();
    let s0 = one(&add, &requests[0]).await;
    let s1 = one(&add, &requests[1]).await;
    let s2 = one(&add, &requests[2]).await;
    assert!(res.execute(&s0).await.unwrap().is_empty());
    assert!(res.execute(&s1).await.unwrap().is_empty());
    // s0 again, not consecutively: not counted twice, the function does not run.
    assert!(res.execute(&s0).await.unwrap().is_empty());
    assert!(res.execute(&s1).await.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let (st, _) = state(res.memory(), init.subject()).await;
    assert_eq!(st.events.expected.values().map(Vec::len).sum::<usize>(), 2);
    let done = one(&res, &s2).await;
    assert_eq!(done.data_value(), &json!({"average": 3.0}));
    assert_eq!(res.execute(&s2).await.unwrap(), vec![done], "the journaled completion again");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_response_with_an_unknown_parentid_runs_the_function_but_is_not_collected() {
    let (calls, uncollected) = counters();
    let res = fan_out(fast_memory(), Arc::clone(&calls), Arc::clone(&uncollected));
    let init = average_init(vec![1.0, 2.0, 3.0]);
    let requests = res.execute(&init).await.unwrap();
    let sum = one(&services::add().unwrap(), &requests[0]).await;
    let stray = sum.to_builder().id("stray-id").parentid("not-a-request").build().unwrap();
    assert!(res.execute(&stray).await.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(uncollected.load(Ordering::SeqCst), 1);
    let (st, _) = state(res.memory(), init.subject()).await;
    assert_eq!(st.events.expected.len(), 3);
    assert!(st.events.expected.values().all(Vec::is_empty));
}

orchestrator::orchestrator_contract! {
    /// Two versions of one workflow.
    pub contract Twice {
        uri: "#/orc/test/twice",
        name: "test.twice",
        versions: {
            TwiceV1 = "1.0.0" { init: AverageInput, complete: AverageOutput },
            TwiceV2 = "2.0.0" { init: AverageInput, complete: AverageOutput },
        },
    }
}

#[test]
fn the_builder_requires_a_function_for_every_version() {
    let err = Resumable::builder(fast_memory())
        .version(|_: ResumableInput<TwiceV1, ()>| async { Ok(ResumableOutput::wait()) })
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), "Config", "{err}");
    assert!(err.message().contains("missing: 2.0.0"), "{err}");
    let err = Resumable::<Mem>::builder(fast_memory()).build().unwrap_err();
    assert_eq!(err.kind(), "Config");
    let err = Resumable::builder(fast_memory())
        .service::<AddV1>()
        .service::<AddV1>()
        .version(|_: ResumableInput<AverageV1, ()>| async { Ok(ResumableOutput::wait()) })
        .build()
        .unwrap_err();
    assert!(err.message().contains("same contract uri"), "{err}");
    let both = Resumable::builder(fast_memory())
        .version(|_: ResumableInput<TwiceV1, ()>| async { Ok(ResumableOutput::wait()) })
        .version(|_: ResumableInput<TwiceV2, ()>| async { Ok(ResumableOutput::wait()) })
        .build()
        .unwrap();
    assert_eq!(both.versions(), vec!["1.0.0", "2.0.0"]);
}

#[tokio::test]
async fn the_version_comes_from_the_subject() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s1, s2) = (Arc::clone(&seen), Arc::clone(&seen));
    let res = Resumable::builder(fast_memory())
        .version(move |_: ResumableInput<TwiceV1, ()>| {
            s1.lock().unwrap().push(1);
            async { Ok(ResumableOutput::complete(AverageOutput { average: 1.0 })) }
        })
        .version(move |_: ResumableInput<TwiceV2, ()>| {
            s2.lock().unwrap().push(2);
            async { Ok(ResumableOutput::complete(AverageOutput { average: 2.0 })) }
        })
        .build()
        .unwrap();
    let v2 = EventFactory::<TwiceV2>::new().init(AverageInput { values: vec![1.0] }, client()).unwrap();
    let done = one(&res, &v2).await;
    assert_eq!(done.dataschema(), Some("#/orc/test/twice/2.0.0"));
    assert_eq!(*seen.lock().unwrap(), vec![2]);
    // A subject naming a version the contract lacks.
    let subject = Subject::builder("arvo.orc.test.twice", "3.0.0", CLIENT).build().unwrap();
    let bad = v2.to_builder().id("x").orchestration_subject(&subject).build().unwrap();
    let err = res.execute(&bad).await.unwrap_err();
    assert_eq!(err.kind(), "Config");
    assert!(err.message().starts_with("Handler resolution failed"), "{err}");
}

#[tokio::test]
async fn invalid_and_unknown_events_are_violations_and_persist_nothing() {
    let res = sequential(fast_memory(), Arc::default());
    let init = average_init(vec![1.0, 2.0]);
    let request = one(&res, &init).await;
    let before = res.memory().read(init.subject()).await.unwrap().unwrap();
    let bad = Event::builder()
        .source("com.calc.add")
        .r#type("evt.calc.add.success")
        .subject(init.subject())
        .parentid(request.id())
        .dataschema("#/calc/add/1.0.0")
        .data_json(json!({"sum": "three"}))
        .build()
        .unwrap();
    assert_eq!(res.execute(&bad).await.unwrap_err().kind(), "Contract");
    let unknown = Event::builder()
        .source("com.other.thing")
        .r#type("com.other.thing.happened")
        .subject(init.subject())
        .data_json(json!({}))
        .build()
        .unwrap();
    let err = res.execute(&unknown).await.unwrap_err();
    assert_eq!(err.kind(), "Config");
    assert!(err.message().starts_with("Contract validation failed"), "{err}");
    let bad_init = client()
        .r#type(AVG)
        .dataschema("#/orc/calc/average/1.0.0")
        .orchestration_subject(&Subject::builder(AVG, "1.0.0", CLIENT).build().unwrap())
        .data_json(json!({"parentSubject$$": null, "values": []}))
        .build()
        .unwrap();
    assert_eq!(res.execute(&bad_init).await.unwrap_err().kind(), "Contract");
    assert!(res.memory().read(bad_init.subject()).await.unwrap().is_none());
    assert_eq!(res.memory().read(init.subject()).await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn a_request_to_an_undeclared_service_is_a_config_violation() {
    let res = Resumable::builder(fast_memory())
        .service::<AddV1>()
        .version(|_: ResumableInput<AverageV1, ()>| async {
            Ok(ResumableOutput::wait().request(Request::new::<MulV1>(Operands { a: 1.0, b: 2.0 })))
        })
        .build()
        .unwrap();
    let init = average_init(vec![1.0]);
    assert_eq!(res.execute(&init).await.unwrap_err().kind(), "Config");
    assert!(res.memory().read(init.subject()).await.unwrap().is_none());
}

#[tokio::test]
async fn an_ordinary_error_latches_the_workflow_and_reports_a_system_error() {
    let (calls, _) = counters();
    let res = fan_out(fast_memory(), Arc::clone(&calls), Arc::default());
    let init = average_init(vec![-1.0, 2.0]);
    let requests = res.execute(&init).await.unwrap();
    let add = services::add().unwrap();
    let s0 = one(&add, &requests[0]).await;
    let s1 = one(&add, &requests[1]).await;
    let error = one(&res, &s0).await;
    assert_eq!(error.r#type(), "sys.arvo.orc.calc.average.error");
    assert_eq!(error.subject(), init.subject());
    assert_eq!(error.to(), Some(CLIENT));
    assert_eq!(error.parentid(), Some(init.id()));
    assert_eq!(error.data()["errorMessage"], "the workflow failed on purpose");
    let record = res.memory().read(init.subject()).await.unwrap().unwrap().record;
    assert!(record.is_failed());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(res.execute(&s1).await.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_violation_from_the_function_is_returned_and_persists_nothing() {
    let res = Resumable::builder(fast_memory())
        .version(|_: ResumableInput<AverageV1, ()>| async {
            Err(Box::new(Violation::config("refused")) as orchestrator::emit::BoxError)
        })
        .build()
        .unwrap();
    let init = average_init(vec![1.0]);
    let err = res.execute(&init).await.unwrap_err();
    assert_eq!(err, Violation::config("refused"));
    assert!(res.memory().read(init.subject()).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn responses_of_a_fan_out_delivered_concurrently_lose_no_update() {
    for _ in 0..10 {
        let (calls, _) = counters();
        let res = fan_out(fast_memory(), Arc::clone(&calls), Arc::default());
        let values: Vec<f64> = (1..=16).map(f64::from).collect();
        let init = average_init(values);
        let requests = res.execute(&init).await.unwrap();
        let add = services::add().unwrap();
        let mut tasks = Vec::new();
        for request in &requests {
            let sum = one(&add, request).await;
            let res = res.clone();
            tasks.push(tokio::spawn(async move { execute_retrying(&res, &sum).await }));
        }
        let mut out = Vec::new();
        for task in tasks {
            out.extend(task.await.unwrap());
        }
        assert_eq!(out.len(), 1, "one completion: {out:?}");
        assert_eq!(out[0].data_value(), &json!({"average": 8.5}));
        assert_eq!(calls.load(Ordering::SeqCst), 17);
        let (st, version) = state(res.memory(), init.subject()).await;
        assert_eq!(st.status, ResumableStatus::Done);
        assert_eq!(st.events.expected.values().map(Vec::len).sum::<usize>(), 16);
        assert_eq!(version, 17);
    }
}

/// Collects every event addressed to the client.
#[derive(Default, Clone)]
struct Sink(Arc<Mutex<Vec<Event>>>);

impl EventHandler for Sink {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.lock().unwrap().push(event.clone());
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn a_thousand_interleaved_workflows_complete_with_exact_results() {
    let (calls, uncollected) = counters();
    let res = fan_out(InMemory::default(), Arc::clone(&calls), Arc::clone(&uncollected));
    let sink = Sink::default();
    let broker = Broker::builder()
        .handler(res.clone())
        .handler(services::add().unwrap())
        .handler(services::mul().unwrap())
        .handler(sink.clone())
        .workers(8)
        // A fan-out publishes several requests per workflow.
        .capacity(10_000)
        .build()
        .unwrap();
    let mut expected = HashMap::new();
    for i in 0..1000u32 {
        let x = f64::from(i);
        // Fan-out of two adds, then a multiplication by 0.5.
        let init = average_init(vec![x, x + 2.0]);
        expected.insert(init.subject().to_owned(), x + 1.0);
        broker.publish_wait(init).await.unwrap();
    }
    broker.wait_idle().await;
    let done = sink.0.lock().unwrap().clone();
    let dead = broker.take_dead_letters();
    assert!(dead.is_empty(), "{:?}", dead.iter().take(3).collect::<Vec<_>>());
    assert_eq!(done.len(), 1000);
    for event in &done {
        assert_eq!(event.r#type(), "arvo.orc.calc.average.done");
        let want = expected.remove(event.subject()).expect("one completion per workflow");
        assert_eq!(event.data()["average"].as_f64(), Some(want));
    }
    assert!(expected.is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 4000);
    assert_eq!(uncollected.load(Ordering::SeqCst), 0);
    assert!(broker.take_dead_letters().is_empty());
    broker.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Input validation: one rule and one wording for machines and resumables (Arvo's validateInput)

/// Runs `event` through a machine orchestrator and a resumable of the same contract, both already
/// holding the workflow of `init`, and returns both violations.
async fn both_reject(init: &Event, event: &Event) -> (Violation, Violation) {
    let machine = orchestrator::orchestration::Orchestrator::builder(fast_memory())
        .machine::<orchestrator_examples::calculator::flows::AverageFlow>()
        .build()
        .unwrap();
    let resumable = sequential(fast_memory(), Arc::default());
    assert_eq!(machine.execute(init).await.unwrap()[0].r#type(), "com.calc.add");
    assert_eq!(resumable.execute(init).await.unwrap()[0].r#type(), "com.calc.add");
    let m = machine.execute(event).await.expect_err("the machine accepted it");
    let r = resumable.execute(event).await.expect_err("the resumable accepted it");
    (m, r)
}

const INPUT_FAILED: &str = "Input validation failed - Event data does not meet contract requirements: ";

fn add_response(subject: &str, dataschema: Option<&str>, data: serde_json::Value) -> Event {
    Event::builder()
        .source("com.calc.add")
        .r#type("evt.calc.add.success")
        .subject(subject)
        .dataschema_opt(dataschema)
        .data_json(data)
        .build()
        .unwrap()
}

#[tokio::test]
async fn machines_and_resumables_word_an_invalid_payload_alike() {
    let init = average_init(vec![1.0, 2.0]);
    let bad_response = add_response(init.subject(), Some("#/calc/add/1.0.0"), json!({"sum": "three"}));
    let (m, r) = both_reject(&init, &bad_response).await;
    assert_eq!((m.kind(), r.kind()), ("Contract", "Contract"));
    assert!(m.message().starts_with(INPUT_FAILED), "{m}");
    assert_eq!(m.message(), r.message(), "one failure, one wording");
    assert_eq!(m, r, "the same metadata too");

    let bad_init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![1.0, 2.0] }, client())
        .unwrap()
        .to_json_value();
    let mut bad_init = bad_init;
    bad_init["data"]["values"] = json!([]);
    let bad_init = Event::from_json_value(bad_init).unwrap();
    let (m, r) = both_reject(&init, &bad_init).await;
    assert_eq!((m.kind(), r.kind()), ("Contract", "Contract"));
    assert!(m.message().starts_with(INPUT_FAILED), "{m}");
    assert_eq!(m, r);
}

/// Arvo's validateInput: a dataschema naming another version of the right contract is INVALID,
/// a contract violation (only the wildcard `0.0.0` stands for any version), for the init event
/// and for a service's response alike.
#[tokio::test]
async fn a_version_mismatch_on_an_orchestrator_input_is_a_contract_violation() {
    let init = average_init(vec![1.0, 2.0]);
    let wrong_init = Event::from_json_value({
        let mut v = average_init(vec![1.0, 2.0]).to_json_value();
        v["dataschema"] = json!("#/orc/calc/average/9.9.9");
        v
    })
    .unwrap();
    let wrong_response = add_response(init.subject(), Some("#/calc/add/2.0.0"), json!({"sum": 3.0}));
    for event in [&wrong_init, &wrong_response] {
        let (m, r) = both_reject(&init, event).await;
        assert_eq!((m.kind(), r.kind()), ("Contract", "Contract"), "{m} / {r}");
        assert!(m.message().starts_with(INPUT_FAILED), "{m}");
        assert!(m.message().contains("version"), "{m}");
        assert_eq!(m, r);
    }
}

/// Arvo's validateInput requires a dataschema on every orchestrator input (an init event or a
/// service's response): without one the event is INVALID, a contract violation.
#[tokio::test]
async fn an_orchestrator_input_without_a_dataschema_is_a_contract_violation() {
    let init = average_init(vec![1.0, 2.0]);
    let bare_init = average_init(vec![1.0, 2.0]).to_builder().dataschema_opt(None::<String>).build().unwrap();
    let bare_response = add_response(init.subject(), None, json!({"sum": 3.0}));
    for event in [&bare_init, &bare_response] {
        let (m, r) = both_reject(&init, event).await;
        assert_eq!((m.kind(), r.kind()), ("Contract", "Contract"), "{m} / {r}");
        assert!(m.message().starts_with(INPUT_FAILED), "{m}");
        assert!(m.message().contains("dataschema"), "{m}");
        assert_eq!(m, r);
    }
}

/// A value JSON cannot represent (NaN) in what a resumable returns fails the step that returned
/// it, naming the field: its context (before: saved as `null`, and the next step failed on
/// "invalid state"), its output and its requests (before: contract violations). Nothing of the
/// step is kept, the failure is latched, and the initiator gets a system error.
#[tokio::test]
async fn a_resumable_returning_what_json_cannot_represent_fails_that_step() {
    for (case, field) in [("context", "`context.n` is NaN"), ("output", "average"), ("request", "NaN")] {
        let memory = Arc::new(fast_memory());
        let resumable = Resumable::builder(Arc::clone(&memory))
            .service::<AddV1>()
            .version(move |input: ResumableInput<AverageV1, SeqCtx>| async move {
                if input.init.is_none() {
                    return Err("only the init is sent".into());
                }
                Ok(match case {
                    "context" => ResumableOutput::wait().context(SeqCtx { n: f64::NAN }),
                    "output" => ResumableOutput::complete(AverageOutput { average: f64::NAN }),
                    _ => ResumableOutput::wait()
                        .request(Request::new::<AddV1>(Operands { a: f64::NAN, b: 1.0 })),
                })
            })
            .build()
            .unwrap();
        let init = average_init(vec![1.0, 2.0]);
        let out = resumable.execute(&init).await.unwrap_or_else(|v| panic!("{case}: a violation: {v}"));
        assert_eq!(out.len(), 1, "{case}: {out:?}");
        assert_eq!(out[0].r#type(), format!("sys.{AVG}.error"), "{case}: {out:?}");
        let message = out[0].data()["errorMessage"].as_str().unwrap();
        assert!(message.contains(field) && message.contains("NaN"), "{case}: {message}");
        let Stored { record, .. } = memory.read(init.subject()).await.unwrap().expect("a record");
        assert!(
            matches!(record.execution_status, orchestrator::orchestration::ExecutionStatus::Failure { .. }),
            "{case}: the failure is latched"
        );
        assert_eq!(record.state, serde_json::Value::Null, "{case}: nothing of the step is kept");
    }
}
