//! The user test harness (`orchestrator::harness`): a passing scenario per handler kind (a
//! service, a machine orchestrator, a resumable), the report of failed expectations, `repeat`
//! with a success threshold against a nondeterministic handler, and the manual clock firing a
//! machine's `after` timer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use orchestrator::handler::EventHandler;
use orchestrator::harness::{Expect, ExpectViolation, Failure, Repeat, Scenario, Step, TestEnv};
use orchestrator::orchestration::Resumable;
use orchestrator::orchestration::resumable::{Request, ResumableInput, ResumableOutput};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, DivideV1, MulV1, Operands, Product, Quotient, Sum,
    services,
};
use serde_json::json;

const CLIENT: &str = "com.test.client";

fn add_request(a: f64, b: f64) -> Event {
    EventFactory::<AddV1>::new().accepts(Operands { a, b }, Event::builder().source(CLIENT)).unwrap()
}

fn average_init(values: &[f64]) -> Event {
    EventFactory::<AverageV1>::new()
        .init(AverageInput { values: values.to_vec() }, Event::builder().source(CLIENT))
        .unwrap()
}

fn averages(env: &TestEnv) -> Result<Orchestrator<orchestrator::harness::TestMemory>, Violation> {
    Orchestrator::builder(env.memory()).machine::<AverageFlow>().clock(env.clock()).build()
}

#[tokio::test]
async fn a_service_scenario_passes() {
    let report = Scenario::new("adds")
        .step(
            Step::send(add_request(1.0, 2.0)).expect(
                Expect::event_type("evt.calc.add.success")
                    .field("sum", json!(3.0))
                    .payload(|s: &Sum| s.sum == 3.0)
                    .to(CLIENT),
            ),
        )
        .step(Step::send(add_request(-1.0, 1.0)).expect(Expect::event_type("evt.calc.add.success")))
        .run(|_| services::add())
        .await;
    assert!(report.passed(), "{report}");
    assert_eq!(report.runs.len(), 1);
    assert_eq!(report.to_string(), "scenario `adds` passed");
}

#[tokio::test]
async fn a_machine_orchestrator_scenario_chains_requests_and_answers() {
    let report = Scenario::new("averages 2 and 4")
        .step(
            Step::send(average_init(&[2.0, 4.0]))
                .expect(Expect::event_type("com.calc.add").field("a", json!(2.0)).field("b", json!(4.0))),
        )
        .step(
            Step::answer::<AddV1, _>(Sum { sum: 6.0 }).expect(
                Expect::event_type("com.calc.divide")
                    .field("numerator", json!(6.0))
                    .field("denominator", json!(2.0)),
            ),
        )
        .step(
            Step::answer::<DivideV1, _>(Quotient { quotient: 3.0 }).expect(
                Expect::event_type("arvo.orc.calc.average.done")
                    .payload(|o: &AverageOutput| o.average == 3.0)
                    .to(CLIENT),
            ),
        )
        .run(averages)
        .await;
    assert!(report.passed(), "{report}");
}

#[tokio::test]
async fn a_service_error_answer_reaches_the_machine() {
    let report = Scenario::new("add fails")
        .step(Step::send(average_init(&[2.0, 4.0])).expect(Expect::event_type("com.calc.add")))
        .step(Step::answer_error::<AddV1>("overflow").allow_others())
        .run(averages)
        .await;
    assert!(report.passed(), "{report}");
}

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
/// A number to square.
pub struct Number {
    /// The number.
    pub value: f64,
}

orchestrator::orchestrator_contract! {
    /// Squares a number through the mul service.
    pub contract Square {
        uri: "#/orc/test/square",
        name: "test.square",
        versions: { SquareV1 = "1.0.0" { init: Number, complete: Number } },
    }
}

fn squares(env: &TestEnv) -> Result<Resumable<orchestrator::harness::TestMemory>, Violation> {
    Resumable::builder(env.memory())
        .service::<MulV1>()
        .clock(env.clock())
        .version(|input: ResumableInput<SquareV1, ()>| async move {
            if let Some(init) = input.init {
                let ask = Request::new::<MulV1>(Operands { a: init.value, b: init.value });
                return Ok(ResumableOutput::wait().context(()).request(ask));
            }
            let products = input.collected::<MulV1, Product>()?;
            Ok(match products.first() {
                Some(p) => ResumableOutput::complete(Number { value: p.product }),
                None => ResumableOutput::wait(),
            })
        })
        .build()
}

#[tokio::test]
async fn a_resumable_scenario_passes() {
    let init =
        EventFactory::<SquareV1>::new().init(Number { value: 3.0 }, Event::builder().source(CLIENT)).unwrap();
    let report = Scenario::new("squares 3")
        .step(Step::send(init).expect(Expect::event_type("com.calc.mul").field("a", json!(3.0))))
        .step(
            Step::answer::<MulV1, _>(Product { product: 9.0 })
                .expect(Expect::event_type("arvo.orc.test.square.done").field("value", json!(9.0))),
        )
        .run(squares)
        .await;
    assert!(report.passed(), "{report}");
}

