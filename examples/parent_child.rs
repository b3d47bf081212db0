//! Arvo's parent/child example (X4): a parent workflow declared with `machine!` starts a CHILD
//! orchestration (the child's orchestrator contract is one of the parent's services) and waits for
//! its completion (`arvo.orc.demo.counter.done`, delivered on the parent's own subject). The child
//! contract has two versions served side by side by one orchestrator: 1.0.0 increments, 2.0.0
//! decrements (both through the add service). The parent also has two versions, each calling the
//! child version its service contract lists; the example runs both and prints the timelines.
//!
//! One [`Node`] runs both orchestrators and the add service over one store; its in-process
//! transport logs every event it accepts.
//!
//! Run with `cargo run --example parent_child`.

use std::sync::Arc;

use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::{Orchestrator, OrchestratorBuilder, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, WorkflowStatus};
use orchestrator::transport::{InProcessConfig, InProcessTransport};
use orchestrator_examples::calculator::{AddV1, Operands, Sum, services};

// ---------------------------------------------------------------------------------------------
// Contracts

/// Starts a counter workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CountInput {
    /// The starting value.
    pub value: f64,
    /// How much to move it by.
    pub step: f64,
}

/// The counter's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CountOutput {
    /// The value after the step.
    pub value: f64,
}

orchestrator::orchestrator_contract! {
    /// The child workflow: 1.0.0 increments the value, 2.0.0 decrements it.
    pub contract CounterContract {
        uri: "#/orc/demo/counter",
        name: "demo.counter",
        versions: {
            CounterV1 = "1.0.0" { init: CountInput, complete: CountOutput },
            CounterV2 = "2.0.0" { init: CountInput, complete: CountOutput },
        },
    }
}

/// Starts the parent workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParentInput {
    /// The value handed to the child.
    pub value: f64,
}

/// The parent's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParentOutput {
    /// The value sent to the child.
    pub before: f64,
    /// The value the child completed with.
    pub after: f64,
}

orchestrator::orchestrator_contract! {
    /// The parent workflow: 1.0.0 calls counter 1.0.0, 2.0.0 calls counter 2.0.0.
    pub contract ParentContract {
        uri: "#/orc/demo/parent",
        name: "demo.parent",
        versions: {
            ParentV1 = "1.0.0" { init: ParentInput, complete: ParentOutput },
            ParentV2 = "2.0.0" { init: ParentInput, complete: ParentOutput },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Child machines: two versions of `arvo.orc.demo.counter`

/// The counter's context.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Count {
    /// The value.
    pub value: f64,
    /// The step.
    pub step: f64,
}

orchestrator::machine! {
    /// Counter 1.0.0: `value + step`.
    pub machine Increment {
        contract: CounterV1,
        services: { add: AddV1 },
        context: Count,
        init: |input| Count { value: input.value, step: input.step },
        output: |ctx| CountOutput { value: ctx.value },
        states: {
            adding: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.value, b: ctx.step })],
                on: {
                    add::Sum => {
                        target: done,
                        actions: [|ctx, event, _| if let IncrementEvent::AddSum(s) = event { ctx.value = s.sum }],
                    },
                },
            },
            done: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Counter 2.0.0: `value - step`.
    pub machine Decrement {
        contract: CounterV2,
        services: { add: AddV1 },
        context: Count,
        init: |input| Count { value: input.value, step: input.step },
        output: |ctx| CountOutput { value: ctx.value },
        states: {
            subtracting: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.value, b: -ctx.step })],
                on: {
                    add::Sum => {
                        target: done,
                        actions: [|ctx, event, _| if let DecrementEvent::AddSum(s) = event { ctx.value = s.sum }],
                    },
                },
            },
            done: { type: final },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Parent machines: each version lists the child version it calls

/// The parent's context.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Parent {
    /// The value sent to the child.
    pub before: f64,
    /// The child's result.
    pub after: f64,
}

