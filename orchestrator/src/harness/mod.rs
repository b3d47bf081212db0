//! A test harness for workflows, with no infrastructure (Arvo's `runArvoTestSuites`): a
//! [`Scenario`] is a list of [`Step`]s, each an input event (given, built from the events emitted
//! so far, the answer to the last request of a service, or the passing of time on a
//! [`ManualClock`]) and what it must produce: events matched by type and by predicates on their
//! data ([`Expect`]), or a violation ([`ExpectViolation`]).
//!
//! It runs any [`EventHandler`]: a [`ServiceHandler`](crate::handler::ServiceHandler), an
//! [`Orchestrator`](crate::orchestration::Orchestrator) of [`machine!`](crate::machine!)s, a
//! [`Resumable`](crate::orchestration::Resumable), or your own. Each run gets a fresh [`TestEnv`]:
//! an [`InMemory`] store (finished workflows kept) whose clock is a [`ManualClock`] starting at
//! [`TestEnv::start`]. Build the handler over [`TestEnv::memory`] and [`TestEnv::clock`] so that
//! [`Step::advance`] moves the time the handler reads and fires the durable timers that fall due
//! (a machine's `after`). Events are delivered straight to the handler: there is no broker, so
//! the events it emits are what the step checks, and a later step answers them.
//!
//! [`Scenario::run`] returns a [`Report`] holding **every** failed expectation, named by step
//! (it never stops at the first), with a readable [`Display`](std::fmt::Display);
//! [`Report::assert`] panics with it, for tests. A scenario with a [`Repeat`] runs `times` times,
//! each time on a fresh environment and handler, and passes when at least `success_threshold`
//! percent of the runs pass: the statistical test of a nondeterministic step (an LLM-driven
//! agent).
//!
//! The harness needs no cargo feature and nothing beyond this crate: use it from your tests as
//! `orchestrator::harness`.
//!
//! # A service handler
//!
//! ```
//! use orchestrator::harness::{Expect, ExpectViolation, Scenario, Step};
//! use orchestrator::prelude::*;
//! use serde_json::json;
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! pub struct Operands { pub a: f64, pub b: f64 }
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! pub struct Sum { pub sum: f64 }
//!
//! orchestrator::simple_contract! {
//!     pub contract Add { uri: "#/calc/add", type: "calc.add",
//!         versions: { AddV1 = "1.0.0" { accepts: Operands, emits: Sum } } }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let add = || {
//!     ServiceHandler::<Add>::builder()
//!         .version(|input: ServiceInput<AddV1>| async move {
//!             Ok(Emit::new(Sum { sum: input.payload.a + input.payload.b }))
//!         })
//!         .build()
//! };
//! let request = EventFactory::<AddV1>::new()
//!     .accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source("com.test.client"))?;
//! // Not an `Operands`: the handler refuses it with a contract violation.
//! let broken = Event::builder()
//!     .source("com.test.client")
//!     .r#type("com.calc.add")
//!     .subject("calc-1")
//!     .data_json(json!({ "a": "one" }))
//!     .build()?;
//!
//! let report = Scenario::new("adds")
//!     .step(Step::send(request).expect(
//!         Expect::event_type("evt.calc.add.success")
//!             .field("sum", json!(3.0))
//!             .to("com.test.client"),
//!     ))
//!     .step(Step::send(broken).expect_violation(ExpectViolation::kind("Contract")))
//!     .run(|_env| add())
//!     .await;
//! report.assert();
//! # Ok(())
//! # }
//! ```
//!
//! # A machine orchestrator, with a timer
//!
//! The workflow asks for an approval and decides when it comes, or refuses after a day without
//! one. A step answers the request the orchestrator emitted with [`Step::answer`]; another moves
//! the clock past the timeout with [`Step::advance`].
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use orchestrator::harness::{Expect, Scenario, Step, TestEnv};
//! use orchestrator::prelude::*;
//! use serde_json::json;
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Expense { pub amount: u64 }
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Decision { pub approved: bool }
//!
//! orchestrator::simple_contract! {
//!     pub contract Approval { uri: "#/acme/approval", type: "acme.approval",
//!         versions: { ApprovalV1 = "1.0.0" { accepts: Expense, emits: Decision } } }
//! }
//! orchestrator::orchestrator_contract! {
//!     pub contract Claim { uri: "#/acme/claim", name: "claim",
//!         versions: { ClaimV1 = "1.0.0" { init: Expense, complete: Decision } } }
//! }
//!
//! orchestrator::machine! {
//!     pub machine ClaimFlow {
//!         contract: ClaimV1,
//!         services: { approval: ApprovalV1 },
//!         context: Decision,
//!         init: |_input| Decision { approved: false },
//!         output: |ctx| ctx.clone(),
//!         states: {
//!             waiting: {
//!                 entry: [ask = |_, event, out| if let ClaimFlowEvent::Init(e) = event { out.approval(e.clone()) }],
//!                 on: { approval::Decision => { target: decided, actions: [keep = |ctx, event, _| {
//!                     if let ClaimFlowEvent::ApprovalDecision(d) = event { *ctx = d.clone() }
//!                 }] } },
//!                 after: { 86400000 => { target: decided } },   // a day without an answer: refused
//!             },
//!             decided: { type: final },
//!         },
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Built for each run, over that run's store and manual clock.
//! let claims = |env: &TestEnv| {
//!     Orchestrator::builder(env.memory()).machine::<ClaimFlow>().clock(env.clock()).build()
//! };
//! let init = || EventFactory::<ClaimV1>::new()
//!     .init(Expense { amount: 120 }, Event::builder().source("com.acme.app"));
//! let completed = |approved: bool| {
//!     Expect::event_type("arvo.orc.claim.done").field("approved", json!(approved)).to("com.acme.app")
//! };
//!
//! Scenario::new("an approved claim")
//!     .step(Step::send(init()?).expect(Expect::event_type("com.acme.approval").field("amount", json!(120))))
//!     .step(Step::answer::<ApprovalV1, _>(Decision { approved: true }).expect(completed(true)))
//!     .run(claims)
//!     .await
//!     .assert();
//!
//! Scenario::new("nobody answers for a day")
//!     .step(Step::send(init()?).expect(Expect::event_type("com.acme.approval")))
//!     .step(Step::advance(Duration::from_secs(86_399)).expect_none())
//!     .step(Step::advance(Duration::from_secs(1)).expect(completed(false)))
//!     .run(claims)
//!     .await
//!     .assert();
//! # Ok(())
//! # }
//! ```
//!
//! # A resumable
//!
//! ```
//! use orchestrator::harness::{Expect, Scenario, Step, TestEnv};
//! use orchestrator::orchestration::resumable::{Request, ResumableInput, ResumableOutput};
//! use orchestrator::orchestration::Resumable;
//! use orchestrator::prelude::*;
//! use serde_json::json;
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Operands { pub a: f64, pub b: f64 }
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Product { pub product: f64 }
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Squared { pub value: f64 }
//!
//! orchestrator::simple_contract! {
//!     pub contract Mul { uri: "#/calc/mul", type: "calc.mul",
//!         versions: { MulV1 = "1.0.0" { accepts: Operands, emits: Product } } }
//! }
//! orchestrator::orchestrator_contract! {
//!     pub contract Square { uri: "#/orc/square", name: "square",
//!         versions: { SquareV1 = "1.0.0" { init: Squared, complete: Squared } } }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let square = |env: &TestEnv| {
//!     Resumable::builder(env.memory())
//!         .service::<MulV1>()
//!         .clock(env.clock())
//!         .version(|input: ResumableInput<SquareV1, ()>| async move {
//!             if let Some(init) = input.init {
//!                 let ask = Request::new::<MulV1>(Operands { a: init.value, b: init.value });
//!                 return Ok(ResumableOutput::wait().context(()).request(ask));
//!             }
//!             let products = input.collected::<MulV1, Product>()?;
//!             Ok(match products.first() {
//!                 Some(p) => ResumableOutput::complete(Squared { value: p.product }),
//!                 None => ResumableOutput::wait(),
//!             })
//!         })
//!         .build()
//! };
//! let init = EventFactory::<SquareV1>::new()
//!     .init(Squared { value: 3.0 }, Event::builder().source("com.test.client"))?;
//!
//! Scenario::new("squares through the mul service")
//!     .step(Step::send(init).expect(Expect::event_type("com.calc.mul").field("a", json!(3.0))))
//!     .step(
//!         Step::answer::<MulV1, _>(Product { product: 9.0 })
//!             .expect(Expect::event_type("arvo.orc.square.done").field("value", json!(9.0))),
//!     )
//!     .run(square)
//!     .await
//!     .assert();
//! # Ok(())
//! # }
//! ```

