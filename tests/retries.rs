//! Retries of service calls (`services: { add: AddV1 { retry: { … } } }`): a retried system
//! error never reaches the machine; the request is sent again after the backoff, on the durable
//! timer; the error transition runs only once the policy gives up; every retry is a journal step.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use orchestrator::contract::SystemErrorPayload;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, InMemoryConfig, Journal, Memory, Retention};
use orchestrator::orchestration::replay::Until;
use orchestrator::orchestration::resumable::{Request, ResumableInput, ResumableOutput};
use orchestrator::orchestration::timers::Timers;
use orchestrator::orchestration::{Clock, ManualClock, Orchestrator, Resumable, RetryPolicy, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, Operands, Sum};

const CLIENT: &str = "com.test.client";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Two operands.
pub struct Input {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// The outcome.
pub struct Output {
    /// `a + b`, when the call succeeded.
    pub sum: Option<f64>,
    /// The error the machine saw, when the call failed for good.
    pub error: Option<String>,
}

orchestrator::orchestrator_contract! {
    /// Adds with a flaky service.
    pub contract Flaky {
        uri: "#/orc/test/flaky",
        name: "test.flaky",
        versions: { FlakyV1 = "1.0.0" { init: Input, complete: Output } },
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
/// Context.
pub struct Ctx {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
    /// The answer.
    pub sum: Option<f64>,
    /// The error seen by the `add::error` transition.
    pub error: Option<String>,
}

fn ask(ctx: &mut Ctx, _: &RetryingEvent, out: &mut RetryingOutbox<'_>) {
    out.add(Operands { a: ctx.a, b: ctx.b });
}

fn store(ctx: &mut Ctx, event: &RetryingEvent, _: &mut RetryingOutbox<'_>) {
    if let RetryingEvent::AddSum(s) = event {
        ctx.sum = Some(s.sum);
    }
}

fn failed(ctx: &mut Ctx, event: &RetryingEvent, _: &mut RetryingOutbox<'_>) {
    if let RetryingEvent::AddError(e) = event {
        ctx.error = Some(e.error_name.clone());
    }
}

orchestrator::machine! {
    /// Calls `add`, retried 3 times in all on `Timeout` / `Unavailable`, 100 ms then 200 ms apart.
    pub machine Retrying {
        contract: FlakyV1,
        services: {
            add: AddV1 { retry: { attempts: 3, backoff: 100 .. 1_000, on: ["Timeout", "Unavailable"] } },
        },
        context: Ctx,
        init: |input| Ctx { a: input.a, b: input.b, ..Ctx::default() },
        output: |ctx| Output { sum: ctx.sum, error: ctx.error.clone() },
        states: {
            asking: {
                entry: [ask],
                on: { add::Sum => { target: done, actions: [store] }, add::error => { target: done, actions: [failed] } },
            },
            done: { type: final },
        },
    }
}

type Mem = Arc<InMemory<WorkflowRecord>>;

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn t0_ms() -> u64 {
    1_800_000_000_000
}

struct World {
    mem: Mem,
    clock: Arc<ManualClock>,
    orc: Orchestrator<Mem>,
    init: Event,
}

impl World {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new(t0()));
        let config = InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() };
        let mem = Arc::new(InMemory::new(config).with_clock(Arc::clone(&clock) as Arc<dyn Clock>));
        let orc = Orchestrator::builder(Arc::clone(&mem))
            .machine::<Retrying>()
            .clock(Arc::clone(&clock) as Arc<dyn Clock>)
            .build()
            .unwrap();
        let init = EventFactory::<FlakyV1>::new()
            .init(Input { a: 2.0, b: 3.0 }, Event::builder().source(CLIENT))
            .unwrap();
        Self { mem, clock, orc, init }
    }

    async fn send(&self, event: &Event) -> Vec<Event> {
        self.orc.execute(event).await.unwrap()
    }

    async fn record(&self) -> WorkflowRecord {
        self.mem.read(self.init.subject()).await.unwrap().unwrap().record
    }

    /// Moves the clock and delivers the due wake-ups.
    async fn advance(&self, ms: u64) -> Vec<Event> {
        self.clock.advance(Duration::from_millis(ms));
        let mut wakes = Vec::new();
        Timers::new(Arc::clone(&self.mem))
            .fire_due(|e| {
                wakes.push(e);
                Ok::<(), ()>(())
            })
            .await
            .unwrap();
        let mut out = Vec::new();
        for wake in wakes {
            out.extend(self.send(&wake).await);
        }
        out
    }
}