orchestrator::machine! {
    /// Parent 1.0.0: runs counter 1.0.0 as a child workflow.
    pub machine ParentOne {
        contract: ParentV1,
        services: { counter: CounterV1 },
        context: Parent,
        init: |input| Parent { before: input.value, after: 0.0 },
        output: |ctx| ParentOutput { before: ctx.before, after: ctx.after },
        states: {
            waiting: {
                // The outbox method takes the child's init payload and sets `parentSubject$$`.
                entry: [|ctx, _, out| out.counter(CountInput { value: ctx.before, step: 1.0 })],
                on: {
                    counter::CountOutput => {
                        target: done,
                        actions: [|ctx, event, _| if let ParentOneEvent::CounterCountOutput(o) = event { ctx.after = o.value }],
                    },
                    counter::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Parent 2.0.0: runs counter 2.0.0 as a child workflow.
    pub machine ParentTwo {
        contract: ParentV2,
        services: { counter: CounterV2 },
        context: Parent,
        init: |input| Parent { before: input.value, after: 0.0 },
        output: |ctx| ParentOutput { before: ctx.before, after: ctx.after },
        states: {
            waiting: {
                entry: [|ctx, _, out| out.counter(CountInput { value: ctx.before, step: 1.0 })],
                on: {
                    counter::CountOutput => {
                        target: done,
                        actions: [|ctx, event, _| if let ParentTwoEvent::CounterCountOutput(o) = event { ctx.after = o.value }],
                    },
                    counter::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

// ---------------------------------------------------------------------------------------------

type Mem = InMemory<WorkflowRecord>;

/// The client starting the parents: their completions are addressed here.
const CLIENT: &str = "com.example.client";

/// The parent orchestrator: both versions served side by side.
fn parents(store: &Arc<Mem>) -> OrchestratorBuilder<Arc<Mem>> {
    Orchestrator::builder(Arc::clone(store)).machine::<ParentOne>().machine::<ParentTwo>()
}

/// The child orchestrator: both versions served side by side.
fn counters(store: &Arc<Mem>) -> OrchestratorBuilder<Arc<Mem>> {
    Orchestrator::builder(Arc::clone(store)).machine::<Increment>().machine::<Decrement>()
}

/// `name@version #execid` of an event's orchestration subject.
fn subject_info(event: &Event) -> String {
    match event.orchestration_subject() {
        Ok(s) => {
            let id: String = s.execution_id().chars().take(8).collect();
            format!("{}@{} #{id}", s.orchestrator_name(), s.orchestrator_version())
        }
        Err(_) => format!("(not an orchestration subject: {})", event.subject()),
    }
}

/// Prints the transport's log, checks the child completed on the parent's subject and returns
/// the child orchestration's version seen in the log.
fn print_timeline(
    transport: &InProcessTransport,
    parent_subject: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let mut child_version = None;
    for (i, event) in transport.take_log().iter().enumerate() {
        println!(
            "  {i:>2}. {:<26} {:<21} -> {:<21} {}",
            event.r#type(),
            event.source(),
            event.to().unwrap_or("-"),
            subject_info(event)
        );
        if event.r#type() == "arvo.orc.demo.counter" {
            let subject = event.orchestration_subject()?;
            if event.data()["parentSubject$$"].as_str().is_none() {
                return Err("the child's init carries no parentSubject$$".into());
            }
            child_version = Some(subject.orchestrator_version().to_owned());
        }
        if event.r#type() == "arvo.orc.demo.counter.done" && event.subject() != parent_subject {
            return Err("the child's completion is not on the parent's subject".into());
        }
    }
    child_version.ok_or_else(|| "no child workflow was started".into())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store =
        Arc::new(Mem::new(InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() }));
    // Both versions of each workflow are served side by side by one orchestrator.
    println!(
        "parent versions: {:?}, counter versions: {:?}",
        parents(&store).build()?.versions(),
        counters(&store).build()?.versions()
    );
    // The counter orchestrator is one of the parents' services: the node's build checks it has
    // a handler here, as it checks the add service the counters call.
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .orchestrator(parents(&store))
        .orchestrator(counters(&store))
        .service(services::add()?)
        .client(CLIENT)
        .build()
        .await?;
    let client = || Event::builder().source(CLIENT);

    let runs = [
        ("1.0.0", EventFactory::<ParentV1>::new().init(ParentInput { value: 10.0 }, client())?, 11.0),
        ("2.0.0", EventFactory::<ParentV2>::new().init(ParentInput { value: 10.0 }, client())?, 9.0),
    ];
    for (version, init, expected) in runs {
        println!("\nparent {version} (subject {}):", subject_info(&init));
        let parent_subject = init.subject().to_owned();
        let done = node.run(init).await?;
        node.transport().wait_idle().await;
        let child_version = print_timeline(node.transport(), &parent_subject)?;
        let output: ParentOutput = serde_json::from_value(done.data_value().clone())?;
        println!(
            "  result: {} (child counter {child_version}: {} -> {})",
            serde_json::to_string(done.data())?,
            output.before,
            output.after
        );
        if done.r#type() != "arvo.orc.demo.parent.done" || done.subject() != parent_subject {
            return Err(format!("unexpected completion {} on {}", done.r#type(), done.subject()).into());
        }
        if child_version != version || output.after != expected {
            return Err(format!("parent {version}: child {child_version} gave {}", output.after).into());
        }
        if node.status(&parent_subject).await? != Some(WorkflowStatus::Done) {
            return Err(format!("parent {version}: its record is not done").into());
        }
    }
    if !node.take_dead_letters().is_empty() {
        return Err("dead letters".into());
    }
    node.shutdown().await;
    Ok(())
}
