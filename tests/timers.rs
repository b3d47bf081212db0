//! Durable timers (`orchestrator::orchestration::timers`): a machine's `after` transitions are
//! stored with the workflow's state and delivered when due — not before, exactly once, in order
//! with the workflow's other events, and after a restart of the process over the same memory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use orchestrator::broker::Broker;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, InMemoryConfig, Memory, Retention};
use orchestrator::orchestration::replay::Until;
use orchestrator::orchestration::timers::{Timers, wake_event};
use orchestrator::orchestration::{Clock, ManualClock, Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, Operands, Sum, services};

const CLIENT: &str = "com.test.client";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Two operands.
pub struct DelayedInput {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// The outcome.
pub struct DelayedOutput {
    /// `a + b`, unless the call timed out.
    pub sum: Option<f64>,
    /// Whether the call timed out.
    pub timed_out: bool,
}

orchestrator::orchestrator_contract! {
    /// Waits 5 s, then adds, with a 2 s timeout on the answer.
    pub contract Delayed {
        uri: "#/orc/test/delayed",
        name: "test.delayed",
        versions: { DelayedV1 = "1.0.0" { init: DelayedInput, complete: DelayedOutput } },
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
/// Context.
pub struct Ctx {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
    /// The sum, once known.
    pub sum: Option<f64>,
    /// Whether the call timed out.
    pub timed_out: bool,
}

fn ask(ctx: &mut Ctx, _: &DelayedFlowEvent, out: &mut DelayedFlowOutbox<'_>) {
    out.add(Operands { a: ctx.a, b: ctx.b });
}

fn store(ctx: &mut Ctx, event: &DelayedFlowEvent, _: &mut DelayedFlowOutbox<'_>) {
    if let DelayedFlowEvent::AddSum(s) = event {
        ctx.sum = Some(s.sum);
    }
}

orchestrator::machine! {
    /// waiting (5 s) → asking (answer or 2 s timeout) → done / timed_out.
    pub machine DelayedFlow {
        contract: DelayedV1,
        services: { add: AddV1 },
        context: Ctx,
        init: |input| Ctx { a: input.a, b: input.b, ..Ctx::default() },
        output: |ctx| DelayedOutput { sum: ctx.sum, timed_out: ctx.timed_out },
        states: {
            waiting: { after: { 5000 => asking } },
            asking: {
                entry: [ask],
                on: { add::Sum => { target: done, actions: [store] }, add::error => done },
                after: { 2000 => { target: timed_out, actions: [|ctx, _, _| ctx.timed_out = true] } },
            },
            done: { type: final },
            timed_out: { type: final },
        },
    }
}

type Mem = Arc<InMemory<WorkflowRecord>>;

/// A store and its clock: leases and due wake-ups are judged by the same manual clock the
/// orchestrators read.
fn memory_and_clock() -> (Mem, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t0()));
    let config = InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() };
    (Arc::new(InMemory::new(config).with_clock(Arc::clone(&clock) as Arc<dyn Clock>)), clock)
}

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn orchestrator(memory: &Mem, clock: &Arc<ManualClock>) -> Orchestrator<Mem> {
    Orchestrator::builder(Arc::clone(memory))
        .machine::<DelayedFlow>()
        .clock(Arc::clone(clock) as Arc<dyn Clock>)
        .build()
        .unwrap()
}

fn timers(memory: &Mem) -> Timers<Mem> {
    Timers::new(Arc::clone(memory))
}

fn init(a: f64, b: f64) -> Event {
    EventFactory::<DelayedV1>::new().init(DelayedInput { a, b }, Event::builder().source(CLIENT)).unwrap()
}

async fn record(memory: &Mem, subject: &str) -> (WorkflowRecord, u64) {
    let stored = memory.read(subject).await.unwrap().expect("the workflow exists");
    (stored.record, stored.version)
}

/// The wake-ups `timers` publishes now.
async fn due_wakes(timers: &Timers<Mem>) -> Vec<Event> {
    let mut out = Vec::new();
    timers
        .fire_due(|e| {
            out.push(e);
            Ok::<(), ()>(())
        })
        .await
        .unwrap();
    out
}

/// Collects what reaches the client.
#[derive(Clone, Default)]
struct Client(Arc<Mutex<Vec<Event>>>);

