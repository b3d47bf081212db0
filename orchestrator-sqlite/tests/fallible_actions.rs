//! Fallible actions and guards, on `InMemory` and on `SqliteMemory`, through a `Node`: an
//! action or guard returning `Err` fails the workflow with the user's error, named and worded as
//! a failing service handler's; the failed step changes nothing, later events are ignored; an
//! error that is a violation is dead-lettered and nothing is stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use orchestrator::contract::SystemErrorPayload;
use orchestrator::emit::{BoxError, NamedError};
use orchestrator::handler::EventHandler;
use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
use orchestrator::machine::{ActionError, MachineError, MachineInstance};
use orchestrator::memory::{InMemory, InMemoryConfig, Memory};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DeadLetterReason, Node, WorkflowStatus};
use orchestrator::violation::Violation;
use orchestrator_examples::calculator::{
    Add, AddV1, AverageInput, AverageOutput, AverageV1, Operands, Sum, services,
};
use orchestrator_sqlite::SqliteConfig;

const CLIENT: &str = "com.test.client";

/// The user's error type: not a `NamedError`, with a cause.
#[derive(Debug, thiserror::Error)]
#[error("value {value} is negative")]
struct Negative {
    value: f64,
    #[source]
    cause: std::io::Error,
}

fn negative(value: f64) -> Negative {
    Negative { value, cause: std::io::Error::other("checked by the validator") }
}

fn too_large(sum: f64) -> NamedError {
    NamedError::new("TooLarge", format!("the sum {sum} is over 1000"))
}

/// The machine's context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ctx {
    values: Vec<f64>,
    sum: f64,
    /// Changed by `validate` before it fails, and by `count` after it: both must be discarded.
    touched: u32,
}

fn validate(ctx: &mut Ctx, _: &CheckedEvent, _: &mut CheckedOutbox<'_>) -> Result<(), ActionError> {
    ctx.touched += 100;
    match ctx.values.first().copied() {
        Some(13.0) => Err(ActionError::violation("13 is not averaged here")),
        Some(v) if v < 0.0 => Err(ActionError::new(negative(v))),
        _ => Ok(()),
    }
}

fn count(ctx: &mut Ctx, _: &CheckedEvent, _: &mut CheckedOutbox<'_>) {
    ctx.touched += 1;
}

fn request_add(ctx: &mut Ctx, _: &CheckedEvent, out: &mut CheckedOutbox<'_>) {
    out.add(Operands { a: ctx.values[0], b: ctx.values[1] });
}

fn sum_ok(_: &Ctx, event: &CheckedEvent) -> Result<bool, NamedError> {
    match event {
        CheckedEvent::AddSum(s) if s.sum > 1000.0 => Err(too_large(s.sum)),
        _ => Ok(true),
    }
}

orchestrator::machine! {
    /// Validates its input, adds the first two values, checks the sum, completes with the average.
    pub machine Checked {
        contract: AverageV1,
        services: { add: AddV1 },
        context: Ctx,
        init: |input| Ctx { values: input.values.clone(), ..Ctx::default() },
        output: |ctx| AverageOutput { average: ctx.sum / ctx.values.len() as f64 },
        states: {
            adding: {
                entry: [validate, count, request_add],
                on: {
                    add::Sum => {
                        target: done,
                        guard: sum_ok,
                        actions: [|ctx, event, _| if let CheckedEvent::AddSum(s) = event { ctx.sum = s.sum }],
                    },
                },
            },
            done: { type: final },
        },
    }
}

fn init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new().init(AverageInput { values }, Event::builder().source(CLIENT)).unwrap()
}

/// What a service handler failing with `error` puts in its system error.
async fn handler_payload(error: fn() -> BoxError) -> SystemErrorPayload {
    let failing = ServiceHandler::<Add>::builder()
        .version(move |_: ServiceInput<AddV1>| async move { Err::<Emit<AddV1>, BoxError>(error()) })
        .build()
        .unwrap();
    let request = EventFactory::<AddV1>::new()
        .accepts(Operands { a: 1.0, b: 2.0 }, Event::builder().source(CLIENT).subject("s"))
        .unwrap();
    let out = failing.execute(&request).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    serde_json::from_value(out[0].data_value().clone()).unwrap()
}

