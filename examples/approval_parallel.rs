//! Arvo's human-approval example (X2): a `machine!` workflow first asks a human for approval
//! (a request to the `com.human.approval` contract, whose domain is `human.interaction`), waits
//! for the answer, then — if approved — calls the add and mul services in parallel (a
//! `type: parallel` state with one region per call) and completes with the sum and the product;
//! a rejection ends in a final `rejected` state whose output explains it.
//!
//! One [`Node`] runs the workflow and the services. The approval request carries the domain
//! `human.interaction`, so the node does not publish it: it hands it to its `on_domained`
//! callback, which plays the human and publishes the answer through the node's transport. Two
//! workflows run: one the human approves, one it rejects.
//!
//! Run with `cargo run --example approval_parallel`.

use std::sync::{Arc, Mutex, PoisonError};

use orchestrator::domain::Domain;
use orchestrator::machine::{MachineInstance, Snapshot};
use orchestrator::memory::{InMemory, InMemoryConfig, Memory, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DomainedEvent, Node, WorkflowStatus};
use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
use orchestrator_examples::calculator::{AddV1, MulV1, Operands, Product, Sum, services};

/// The source of the client starting the workflows.
const CLIENT: &str = "com.example.client";
/// The source of the human's answers.
const HUMAN: &str = "com.human.approver";

/// What the human is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalQuestion {
    /// The question, in plain words.
    pub question: String,
}

/// The human's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// Whether the computation may run.
    pub approved: bool,
}

orchestrator::contract! {
    /// A human approval: accepts `com.human.approval`, emits `evt.human.approval.success`. Its
    /// domain routes requests to whatever serves human interactions, not to the local node.
    pub contract Approval {
        uri: "#/human/approval",
        type: "com.human.approval",
        domain: "human.interaction",
        versions: {
            ApprovalV1 = "1.0.0" {
                accepts: ApprovalQuestion,
                emits: { "evt.human.approval.success" => Decision },
            },
        },
    }
}

/// Starts a gated computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GatedInput {
    /// Who asks for the computation.
    pub requester: String,
    /// Left operand.
    pub a: f64,
    /// Right operand.
    pub b: f64,
}

/// The outcome of a gated computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GatedOutput {
    /// Whether the human approved the computation.
    pub approved: bool,
    /// `a + b`, when computed.
    pub sum: Option<f64>,
    /// `a * b`, when computed.
    pub product: Option<f64>,
    /// What happened, in plain words.
    pub message: String,
}

orchestrator::orchestrator_contract! {
    /// Computes `a + b` and `a * b` once a human has approved it.
    pub contract Gated {
        uri: "#/orc/calc/gated",
        name: "calc.gated",
        versions: {
            GatedV1 = "1.0.0" { init: GatedInput, complete: GatedOutput },
        },
    }
}

/// The workflow's context.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Gate {
    /// Who asks.
    pub requester: String,
    /// Left operand.
    pub a: f64,
    /// Right operand.
    pub b: f64,
    /// The human's decision, once known.
    pub approved: Option<bool>,
    /// The sum, once known.
    pub sum: Option<f64>,
    /// The product, once known.
    pub product: Option<f64>,
    /// The error of a failed service call.
    pub error: Option<String>,
}

fn ask_human(ctx: &mut Gate, _: &GatedFlowEvent, out: &mut GatedFlowOutbox<'_>) {
    out.approval(ApprovalQuestion {
        question: format!("May {} compute {} + {} and {} * {}?", ctx.requester, ctx.a, ctx.b, ctx.a, ctx.b),
    });
}

fn record_decision(ctx: &mut Gate, event: &GatedFlowEvent, _: &mut GatedFlowOutbox<'_>) {
    if let GatedFlowEvent::ApprovalDecision(d) = event {
        ctx.approved = Some(d.approved);
    }
}

fn is_approved(_: &Gate, event: &GatedFlowEvent) -> bool {
    matches!(event, GatedFlowEvent::ApprovalDecision(Decision { approved: true }))
}

fn ask_add(ctx: &mut Gate, _: &GatedFlowEvent, out: &mut GatedFlowOutbox<'_>) {
    out.add(Operands { a: ctx.a, b: ctx.b });
}

fn ask_mul(ctx: &mut Gate, _: &GatedFlowEvent, out: &mut GatedFlowOutbox<'_>) {
    out.mul(Operands { a: ctx.a, b: ctx.b });
}

fn store(ctx: &mut Gate, event: &GatedFlowEvent, _: &mut GatedFlowOutbox<'_>) {
    match event {
        GatedFlowEvent::AddSum(s) => ctx.sum = Some(s.sum),
        GatedFlowEvent::MulProduct(p) => ctx.product = Some(p.product),
        GatedFlowEvent::ApprovalError(e) | GatedFlowEvent::AddError(e) | GatedFlowEvent::MulError(e) => {
            ctx.error = Some(format!("{}: {}", e.error_name, e.error_message));
        }
        _ => {}
    }
}

fn output(ctx: &Gate) -> GatedOutput {
    let message = match (ctx.approved, &ctx.error) {
        (_, Some(error)) => format!("a service failed: {error}"),
        (Some(true), None) => format!("approved for {}: computed the sum and the product", ctx.requester),
        (Some(false), None) => {
            format!("rejected: the human did not approve {}'s request, nothing was computed", ctx.requester)
        }
        (None, None) => "no decision".to_owned(),
    };
    GatedOutput { approved: ctx.approved == Some(true), sum: ctx.sum, product: ctx.product, message }
}