fn base(request: &Event) -> EventBuilder {
    Event::builder()
        .source(request.r#type())
        .subject(request.subject())
        .parentid(request.id())
        .to(request.redirectto().unwrap())
}

fn error(request: &Event, name: &str) -> Event {
    EventFactory::<AddV1>::new()
        .system_error(SystemErrorPayload::new(name, "the adder is busy"), base(request))
        .unwrap()
}

fn sum(request: &Event) -> Event {
    let operands: Operands = serde_json::from_value(request.data_value().clone()).unwrap();
    EventFactory::<AddV1>::new().emits(Sum { sum: operands.a + operands.b }, base(request)).unwrap()
}

fn only(events: Vec<Event>, event_type: &str) -> Event {
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].r#type(), event_type, "{events:?}");
    events.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_flaky_service_is_retried_after_the_backoff_and_the_workflow_completes() {
    let w = World::new();
    let first = only(w.send(&w.init).await, "com.calc.add");

    // The first failure: the machine does not see it; the retry is the workflow's timer.
    assert!(w.send(&error(&first, "Timeout")).await.is_empty());
    let rec = w.record().await;
    assert_eq!(rec.wake_at_ms, Some(t0_ms() + 100), "first delay: 100 ms");
    assert!(!rec.done);
    assert_eq!(rec.state["value"], serde_json::json!(["asking"]), "still asking");
    assert!(w.advance(99).await.is_empty(), "not before the delay");

    let second = only(w.advance(1).await, "com.calc.add");
    assert_ne!(second.id(), first.id(), "a new request");
    assert_eq!(second.data(), first.data(), "the same data");
    assert_eq!(second.subject(), first.subject());
    assert_eq!(second.to(), first.to());

    // The second failure doubles the delay.
    assert!(w.send(&error(&second, "Unavailable")).await.is_empty());
    assert_eq!(w.record().await.wake_at_ms, Some(t0_ms() + 100 + 200), "second delay: 200 ms");
    assert!(w.advance(199).await.is_empty());
    let third = only(w.advance(1).await, "com.calc.add");

    let done = only(w.send(&sum(&third)).await, "arvo.orc.test.flaky.done");
    assert_eq!(done.data()["sum"], 5.0);
    assert_eq!(done.data()["error"], serde_json::Value::Null, "the error transition never ran");
    let rec = w.record().await;
    assert!(rec.done);
    assert_eq!(rec.wake_at_ms, None);
    assert!(rec.state.get("retries").is_none(), "nothing left to retry");

    // Every retry is a journal step: init, error (nothing produced), wake-up (the new request)…
    let journal = w.mem.history(w.init.subject(), 0, 100).await.unwrap();
    let steps: Vec<(String, Vec<String>)> = journal
        .iter()
        .map(|e| {
            let consumed = e.consumed.as_ref().map_or("-".to_owned(), |c| c.r#type().to_owned());
            (consumed, e.produced.iter().map(|p| p.r#type().to_owned()).collect())
        })
        .collect();
    let step = |c: &str, p: &[&str]| (c.to_owned(), p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    assert_eq!(
        steps,
        [
            step("arvo.orc.test.flaky", &["com.calc.add"]),
            step("sys.com.calc.add.error", &[]),
            step("arvo.orc.test.flaky.wake", &["com.calc.add"]),
            step("sys.com.calc.add.error", &[]),
            step("arvo.orc.test.flaky.wake", &["com.calc.add"]),
            step("evt.calc.add.success", &["arvo.orc.test.flaky.done"]),
        ]
    );
    let pending = &journal[1].record.state["retries"]["pending"][0];
    assert_eq!((pending["attempt"].as_u64(), pending["afterError"].as_str()), (Some(2), Some("Timeout")));

    // A replay computes the same retries, ids and delays.
    let replayed = w.orc.lifecycle().replay(&*w.mem, w.init.subject(), Until::End, None).await.unwrap();
    assert_eq!((replayed.version, replayed.done), (6, true));
}

#[tokio::test]
async fn a_service_failing_always_reaches_the_error_transition_after_all_attempts() {
    let w = World::new();
    let mut request = only(w.send(&w.init).await, "com.calc.add");
    let mut requests = 1;
    let done = loop {
        let out = w.send(&error(&request, "Timeout")).await;
        if !out.is_empty() {
            break only(out, "arvo.orc.test.flaky.done");
        }
        request = only(w.advance(1_000).await, "com.calc.add");
        requests += 1;
    };
    assert_eq!(requests, 3, "attempts: 3 requests in all");
    assert_eq!(done.data()["error"], "Timeout", "the machine saw the last error");
    assert!(w.record().await.state.get("retries").is_none());
}

#[tokio::test]
async fn an_error_the_policy_does_not_name_is_not_retried() {
    let w = World::new();
    let request = only(w.send(&w.init).await, "com.calc.add");
    let done = only(w.send(&error(&request, "BadRequest")).await, "arvo.orc.test.flaky.done");
    assert_eq!(done.data()["error"], "BadRequest");
    assert_eq!(w.record().await.wake_at_ms, None, "no retry scheduled");
}

#[tokio::test]
async fn a_retry_and_another_event_of_the_workflow_do_not_mix() {
    let w = World::new();
    let first = only(w.send(&w.init).await, "com.calc.add");
    let failure = error(&first, "Timeout");
    assert!(w.send(&failure).await.is_empty());
    // The same error redelivered: the journal answers it, no second retry is scheduled.
    assert!(w.send(&failure).await.is_empty());
    let second = only(w.advance(100).await, "com.calc.add");
    assert!(w.advance(10_000).await.is_empty(), "one retry only");
    // A late answer to the first request is an ordinary event: the machine takes it.
    let done = only(w.send(&sum(&first)).await, "arvo.orc.test.flaky.done");
    assert_eq!(done.data()["sum"], 5.0);
    // The retried request's answer then finds the workflow finished.
    assert!(w.send(&sum(&second)).await.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Resumables: the same policy, given to the builder.

/// Sums two additions, fanned out; completes with `-1` if it ever sees an error.
fn resumable(mem: &Mem, clock: &Arc<ManualClock>) -> Resumable<Mem> {
    Resumable::builder(Arc::clone(mem))
        .service_with_retry::<AddV1>(
            RetryPolicy::new(2)
                .backoff(Duration::from_millis(100), Duration::from_millis(100))
                .on(["Timeout"]),
        )
        .version(|input: ResumableInput<FlakyV1, ()>| async move {
            if let Some(init) = input.init {
                return Ok(ResumableOutput::wait().context(()).requests([
                    Request::new::<AddV1>(Operands { a: init.a, b: init.b }),
                    Request::new::<AddV1>(Operands { a: init.a, b: 10.0 }),
                ]));
            }
            if input.service().is_some_and(|e| e.r#type().starts_with("sys.")) {
                return Ok(ResumableOutput::complete(Output { sum: None, error: Some("seen".to_owned()) }));
            }
            let sums = input.collected::<AddV1, Sum>()?;
            if sums.len() < 2 {
                return Ok(ResumableOutput::wait());
            }
            Ok(ResumableOutput::complete(Output { sum: Some(sums.iter().map(|s| s.sum).sum()), error: None }))
        })
        .clock(Arc::clone(clock) as Arc<dyn Clock>)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_resumable_retries_a_failed_request_in_place_of_the_failed_one() {
    let w = World::new();
    let res = resumable(&w.mem, &w.clock);
    let requests = res.execute(&w.init).await.unwrap();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(res.execute(&error(&requests[0], "Timeout")).await.unwrap().is_empty(), "not shown");
    assert_eq!(w.record().await.wake_at_ms, Some(t0_ms() + 100));

    w.clock.advance(Duration::from_millis(100));
    let mut wakes = Vec::new();
    Timers::new(Arc::clone(&w.mem))
        .fire_due(|e| {
            wakes.push(e);
            Ok::<(), ()>(())
        })
        .await
        .unwrap();
    assert_eq!(wakes.len(), 1);
    let retried = only(res.execute(&wakes[0]).await.unwrap(), "com.calc.add");
    assert_eq!(retried.data(), requests[0].data());
    let expected = &w.record().await.state["events"]["expected"];
    assert!(expected.get(retried.id()).is_some() && expected.get(requests[0].id()).is_none(), "{expected}");

    assert!(res.execute(&sum(&requests[1])).await.unwrap().is_empty(), "one sum of two");
    let done = only(res.execute(&sum(&retried)).await.unwrap(), "arvo.orc.test.flaky.done");
    assert_eq!(done.data()["sum"], 5.0 + 12.0);
    assert_eq!(done.data()["error"], serde_json::Value::Null, "the function never saw the error");
}

#[test]
fn a_resumable_refuses_an_invalid_policy() {
    let (mem, clock) = {
        let w = World::new();
        (w.mem, w.clock)
    };
    let built = Resumable::builder(Arc::clone(&mem))
        .service_with_retry::<AddV1>(RetryPolicy::new(0))
        .version(|_: ResumableInput<FlakyV1, ()>| async { Ok(ResumableOutput::wait()) })
        .clock(clock as Arc<dyn Clock>)
        .build();
    let error = built.expect_err("refused").to_string();
    assert!(error.contains("at least 1 attempt"), "{error}");
}