#[tokio::test]
async fn a_failing_scenario_reports_every_failed_expectation_by_step() {
    let report = Scenario::new("wrong expectations")
        .step(
            Step::send(add_request(1.0, 2.0))
                .expect(Expect::event_type("evt.calc.add.success").field("sum", json!(4.0))),
        )
        .step(
            Step::send(add_request(1.0, 1.0))
                .named("second sum")
                .expect(Expect::event_type("evt.calc.add.wrong")),
        )
        .step(Step::send(add_request(0.0, 0.0)).expect_violation(ExpectViolation::kind("Contract")))
        .step(Step::answer::<MulV1, _>(Product { product: 1.0 }))
        .run(|_| services::add())
        .await;
    assert!(!report.passed());
    let failures: Vec<_> = report.failures().map(|(run, f)| (run, f.step, f.failure.clone())).collect();
    assert_eq!(failures.len(), 6, "{report}");
    let id = |step: usize| match &failures.iter().find(|f| f.1 == step).unwrap().2 {
        Failure::Missing { candidates, .. } => candidates.clone(),
        other => panic!("{other:?}"),
    };
    assert!(id(1)[0].ends_with("data.sum: expected 4.0, got 3.0"), "{:?}", id(1));
    assert!(
        matches!(&failures[1].2, Failure::Unexpected { event_type, .. } if event_type == "evt.calc.add.success")
    );
    assert!(matches!(&failures[2].2, Failure::Missing { candidates, emitted, .. }
        if candidates.is_empty() && emitted == &["evt.calc.add.success"]));
    assert!(
        matches!(&failures[4].2, Failure::MissingViolation { emitted, .. } if emitted == &["evt.calc.add.success"])
    );
    assert!(matches!(&failures[5].2, Failure::Input(m) if m.contains("no `com.calc.mul` request")));

    let shown = report.to_string();
    assert!(shown.starts_with("scenario `wrong expectations` FAILED\n"), "{shown}");
    assert!(
        shown.contains("step 1 (send `com.calc.add`): no event matched `evt.calc.add.success` where data.sum == 4.0; candidate 1: id="),
        "{shown}"
    );
    assert!(shown.contains("data.sum: expected 4.0, got 3.0"), "{shown}");
    assert!(
        shown.contains("step 2 (second sum): no event matched `evt.calc.add.wrong`; no event of that type among [evt.calc.add.success]"),
        "{shown}"
    );
    assert!(shown.contains("step 3 (send `com.calc.add`): expected a ViolationError<Contract>, got events [evt.calc.add.success]"), "{shown}");
    assert!(
        shown.contains(
            "step 4 (answer `com.calc.mul` with `evt.calc.mul.success`): the input could not be built"
        ),
        "{shown}"
    );
    let panicked = std::panic::catch_unwind(|| report.assert()).unwrap_err();
    assert_eq!(panicked.downcast_ref::<String>(), Some(&shown));
}

#[tokio::test]
async fn violations_are_expected_or_reported() {
    let broken = Event::builder()
        .source(CLIENT)
        .r#type("com.calc.add")
        .subject("calc-1")
        .data_json(json!({ "a": "one" }))
        .build()
        .unwrap();
    let passing = Scenario::new("refuses")
        .step(
            Step::send(broken.clone())
                .expect_violation(ExpectViolation::kind("Contract").message_contains("validation")),
        )
        .run(|_| services::add())
        .await;
    assert!(passing.passed(), "{passing}");

    let failing = Scenario::new("refuses, unexpectedly")
        .step(Step::send(broken.clone()).expect(Expect::event_type("evt.calc.add.success")))
        .step(Step::send(broken.clone()))
        .step(Step::send(broken).expect_violation(ExpectViolation::kind("Config")))
        .run(|_| services::add())
        .await;
    let failures: Vec<_> = failing.failures().map(|(_, f)| f.failure.clone()).collect();
    assert_eq!(failures.len(), 3, "{failing}");
    assert!(
        matches!(&failures[0], Failure::UnexpectedViolation(v) if v.starts_with("ViolationError<Contract>"))
    );
    assert!(matches!(&failures[1], Failure::UnexpectedViolation(_)));
    assert!(
        matches!(&failures[2], Failure::WrongViolation { difference, .. } if difference == "kind: expected Config, got Contract")
    );
}