orchestrator::machine! {
    /// Asks a human, then adds and multiplies in parallel.
    pub machine GatedFlow {
        contract: GatedV1,
        services: { approval: ApprovalV1, add: AddV1, mul: MulV1 },
        context: Gate,
        init: |input| Gate { requester: input.requester.clone(), a: input.a, b: input.b, ..Gate::default() },
        output: output,
        states: {
            awaiting_approval: {
                entry: [ask_human],
                on: {
                    approval::Decision => [
                        { target: computing, guard: is_approved, actions: [record_decision] },
                        { target: rejected, actions: [record_decision] },
                    ],
                    approval::error => { target: failed, actions: [store] },
                },
            },
            computing: {
                type: parallel,
                states: {
                    adding: {
                        states: {
                            waiting: {
                                entry: [ask_add],
                                on: { add::Sum => { target: computing.adding.done, actions: [store] } },
                            },
                            done: { type: final },
                        },
                    },
                    multiplying: {
                        states: {
                            waiting: {
                                entry: [ask_mul],
                                on: { mul::Product => { target: computing.multiplying.done, actions: [store] } },
                            },
                            done: { type: final },
                        },
                    },
                },
                on: {
                    add::error => { target: failed, actions: [store] },
                    mul::error => { target: failed, actions: [store] },
                },
                on_done: done,
            },
            done: { type: final },
            rejected: { type: final },
            failed: { type: final },
        },
    }
}

/// Plays the human: approves everyone but mallory, and answers through the node's transport.
async fn human(domained: DomainedEvent, transport: Arc<InProcessTransport>, seen: Arc<Mutex<Vec<Event>>>) {
    let request = domained.event;
    let question = request.data()["question"].as_str().unwrap_or_default().to_owned();
    let approved = !question.contains("mallory");
    let reply_to = request.redirectto().unwrap_or(request.source()).to_owned();
    let answer = EventFactory::<ApprovalV1>::new().emits(
        Decision { approved },
        Event::builder().source(HUMAN).subject(request.subject()).to(reply_to).parentid(request.id()),
    );
    seen.lock().unwrap_or_else(PoisonError::into_inner).push(request);
    match answer {
        Ok(answer) => {
            if let Err(e) = transport.publish(vec![answer]).await {
                eprintln!("the human's answer was refused: {e}");
            }
        }
        Err(e) => eprintln!("the human's answer cannot be built: {e}"),
    }
}

/// Prints the timeline: the transport's log, each domained event (never published, so not in
/// the log) placed right before the answer to it.
fn print_timeline(log: &[Event], domained: &mut Vec<Event>) -> Result<(), serde_json::Error> {
    let mut timeline = Vec::with_capacity(log.len() + domained.len());
    for event in log {
        if let Some(i) = domained.iter().position(|d| event.parentid() == Some(d.id())) {
            timeline.push(domained.remove(i));
        }
        timeline.push(event.clone());
    }
    timeline.append(domained);
    println!("  timeline:");
    for (i, event) in timeline.iter().enumerate() {
        println!(
            "    {i:>2}. {:<28} {:<22} -> {:<22} domain={:<17} {}",
            event.r#type(),
            event.source(),
            event.to().unwrap_or("-"),
            event.domain().unwrap_or("-"),
            serde_json::to_string(event.data())?
        );
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(InMemory::<WorkflowRecord>::new(InMemoryConfig {
        retention: Retention::Keep,
        ..InMemoryConfig::default()
    }));
    // Machines cannot set a domain per request: every service request gets the orchestrator's
    // service domains. `FromEventContract` resolves to each service contract's domain: none for
    // add and mul (local), `human.interaction` for the approval.
    let workflow = Orchestrator::builder(Arc::clone(&store))
        .machine::<GatedFlow>()
        .service_domains([Domain::FromEventContract]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    // The approval service is served by nobody here: its requests carry a domain and go to
    // `on_domained`, so it is declared remote (the build would fail otherwise).
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .orchestrator(workflow)
        .service(services::add()?)
        .service(services::mul()?)
        .remote("com.human.approval")
        .on_domained({
            let seen = Arc::clone(&seen);
            move |domained, transport| human(domained, transport, Arc::clone(&seen))
        })
        .client(CLIENT)
        .build()
        .await?;

    let cases = [("alice", 6.0, 7.0, true), ("mallory", 2.0, 3.0, false)];
    for (requester, a, b, expect_approved) in cases {
        println!("workflow requested by {requester} (a = {a}, b = {b}):");
        let init = EventFactory::<GatedV1>::new()
            .init(GatedInput { requester: requester.to_owned(), a, b }, Event::builder().source(CLIENT))?;
        let done = node.run(init).await?;
        node.transport().wait_idle().await;
        let mut domained = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
        print_timeline(&node.transport().take_log(), &mut domained)?;
        let result: GatedOutput = serde_json::from_value(done.data_value().clone())?;
        // The machine's final state, restored from the snapshot the orchestrator persisted.
        let record = node.store().read(done.subject()).await?.ok_or("no workflow record")?.record;
        let snapshot = Snapshot::<Gate>::deserialize(&record.state)?;
        let machine = MachineInstance::<GatedFlow>::restore(snapshot)?;
        println!("  final state: {:?} (workflow done: {})", machine.active_paths(), record.done);
        println!("  result: {}", serde_json::to_string(done.data())?);
        let expected = if expect_approved { (true, Some(a + b), Some(a * b)) } else { (false, None, None) };
        if (result.approved, result.sum, result.product) != expected {
            return Err(format!("unexpected result for {requester}: {result:?}").into());
        }
        if WorkflowStatus::of(&record) != WorkflowStatus::Done {
            return Err(format!("the workflow of {requester} is not done").into());
        }
        println!();
    }
    if !node.take_dead_letters().is_empty() {
        return Err("some events were dead-lettered".into());
    }
    node.shutdown().await;
    Ok(())
}