fn payload_of(event: &Event) -> SystemErrorPayload {
    assert_eq!(event.r#type(), "sys.arvo.orc.calc.average.error", "{event:?}");
    serde_json::from_value(event.data_value().clone()).unwrap()
}

async fn fallible_on<M: Memory<WorkflowRecord> + 'static>(store: Arc<M>) {
    let node = Node::builder(Arc::clone(&store))
        .service(services::add().unwrap())
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<Checked>())
        .client(CLIENT)
        .build()
        .await
        .unwrap();

    // Valid input: the workflow completes.
    let done = node.run(init(vec![1.0, 3.0])).await.unwrap();
    assert_eq!(done.data()["average"], 2.0);

    // A failing action: the workflow fails with the user's error, as a failing service handler
    // reports it.
    let bad = init(vec![-1.0, 3.0]);
    let failed = node.run(bad.clone()).await.unwrap();
    let payload = payload_of(&failed);
    assert_eq!(payload, handler_payload(|| Box::new(negative(-1.0))).await);
    assert_eq!(payload.error_name, "Error");
    assert_eq!(payload.error_message, "value -1 is negative");
    assert_eq!(payload.error_stack.as_deref(), Some("caused by: checked by the validator"));
    assert_eq!(node.status(bad.subject()).await.unwrap(), Some(WorkflowStatus::Failed { error: payload }));

    // A failing guard, on a service's answer: the step is discarded (the stored state is the
    // one before it), the workflow fails, later events are ignored.
    let big = init(vec![600.0, 500.0]);
    let failed = node.run(big.clone()).await.unwrap();
    let payload = payload_of(&failed);
    assert_eq!(payload, handler_payload(|| Box::new(too_large(1100.0))).await);
    assert_eq!(
        (payload.error_name.as_str(), payload.error_message.as_str()),
        ("TooLarge", "the sum 1100 is over 1000")
    );
    let record = store.read(big.subject()).await.unwrap().unwrap().record;
    assert_eq!(record.state["value"], serde_json::json!(["adding"]));
    assert_eq!(record.state["context"]["sum"], 0.0, "the guard's step left the context as it was");
    assert_eq!(record.state["context"]["touched"], 101);
    let again = EventFactory::<AddV1>::new()
        .emits(
            Sum { sum: 2.0 },
            Event::builder().source("com.calc.add").to("arvo.orc.calc.average").subject(big.subject()),
        )
        .unwrap();
    let orchestrator = Orchestrator::builder(Arc::clone(&store)).machine::<Checked>().build().unwrap();
    assert!(orchestrator.execute(&again).await.unwrap().is_empty(), "a failed workflow ignores later events");
    assert!(matches!(node.status(big.subject()).await.unwrap(), Some(WorkflowStatus::Failed { .. })));

    // An error that is a violation: dead-lettered, nothing stored.
    let refused = init(vec![13.0, 1.0]);
    node.start(refused.clone()).await.unwrap();
    node.shutdown().await;
    let letters = node.take_dead_letters();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].event.id(), refused.id());
    match &letters[0].reason {
        DeadLetterReason::Violation(Violation::Execution { message, .. }) => {
            assert_eq!(message, "13 is not averaged here");
        }
        other => panic!("not an execution violation: {other:?}"),
    }
    assert_eq!(node.status(refused.subject()).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallible_actions_and_guards_on_in_memory() {
    fallible_on(Arc::new(InMemory::<WorkflowRecord>::new(InMemoryConfig::default()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallible_actions_and_guards_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteConfig::new(dir.path().join("fallible.db")).open::<WorkflowRecord>().unwrap();
    fallible_on(Arc::new(store)).await;
}

/// A failing action stops the step: later actions do not run and nothing changes.
#[test]
fn a_failed_step_changes_nothing() {
    // Starting fails: no instance.
    match MachineInstance::<Checked>::start(AverageInput { values: vec![-2.0, 1.0] }) {
        Err(MachineError::Action { kind: "action", name: "validate", error, .. }) => {
            assert_eq!(error.to_string(), "value -2 is negative");
        }
        other => panic!("{other:?}"),
    }
    let (mut m, requests) =
        MachineInstance::<Checked>::start(AverageInput { values: vec![700.0, 400.0] }).unwrap();
    assert_eq!(requests.len(), 1);
    let before = m.snapshot();
    let err = m.send(CheckedEvent::AddSum(Sum { sum: 1100.0 })).unwrap_err();
    assert!(matches!(&err, MachineError::Action { kind: "guard", name: "sum_ok", .. }), "{err:?}");
    assert_eq!(m.snapshot(), before, "state and context unchanged");
    // The instance still runs.
    m.send(CheckedEvent::AddSum(Sum { sum: 1000.0 })).unwrap();
    assert_eq!(m.output(), Some(AverageOutput { average: 500.0 }));
    // A violation stays a violation.
    assert!(matches!(
        MachineInstance::<Checked>::start(AverageInput { values: vec![13.0, 1.0] }),
        Err(MachineError::Violation(Violation::Execution { .. }))
    ));
}