#[tokio::test]
async fn a_handler_that_cannot_be_built_fails_the_run() {
    let report = Scenario::new("no handler")
        .step(Step::send(add_request(1.0, 2.0)))
        .run(|_| {
            Err::<orchestrator::handler::ServiceHandler<orchestrator_examples::calculator::Add>, _>("no key")
        })
        .await;
    assert!(!report.passed());
    assert_eq!(
        report.to_string(),
        "scenario `no handler` FAILED\n  step 0 (build): the handler could not be built: no key"
    );
}

/// A nondeterministic adder (an LLM stand-in): of every 3 calls, `right` give the right sum.
#[derive(Clone)]
struct Flaky {
    calls: Arc<AtomicUsize>,
    right: usize,
}

impl EventHandler for Flaky {
    fn source(&self) -> &str {
        "com.calc.add"
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let Operands { a, b } = AddV1::parse_accepts(event)?;
        let sum = if call % 3 < self.right { a + b } else { a + b + 1.0 };
        let base = Event::builder()
            .source("com.calc.add")
            .subject(event.subject())
            .parentid(event.id())
            .to(event.source());
        Ok(vec![
            EventFactory::<AddV1>::new()
                .emits(Sum { sum }, base)
                .map_err(|e| Violation::contract(e.to_string()))?,
        ])
    }
}

async fn flaky_report(right: usize) -> orchestrator::harness::Report {
    let calls = Arc::new(AtomicUsize::new(0));
    Scenario::new("a flaky adder")
        .step(
            Step::send(add_request(1.0, 2.0))
                .expect(Expect::event_type("evt.calc.add.success").field("sum", json!(3.0))),
        )
        .repeat(Repeat::new(3, 60.0))
        .run(|_| Ok::<_, Violation>(Flaky { calls: Arc::clone(&calls), right }))
        .await
}

#[tokio::test]
async fn repeat_passes_at_the_success_threshold_and_fails_below_it() {
    let two_of_three = flaky_report(2).await;
    assert_eq!((two_of_three.runs.len(), two_of_three.passes(), two_of_three.required), (3, 2, 2));
    assert!(two_of_three.passed(), "{two_of_three}");
    assert!(
        two_of_three
            .to_string()
            .starts_with("scenario `a flaky adder` passed: 2/3 runs passed, 2 required\n  run 3, step 1")
    );

    let one_of_three = flaky_report(1).await;
    assert_eq!(one_of_three.passes(), 1);
    assert!(!one_of_three.passed());
    let shown = one_of_three.to_string();
    assert!(shown.starts_with("scenario `a flaky adder` FAILED: 1/3 runs passed, 2 required\n"), "{shown}");
    assert!(shown.contains("run 2, step 1 (send `com.calc.add`)"), "{shown}");
    assert!(shown.contains("run 3, step 1 (send `com.calc.add`)"), "{shown}");
}

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

fn delayed(env: &TestEnv) -> Result<Orchestrator<orchestrator::harness::TestMemory>, Violation> {
    Orchestrator::builder(env.memory()).machine::<DelayedFlow>().clock(env.clock()).build()
}

fn delayed_init() -> Event {
    EventFactory::<DelayedV1>::new()
        .init(DelayedInput { a: 3.0, b: 4.0 }, Event::builder().source(CLIENT))
        .unwrap()
}

#[tokio::test]
async fn the_manual_clock_fires_after_timers() {
    let report = Scenario::new("waits, asks, then times out")
        .step(Step::send(delayed_init()).expect_none())
        .step(Step::advance(Duration::from_millis(4_999)).expect_none())
        .step(
            Step::advance(Duration::from_millis(1))
                .expect(Expect::event_type("com.calc.add").field("b", json!(4.0))),
        )
        .step(
            Step::advance(Duration::from_secs(2)).expect(
                Expect::event_type("arvo.orc.test.delayed.done")
                    .payload(|o: &DelayedOutput| o.timed_out && o.sum.is_none())
                    .to(CLIENT),
            ),
        )
        .run(delayed)
        .await;
    assert!(report.passed(), "{report}");

    let answered = Scenario::new("waits, asks, is answered in time")
        .step(Step::send(delayed_init()))
        .step(Step::advance(Duration::from_secs(5)).expect(Expect::event_type("com.calc.add")))
        .step(
            Step::answer::<AddV1, _>(Sum { sum: 7.0 })
                .expect(Expect::event_type("arvo.orc.test.delayed.done").field("sum", json!(7.0))),
        )
        .step(Step::advance(Duration::from_secs(10)).expect_none())
        .run(delayed)
        .await;
    assert!(answered.passed(), "{answered}");

    let early = Scenario::new("expects the request too early")
        .step(Step::send(delayed_init()))
        .step(Step::advance(Duration::from_secs(4)).expect(Expect::event_type("com.calc.add")))
        .run(delayed)
        .await;
    assert_eq!(
        early.to_string(),
        "scenario `expects the request too early` FAILED\n  step 2 (advance 4s): no event matched `com.calc.add`; no event of that type among []"
    );
}
