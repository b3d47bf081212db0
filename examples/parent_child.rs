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
//! Last, a third parent version (3.0.0) starts a child that waits for an approval that never
//! comes; the example cancels the parent with its children while the child runs
//! ([`Node::cancel`]), prints the cancellation event the client gets and checks that both
//! workflows are cancelled.
//!
//! Run with `cargo run --example parent_child`.

use std::sync::Arc;

use orchestrator::contract::SystemErrorPayload;
use orchestrator::memory::{InMemory, InMemoryConfig, Retention, WorkflowFilter, WorkflowIndex};
use orchestrator::orchestration::cancel::CancelRequest;
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
            CounterV3 = "3.0.0" { init: CountInput, complete: CountOutput },
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
            ParentV3 = "3.0.0" { init: ParentInput, complete: ParentOutput },
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

orchestrator::machine! {
    /// Counter 3.0.0: waits a day for an approval before it counts (it is cancelled long before).
    pub machine Patient {
        contract: CounterV3,
        context: Count,
        init: |input| Count { value: input.value, step: input.step },
        output: |ctx| CountOutput { value: ctx.value },
        states: {
            waiting: { after: { 86400000 => { target: done, actions: [|ctx, _, _| ctx.value += ctx.step] } } },
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

orchestrator::machine! {
    /// Parent 3.0.0: runs counter 3.0.0 (the patient one) as a child workflow.
    pub machine ParentThree {
        contract: ParentV3,
        services: { counter: CounterV3 },
        context: Parent,
        init: |input| Parent { before: input.value, after: 0.0 },
        output: |ctx| ParentOutput { before: ctx.before, after: ctx.after },
        states: {
            waiting: {
                entry: [|ctx, _, out| out.counter(CountInput { value: ctx.before, step: 1.0 })],
                on: {
                    counter::CountOutput => {
                        target: done,
                        actions: [|ctx, event, _| if let ParentThreeEvent::CounterCountOutput(o) = event { ctx.after = o.value }],
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
    Orchestrator::builder(Arc::clone(store))
        .machine::<ParentOne>()
        .machine::<ParentTwo>()
        .machine::<ParentThree>()
}

/// The child orchestrator: both versions served side by side.
fn counters(store: &Arc<Mem>) -> OrchestratorBuilder<Arc<Mem>> {
    Orchestrator::builder(Arc::clone(store))
        .machine::<Increment>()
        .machine::<Decrement>()
        .machine::<Patient>()
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
    cancel_with_children(
        &node,
        &store,
        EventFactory::<ParentV3>::new().init(ParentInput { value: 10.0 }, client())?,
    )
    .await?;
    if !node.take_dead_letters().is_empty() {
        return Err("dead letters".into());
    }
    node.shutdown().await;
    Ok(())
}

/// Starts parent 3.0.0, waits until its child waits for its timer, cancels the parent with its
/// children, and checks that both are cancelled.
async fn cancel_with_children(
    node: &Node<Mem, InProcessTransport>,
    store: &Arc<Mem>,
    init: Event,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("\nparent 3.0.0 (subject {}), cancelled with its children:", subject_info(&init));
    let parent = node.start(init).await?;
    let children = WorkflowFilter { parent: Some(parent.clone()), ..WorkflowFilter::new() };
    let child = loop {
        let listed = store.list(&children).await?.items;
        if let Some(child) = listed.into_iter().find(|c| c.status.as_str() == "waiting") {
            break child.id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    };
    node.cancel(&parent, CancelRequest::new().reason("no longer needed").with_children()).await?;
    let ended = node.wait(&parent).await;
    let payload: SystemErrorPayload = serde_json::from_value(ended.data_value().clone())?;
    println!(
        "  the client got {} -> {}: {}",
        ended.r#type(),
        ended.to().unwrap_or("-"),
        serde_json::to_string(ended.data())?
    );
    if !payload.is_cancellation() || payload.error_message != "no longer needed" {
        return Err(format!("not a cancellation: {payload:?}").into());
    }
    let cancelled = WorkflowStatus::Cancelled { reason: Some("no longer needed".into()) };
    for _ in 0..1_000 {
        if node.status(&child).await?.as_ref() == Some(&cancelled) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    node.transport().wait_idle().await;
    print_log(node.transport());
    for (what, subject) in [("parent", &parent), ("child", &child)] {
        let status = node.status(subject).await?;
        println!(
            "  {what} {}: {}",
            short(subject),
            status.as_ref().map_or("unknown".to_owned(), ToString::to_string)
        );
        if status.as_ref() != Some(&cancelled) {
            return Err(format!("the {what} is not cancelled: {status:?}").into());
        }
    }
    Ok(())
}

/// Prints the transport's log.
fn print_log(transport: &InProcessTransport) {
    for (i, event) in transport.take_log().iter().enumerate() {
        println!(
            "  {i:>2}. {:<34} {:<21} -> {:<21} {}",
            event.r#type(),
            event.source(),
            event.to().unwrap_or("-"),
            subject_info(event)
        );
    }
}

/// `name@version #execid` of a workflow subject.
fn short(subject: &str) -> String {
    match orchestrator::subject::Subject::parse(subject) {
        Ok(s) => format!(
            "{}@{} #{}",
            s.orchestrator_name(),
            s.orchestrator_version(),
            s.execution_id().chars().take(8).collect::<String>()
        ),
        Err(_) => subject.to_owned(),
    }
}