impl EventHandler for Client {
    fn source(&self) -> &str {
        CLIENT
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, orchestrator::violation::Violation> {
        self.0.lock().unwrap().push(event.clone());
        Ok(Vec::new())
    }
}

impl Client {
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[tokio::test]
async fn an_after_timer_is_stored_with_the_state_and_fires_when_due_not_before() {
    let (mem, clock) = memory_and_clock();
    let orc = orchestrator(&mem, &clock);
    let timers = timers(&mem);
    let init = init(3.0, 4.0);
    assert!(orc.execute(&init).await.unwrap().is_empty(), "nothing is requested while waiting");
    let (rec, v1) = record(&mem, init.subject()).await;
    let due = t0() + Duration::from_secs(5);
    assert_eq!(rec.wake_at_ms, Some(1_800_000_005_000), "the wake-up is part of the record");
    assert_eq!(rec.state["epochMs"], 1_800_000_000_000u64, "machine time 0 is the start");

    clock.advance(Duration::from_millis(4_999));
    assert!(due_wakes(&timers).await.is_empty(), "not due yet");
    // An early wake-up (someone else's clock) is ignored without a write.
    let early = wake_event(init.subject(), due).unwrap();
    assert!(orc.execute(&early).await.unwrap().is_empty());
    assert_eq!(record(&mem, init.subject()).await.1, v1, "an early wake-up writes nothing");

    clock.advance(Duration::from_millis(1));
    let wakes = due_wakes(&timers).await;
    assert_eq!(wakes.len(), 1);
    let wake = &wakes[0];
    assert_eq!(wake.r#type(), "arvo.orc.test.delayed.wake");
    assert_eq!(wake.to(), Some("arvo.orc.test.delayed"));
    assert_eq!(wake.subject(), init.subject());
    assert!(due_wakes(&timers).await.is_empty(), "a published wake-up is not published again at once");

    let out = orc.execute(wake).await.unwrap();
    assert_eq!(out.len(), 1, "the timer moved the machine to `asking`, which calls add: {out:?}");
    assert_eq!(out[0].r#type(), "com.calc.add");
    assert_eq!(out[0].parentid(), Some(wake.id()));
    let (rec, v2) = record(&mem, init.subject()).await;
    assert_eq!(v2, v1 + 1);
    assert_eq!(rec.wake_at_ms, Some(1_800_000_007_000), "the answer's 2 s timeout is the next wake-up");

    // The same wake-up again: its journaled request again, nothing is run or written.
    assert_eq!(orc.execute(wake).await.unwrap(), out);
    // Another wake-up for the same due time: nothing is due any more, nothing is written.
    let another = wake_event(init.subject(), due).unwrap();
    assert!(orc.execute(&another).await.unwrap().is_empty());
    assert_eq!(record(&mem, init.subject()).await.1, v2);
}

#[tokio::test]
async fn a_due_timer_fires_before_a_later_event_of_the_workflow() {
    let (mem, clock) = memory_and_clock();
    let orc = orchestrator(&mem, &clock);
    let timers = timers(&mem);
    let init = init(1.0, 2.0);
    orc.execute(&init).await.unwrap();
    clock.advance(Duration::from_secs(5));
    let request = orc.execute(&due_wakes(&timers).await[0]).await.unwrap().remove(0);
    let answer = services::add().unwrap().execute(&request).await.unwrap().remove(0);

    // The answer arrives 2.5 s later, after the 2 s timeout fell due but before its wake-up was
    // delivered: the timeout fires first, and the late answer finds the workflow finished.
    clock.advance(Duration::from_millis(2_500));
    let out = orc.execute(&answer).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "arvo.orc.test.delayed.done");
    assert_eq!(out[0].data()["timed_out"], true);
    assert_eq!(out[0].data()["sum"], serde_json::Value::Null);
    let (rec, _) = record(&mem, init.subject()).await;
    assert!(rec.done);
    assert_eq!(rec.wake_at_ms, None, "a finished workflow has no wake-up");
    assert!(due_wakes(&timers).await.is_empty());

    // A replay re-runs the timers at the journaled times: same states, same outcome.
    let replayed = orc.lifecycle().replay(&*mem, init.subject(), Until::End, None).await.unwrap();
    assert_eq!((replayed.version, replayed.done), (3, true), "init, wake-up, late answer");
    assert_eq!(replayed.state, rec.state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_fires_after_the_process_restarts_over_the_same_memory() {
    let (mem, clock) = memory_and_clock();
    let client = Client::default();
    let inits: Vec<Event> = (0..20).map(|i| init(f64::from(i), 10.0)).collect();

    // First life: the workflows start and wait for their 5 s timer; then the process "dies".
    {
        let broker = Broker::builder()
            .handler(orchestrator(&mem, &clock))
            .handler(services::add().unwrap())
            .handler(client.clone())
            .build()
            .unwrap();
        for init in &inits {
            broker.publish(init.clone()).unwrap();
        }
        broker.wait_idle().await;
        broker.shutdown().await;
    }
    assert!(client.take().is_empty(), "nothing finished before the timers fell due");

    // While it is down, the timers fall due.
    clock.advance(Duration::from_secs(60));

    // Second life: a new orchestrator and broker over the same memory, with a timer task.
    let broker = Broker::builder()
        .handler(orchestrator(&mem, &clock))
        .handler(services::add().unwrap())
        .handler(client.clone())
        .build()
        .unwrap();
    let task =
        timers(&mem).with_tick(Duration::from_millis(5)).spawn(broker.handle().transport().clone(), |e| {
            panic!("timer pass failed: {e}");
        });
    let mut done = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while done.len() < inits.len() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        done.extend(client.take());
    }
    task.stop().await;
    broker.wait_idle().await;
    done.extend(client.take());
    broker.shutdown().await;

    // Every workflow completed exactly once, with the right sum: the 5 s timer fired after the
    // restart, 55 s late, and the 2 s timeout it started counted from then (not from when the
    // 5 s were over), so the add answer came back in time.
    assert_eq!(done.len(), inits.len(), "each workflow completes exactly once: {done:?}");
    for init in &inits {
        let completions: Vec<&Event> = done.iter().filter(|e| e.subject() == init.subject()).collect();
        assert_eq!(completions.len(), 1);
        let a = init.data()["a"].as_f64().unwrap();
        assert_eq!(completions[0].data()["sum"], a + 10.0);
        assert_eq!(completions[0].data()["timed_out"], false);
    }
    assert!(broker.take_dead_letters().is_empty());
}

#[tokio::test]
async fn a_wake_up_for_an_unknown_or_finished_workflow_is_ignored() {
    let (mem, clock) = memory_and_clock();
    let orc = orchestrator(&mem, &clock);
    let unknown = wake_event(init(1.0, 1.0).subject(), t0()).unwrap();
    assert!(orc.execute(&unknown).await.unwrap().is_empty());
    assert!(mem.read(unknown.subject()).await.unwrap().is_none(), "a wake-up never creates a workflow");
    assert!(wake_event("not a subject", t0()).is_err(), "a wake-up needs an orchestration subject");
}

// ---------------------------------------------------------------------------------------------
// A delay computed from the context when the state is entered.

orchestrator::machine! {
    /// Waits `a` ms (computed from the input), then times out.
    pub machine PatientFlow {
        contract: DelayedV1,
        context: Ctx,
        init: |input| Ctx { a: input.a, b: input.b, ..Ctx::default() },
        output: |ctx| DelayedOutput { sum: ctx.sum, timed_out: ctx.timed_out },
        states: {
            waiting: {
                after: {
                    patience = |ctx| Duration::from_millis(ctx.a as u64) => {
                        target: timed_out,
                        actions: [|ctx, _, _| ctx.timed_out = true],
                    },
                },
            },
            timed_out: { type: final },
        },
    }
}

#[tokio::test]
async fn a_computed_delay_is_stored_with_the_state_and_fires_after_a_restart() {
    let (mem, clock) = memory_and_clock();
    let patient = || {
        Orchestrator::builder(Arc::clone(&mem))
            .machine::<PatientFlow>()
            .clock(Arc::clone(&clock) as Arc<dyn Clock>)
            .build()
            .unwrap()
    };
    let init = init(1_500.0, 0.0);
    assert!(patient().execute(&init).await.unwrap().is_empty());
    let (rec, _) = record(&mem, init.subject()).await;
    assert_eq!(rec.wake_at_ms, Some(1_800_000_001_500), "due 1.5 s after entry, from the context");

    // A new orchestrator over the same memory: the due time was stored, not recomputed.
    clock.advance(Duration::from_millis(1_499));
    assert!(due_wakes(&timers(&mem)).await.is_empty(), "not due yet");
    clock.advance(Duration::from_millis(1));
    let wakes = due_wakes(&timers(&mem)).await;
    assert_eq!(wakes.len(), 1);
    let out = patient().execute(&wakes[0]).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "arvo.orc.test.delayed.done");
    assert_eq!(out[0].data()["timed_out"], true);
}