mod expect;
mod report;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use expect::{Expect, ExpectViolation};
pub use report::{Failure, Report, RunReport, StepFailure};

use crate::clock::{Clock, ManualClock};
use crate::contract::{ContractVersion, Emits, Payload};
use crate::event::Event;
use crate::factory::EventFactory;
use crate::handler::EventHandler;
use crate::memory::{InMemory, InMemoryConfig, Retention};
use crate::orchestration::WorkflowRecord;
use crate::orchestration::timers::Timers;
use crate::violation::Violation;

/// The store of a [`TestEnv`].
pub type TestMemory = Arc<InMemory<WorkflowRecord>>;

/// What one run of a scenario executes against: an in-memory store and the manual clock it and
/// the handler read. Build the handler over [`TestEnv::memory`] with [`TestEnv::clock`].
#[derive(Debug, Clone)]
pub struct TestEnv {
    memory: TestMemory,
    clock: Arc<ManualClock>,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// Where every environment's clock starts, in seconds since the Unix epoch:
    /// 2026-01-01T00:00:00Z.
    pub const START_UNIX_SECS: u64 = 1_767_225_600;

    /// Where every environment's clock starts: 2026-01-01T00:00:00Z.
    pub fn start() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(Self::START_UNIX_SECS)
    }

    /// A fresh store (finished workflows kept) and a manual clock at [`TestEnv::start`].
    pub fn new() -> Self {
        let clock = Arc::new(ManualClock::new(Self::start()));
        let config = InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() };
        let memory = Arc::new(InMemory::new(config).with_clock(Arc::clone(&clock) as Arc<dyn Clock>));
        Self { memory, clock }
    }

    /// The store, for `Orchestrator::builder(env.memory())` / `Resumable::builder(env.memory())`.
    pub fn memory(&self) -> TestMemory {
        Arc::clone(&self.memory)
    }

    /// The clock, for the builders' `.clock(env.clock())`.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock) as Arc<dyn Clock>
    }

    /// The manual clock itself.
    pub fn manual_clock(&self) -> &Arc<ManualClock> {
        &self.clock
    }

    /// The current time of the clock.
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }
}

/// The events each earlier step of a run emitted, which a step's input can be built from.
#[derive(Debug, Clone, Default)]
pub struct History {
    steps: Vec<Vec<Event>>,
}

impl History {
    /// The events of every earlier step, by step.
    pub fn steps(&self) -> &[Vec<Event>] {
        &self.steps
    }

    /// The events the previous step emitted (empty for the first step).
    pub fn last_step(&self) -> &[Event] {
        self.steps.last().map_or(&[], Vec::as_slice)
    }

    /// Every event emitted so far, in order.
    pub fn all(&self) -> impl DoubleEndedIterator<Item = &Event> {
        self.steps.iter().flatten()
    }

    /// The latest event emitted so far of type `event_type`.
    pub fn last_of_type(&self, event_type: &str) -> Option<&Event> {
        self.all().rev().find(|e| e.r#type() == event_type)
    }
}

type BuildFn = Arc<dyn Fn(&History) -> Result<Event, String> + Send + Sync>;

#[derive(Clone)]
enum Input {
    Event(Box<Event>),
    Build(BuildFn),
    Advance(Duration),
}

#[derive(Debug, Clone)]
enum Outcome {
    /// Anything but a violation.
    NoViolation,
    /// Events, matched by the expectations (plus, when `exact`, nothing else).
    Events { expects: Vec<Expect>, exact: bool },
    /// A violation.
    Violation(ExpectViolation),
}

/// One step of a [`Scenario`]: an input and what it must produce.
///
/// A step without expectations checks only that the handler returned no violation; with
/// [`Step::expect`]ations, each must match a distinct emitted event and no other event may be
/// emitted, unless [`Step::allow_others`]; [`Step::expect_none`] expects no event at all.
#[derive(Clone)]
pub struct Step {
    name: String,
    input: Input,
    outcome: Outcome,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Step")
            .field("name", &self.name)
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl Step {
    fn new(name: String, input: Input) -> Self {
        Self { name, input, outcome: Outcome::NoViolation }
    }

    /// Delivers `event` to the handler.
    pub fn send(event: Event) -> Self {
        Self::new(format!("send `{}`", event.r#type()), Input::Event(Box::new(event)))
    }

    /// Delivers the event `build` makes from the events emitted so far (an `Err` is reported as
    /// [`Failure::Input`]).
    pub fn send_with(
        name: impl Into<String>,
        build: impl Fn(&History) -> Result<Event, String> + Send + Sync + 'static,
    ) -> Self {
        Self::new(name.into(), Input::Build(Arc::new(build)))
    }

    /// Answers the latest request to service `V` emitted so far with `payload`, as `V`'s
    /// handler would: [`EventFactory::<V>::emits`](EventFactory::emits) with source `V`'s type,
    /// the request's subject, `parentid` the request's id, and `to` its `redirectto` or source.
    pub fn answer<V, P>(payload: P) -> Self
    where
        V: ContractVersion + Emits<P>,
        P: Payload + Clone,
    {
        let build = move |history: &History| {
            let request = history
                .last_of_type(V::TYPE)
                .ok_or_else(|| format!("no `{}` request was emitted before this step", V::TYPE))?;
            EventFactory::<V>::new().emits(payload.clone(), answer_base(request)).map_err(|e| e.to_string())
        };
        Self::new(
            format!("answer `{}` with `{}`", V::TYPE, <V as Emits<P>>::EVENT_TYPE),
            Input::Build(Arc::new(build)),
        )
    }

    /// Answers the latest request to service `V` emitted so far with its system error
    /// (`sys.<type>.error`) carrying `message`, as `V`'s handler does when it fails.
    pub fn answer_error<V: ContractVersion>(message: impl Into<String>) -> Self {
        let message = message.into();
        let build = move |history: &History| {
            let request = history
                .last_of_type(V::TYPE)
                .ok_or_else(|| format!("no `{}` request was emitted before this step", V::TYPE))?;
            let error = crate::contract::SystemErrorPayload::new("Error", message.clone());
            EventFactory::<V>::new().system_error(error, answer_base(request)).map_err(|e| e.to_string())
        };
        Self::new(format!("answer `{}` with its system error", V::TYPE), Input::Build(Arc::new(build)))
    }

    /// Moves the environment's clock forward by `by`, then delivers the wake-up of every
    /// workflow whose timer is due by then; the step's events are what those deliveries emit.
    pub fn advance(by: Duration) -> Self {
        Self::new(format!("advance {by:?}"), Input::Advance(by))
    }

    /// Renames the step (the report names steps by position and name).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Expects an event matching `expect` (one more: each expectation matches a distinct event).
    #[must_use]
    pub fn expect(mut self, expect: Expect) -> Self {
        match &mut self.outcome {
            Outcome::Events { expects, .. } => expects.push(expect),
            Outcome::NoViolation | Outcome::Violation(_) => {
                self.outcome = Outcome::Events { expects: vec![expect], exact: true };
            }
        }
        self
    }

    /// Expects no event at all (and no violation).
    #[must_use]
    pub fn expect_none(mut self) -> Self {
        self.outcome = Outcome::Events { expects: Vec::new(), exact: true };
        self
    }

    /// Lets the step emit events no expectation matches.
    #[must_use]
    pub fn allow_others(mut self) -> Self {
        match &mut self.outcome {
            Outcome::Events { exact, .. } => *exact = false,
            Outcome::NoViolation | Outcome::Violation(_) => {}
        }
        self
    }

    /// Expects the handler to return a violation matching `expect` (and no event).
    #[must_use]
    pub fn expect_violation(mut self, expect: ExpectViolation) -> Self {
        self.outcome = Outcome::Violation(expect);
        self
    }
}

/// The base of an answer to `request`.
fn answer_base(request: &Event) -> crate::event::EventBuilder {
    Event::builder()
        .source(request.r#type())
        .subject(request.subject())
        .parentid(request.id())
        .to(request.redirectto().unwrap_or(request.source()))
}

/// How often a scenario runs and how many runs must pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repeat {
    /// How many runs (at least 1).
    pub times: usize,
    /// The percentage of runs that must pass, 0 to 100 (Arvo's `successThreshold`).
    pub success_threshold: f64,
}

impl Repeat {
    /// `times` runs (at least 1), of which at least `success_threshold` percent (clamped to
    /// 0–100; NaN is 100) must pass.
    pub fn new(times: usize, success_threshold: f64) -> Self {
        let success_threshold =
            if success_threshold.is_nan() { 100.0 } else { success_threshold.clamp(0.0, 100.0) };
        Self { times: times.max(1), success_threshold }
    }

    /// How many runs must pass.
    pub fn required(&self) -> usize {
        let exact = self.times as f64 * self.success_threshold / 100.0;
        // Tolerate the rounding of e.g. 3 × 66.67 %.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let required = (exact - 1e-9).ceil().max(0.0) as usize;
        required.min(self.times)
    }
}

impl Default for Repeat {
    fn default() -> Self {
        Self::new(1, 100.0)
    }
}

/// A named list of [`Step`]s run against one handler (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct Scenario {
    name: String,
    steps: Vec<Step>,
    repeat: Repeat,
}

impl Scenario {
    /// An empty scenario named `name`, run once.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), steps: Vec::new(), repeat: Repeat::default() }
    }

    /// Appends `step`.
    #[must_use]
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Runs the scenario `repeat.times` times; it passes when enough runs pass.
    #[must_use]
    pub fn repeat(mut self, repeat: Repeat) -> Self {
        self.repeat = repeat;
        self
    }

    /// Runs the scenario: for each run, a fresh [`TestEnv`], a handler `build` makes over it
    /// (an `Err` fails that run), and every step in order. Never panics on a failed
    /// expectation: see [`Report`].
    pub async fn run<H, E, F>(&self, build: F) -> Report
    where
        H: EventHandler,
        E: fmt::Display,
        F: Fn(&TestEnv) -> Result<H, E>,
    {
        let mut runs = Vec::with_capacity(self.repeat.times);
        for _ in 0..self.repeat.times {
            let env = TestEnv::new();
            let run = match build(&env) {
                Ok(handler) => self.run_on(&env, &handler).await,
                Err(e) => RunReport {
                    failures: vec![StepFailure {
                        step: 0,
                        name: "build".to_owned(),
                        failure: Failure::Build(e.to_string()),
                    }],
                },
            };
            runs.push(run);
        }
        Report { scenario: self.name.clone(), runs, required: self.repeat.required() }
    }

    /// One run of the steps against `handler` in `env` (ignores [`Scenario::repeat`]).
    pub async fn run_on<H: EventHandler>(&self, env: &TestEnv, handler: &H) -> RunReport {
        let mut history = History::default();
        let mut report = RunReport::default();
        for (i, step) in self.steps.iter().enumerate() {
            let fail = |failure| StepFailure { step: i + 1, name: step.name.clone(), failure };
            let result = match deliver(env, handler, &step.input, &history).await {
                Ok(result) => result,
                Err(failure) => {
                    report.failures.push(fail(failure));
                    history.steps.push(Vec::new());
                    continue;
                }
            };
            report.failures.extend(judge(step, &result).into_iter().map(fail));
            history.steps.push(result.unwrap_or_default());
        }
        report
    }
}

/// Delivers a step's input: the handler's result, or why the input could not be delivered.
async fn deliver<H: EventHandler>(
    env: &TestEnv,
    handler: &H,
    input: &Input,
    history: &History,
) -> Result<Result<Vec<Event>, Violation>, Failure> {
    match input {
        Input::Event(event) => Ok(handler.execute(event).await),
        Input::Build(build) => {
            let event = build(history).map_err(Failure::Input)?;
            Ok(handler.execute(&event).await)
        }
        Input::Advance(by) => {
            env.clock.advance(*by);
            let timers = Timers::new(env.memory());
            let mut wakes = Vec::new();
            timers
                .fire_due(|e| {
                    wakes.push(e);
                    Ok::<(), ()>(())
                })
                .await
                .map_err(|e| Failure::Timers(e.to_string()))?;
            let mut emitted = Vec::new();
            for wake in &wakes {
                match handler.execute(wake).await {
                    Ok(events) => emitted.extend(events),
                    Err(violation) => return Ok(Err(violation)),
                }
            }
            Ok(Ok(emitted))
        }
    }
}

/// Every way `result` differs from what `step` expects.
fn judge(step: &Step, result: &Result<Vec<Event>, Violation>) -> Vec<Failure> {
    match (&step.outcome, result) {
        (Outcome::Violation(expected), Ok(events)) => vec![Failure::MissingViolation {
            expected: expected.to_string(),
            emitted: events.iter().map(|e| e.r#type().to_owned()).collect(),
        }],
        (Outcome::Violation(expected), Err(violation)) => expected
            .mismatch(violation)
            .map(|difference| Failure::WrongViolation {
                expected: expected.to_string(),
                actual: violation.to_string(),
                difference,
            })
            .into_iter()
            .collect(),
        (Outcome::NoViolation | Outcome::Events { .. }, Err(violation)) => {
            vec![Failure::UnexpectedViolation(violation.to_string())]
        }
        (Outcome::NoViolation, Ok(_)) => Vec::new(),
        (Outcome::Events { expects, exact }, Ok(events)) => match_events(expects, *exact, events),
    }
}

/// Matches each expectation to a distinct event, in order (the first unmatched event of its type
/// for which every predicate holds).
fn match_events(expects: &[Expect], exact: bool, events: &[Event]) -> Vec<Failure> {
    let mut matched = vec![false; events.len()];
    let mut failures = Vec::new();
    for expect in expects {
        let found = events
            .iter()
            .enumerate()
            .find(|(i, e)| !matched[*i] && expect.type_matches(e) && expect.mismatches(e).is_empty());
        if let Some((i, _)) = found {
            matched[i] = true;
            continue;
        }
        let candidates = events
            .iter()
            .enumerate()
            .filter(|(i, e)| !matched[*i] && expect.type_matches(e))
            .map(|(_, e)| format!("id={}: {}", e.id(), expect.mismatches(e).join("; ")))
            .collect();
        failures.push(Failure::Missing {
            expected: expect.to_string(),
            candidates,
            emitted: events.iter().map(|e| e.r#type().to_owned()).collect(),
        });
    }
    if exact {
        failures.extend(
            events.iter().zip(&matched).filter(|(_, m)| !**m).map(|(e, _)| Failure::Unexpected {
                event_type: e.r#type().to_owned(),
                id: e.id().to_owned(),
            }),
        );
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_requires_the_threshold_rounded_up() {
        assert_eq!(Repeat::new(3, 60.0).required(), 2);
        assert_eq!(Repeat::new(3, 66.666_666_666_7).required(), 2);
        assert_eq!(Repeat::new(3, 100.0).required(), 3);
        assert_eq!(Repeat::new(3, 0.0).required(), 0);
        assert_eq!(Repeat::new(0, 50.0).times, 1);
        assert_eq!(Repeat::new(4, f64::NAN).required(), 4);
    }
}
