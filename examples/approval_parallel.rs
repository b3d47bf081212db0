//! Arvo's human-approval example (X2): a `machine!` workflow first asks a human for approval
//! (an `ask` **notification** to the `com.human.approval` contract, whose domain is
//! `human.interaction`), waits for the human's decision, a **signal** (`com.human.decision`),
//! then — if approved — calls the add and mul services in parallel (a `type: parallel` state with
//! one region per call) and completes with the sum and the product; a rejection ends in a final
//! `rejected` state whose output explains it. Every decision is recorded by an `audit`
//! notification, which a local audit handler receives; the workflow never waits for it.
//!
//! One [`Node`] runs the workflow, the services and the audit log. The question carries the
//! domain `human.interaction`, so the node does not publish it: it hands it to its `on_domained`
//! callback, the human's inbox. The human reads the workflow with `node.workflow(..)` and answers
//! with `node.signal::<DecisionV1>(subject, decision)`. Two workflows run: one the human
//! approves, one it rejects.
//!
//! Run with `cargo run --example approval_parallel`.

use std::sync::{Arc, Mutex, PoisonError};

use orchestrator::domain::Domain;
use orchestrator::handler::service::{ServiceHandler, ServiceInput};
use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DomainedEvent, Node, WorkflowStatus};
use orchestrator::transport::InProcessConfig;
use orchestrator::violation::Violation;
use orchestrator_examples::calculator::{AddV1, MulV1, Operands, Product, Sum, services};
// The audit log (a notification: its contract emits nothing), shared with the review workflow.
use orchestrator_examples::review::{AuditEntry, AuditLog, AuditLogV1};

/// The source of the client starting the workflows.
const CLIENT: &str = "com.example.client";

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
    /// A question to a human: accepts `com.human.approval` and emits nothing (a notification:
    /// the answer comes back as a signal). Its domain routes it to whatever serves human
    /// interactions, not to the local node.
    pub contract Approval {
        uri: "#/human/approval",
        type: "com.human.approval",
        domain: "human.interaction",
        versions: {
            ApprovalV1 = "1.0.0" { accepts: ApprovalQuestion, emits: {} },
        },
    }
}

orchestrator::contract! {
    /// The human's decision, sent to the running workflow: a signal.
    pub contract DecisionSignal {
        uri: "#/human/decision",
        type: "com.human.decision",
        versions: {
            DecisionV1 = "1.0.0" { accepts: Decision, emits: {} },
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
    out.ask(ApprovalQuestion {
        question: format!("May {} compute {} + {} and {} * {}?", ctx.requester, ctx.a, ctx.b, ctx.a, ctx.b),
    });
}

fn record_decision(ctx: &mut Gate, event: &GatedFlowEvent, out: &mut GatedFlowOutbox<'_>) {
    if let GatedFlowEvent::Decision(d) = event {
        ctx.approved = Some(d.approved);
        let verdict = if d.approved { "approved" } else { "rejected" };
        out.audit(AuditEntry { note: format!("{}'s request {verdict}", ctx.requester) });
    }
}

fn is_approved(_: &Gate, event: &GatedFlowEvent) -> bool {
    matches!(event, GatedFlowEvent::Decision(Decision { approved: true }))
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
        GatedFlowEvent::AddError(e) | GatedFlowEvent::MulError(e) => {
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
    /// Asks a human, waits for the decision signal, then adds and multiplies in parallel.
    pub machine GatedFlow {
        contract: GatedV1,
        services: { add: AddV1, mul: MulV1 },
        signals: { decision: DecisionV1 },
        notifications: { ask: ApprovalV1, audit: AuditLogV1 },
        context: Gate,
        init: |input| Gate { requester: input.requester.clone(), a: input.a, b: input.b, ..Gate::default() },
        output: output,
        states: {
            awaiting_approval: {
                entry: [ask_human],
                on: {
                    decision::Decision => [
                        { target: computing, guard: is_approved, actions: [record_decision] },
                        { target: rejected, actions: [record_decision] },
                    ],
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

/// The human's inbox: the questions handed to the node's `on_domained` callback (never
/// published, as they carry the `human.interaction` domain).
async fn inbox(domained: DomainedEvent, questions: Arc<Mutex<Vec<Event>>>) {
    questions.lock().unwrap_or_else(PoisonError::into_inner).push(domained.event);
}

/// The audit log: a handler of the `audit` notifications, which keeps their notes.
fn audit_log(notes: Arc<Mutex<Vec<String>>>) -> Result<ServiceHandler<AuditLog>, Violation> {
    ServiceHandler::<AuditLog>::builder()
        .version(move |input: ServiceInput<AuditLogV1>| {
            let notes = Arc::clone(&notes);
            async move {
                notes.lock().unwrap_or_else(PoisonError::into_inner).push(input.payload.note);
                Ok(())
            }
        })
        .build()
}

/// Waits for the question of workflow `subject` in the human's inbox.
async fn question_for(
    questions: &Mutex<Vec<Event>>,
    subject: &str,
) -> Result<Event, Box<dyn std::error::Error>> {
    for _ in 0..1_000 {
        let found = {
            let mut inbox = questions.lock().unwrap_or_else(PoisonError::into_inner);
            inbox.iter().position(|q| q.subject() == subject).map(|i| inbox.remove(i))
        };
        if let Some(question) = found {
            return Ok(question);
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    Err(format!("no question for workflow {subject}").into())
}

/// Prints the timeline: the transport's log, with the question (never published, so not in
/// the log) placed right before the decision signal.
fn print_timeline(log: &[Event], question: &Event) -> Result<(), serde_json::Error> {
    let mut timeline = Vec::with_capacity(log.len() + 1);
    for event in log {
        if event.r#type() == "com.human.decision" {
            timeline.push(question.clone());
        }
        timeline.push(event.clone());
    }
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
    // Every request and notification gets the orchestrator's service domains.
    // `FromEventContract` resolves to each contract's domain: none for add, mul and the audit
    // log (local), `human.interaction` for the question.
    let workflow = Orchestrator::builder(Arc::clone(&store))
        .machine::<GatedFlow>()
        .service_domains([Domain::FromEventContract]);
    let questions = Arc::new(Mutex::new(Vec::new()));
    let notes = Arc::new(Mutex::new(Vec::new()));
    // Nobody here serves the questions: they carry a domain and go to `on_domained`, so their
    // topic is declared remote (the build would fail otherwise).
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .orchestrator(workflow)
        .service(services::add()?)
        .service(services::mul()?)
        .service(audit_log(Arc::clone(&notes))?)
        .remote("com.human.approval")
        .on_domained({
            let questions = Arc::clone(&questions);
            move |domained, _| inbox(domained, Arc::clone(&questions))
        })
        .client(CLIENT)
        .build()
        .await?;

    let cases = [("alice", 6.0, 7.0, true), ("mallory", 2.0, 3.0, false)];
    for (requester, a, b, approve) in cases {
        println!("workflow requested by {requester} (a = {a}, b = {b}):");
        let init = EventFactory::<GatedV1>::new()
            .init(GatedInput { requester: requester.to_owned(), a, b }, Event::builder().source(CLIENT))?;
        let subject = node.start(init).await?;
        // The human reads the question, looks the workflow up, and answers with a signal.
        let question = question_for(&questions, &subject).await?;
        println!("  the human is asked: {}", question.data()["question"]);
        let view = node.workflow(&subject).await?.ok_or("unknown workflow")?;
        let gate = view.context::<Gate>()?;
        println!("  workflow: {} in {:?}, context: {gate:?}", view.status(), view.active_paths());
        if view.active_paths() != ["awaiting_approval"] || gate.approved.is_some() {
            return Err(format!("the workflow of {requester} is not waiting for a decision").into());
        }
        node.signal::<DecisionV1>(&subject, Decision { approved: approve }).await?;
        let done = node.wait(&subject).await;
        node.transport().wait_idle().await;
        print_timeline(&node.transport().take_log(), &question)?;
        let result: GatedOutput = serde_json::from_value(done.data_value().clone())?;
        let view = node.workflow(&subject).await?.ok_or("unknown workflow")?;
        println!("  final: {} in {:?}", view.status(), view.active_paths());
        println!("  result: {}", serde_json::to_string(done.data())?);
        let expected = if approve { (true, Some(a + b), Some(a * b)) } else { (false, None, None) };
        if (result.approved, result.sum, result.product) != expected {
            return Err(format!("unexpected result for {requester}: {result:?}").into());
        }
        if view.status() != &WorkflowStatus::Done || view.context::<Gate>()?.approved != Some(approve) {
            return Err(format!("the workflow of {requester} is not done").into());
        }
        println!();
    }
    let notes = notes.lock().unwrap_or_else(PoisonError::into_inner).clone();
    println!("audit log: {notes:?}");
    if notes != ["alice's request approved", "mallory's request rejected"] {
        return Err(format!("unexpected audit log: {notes:?}").into());
    }
    if !node.take_dead_letters().is_empty() {
        return Err("some events were dead-lettered".into());
    }
    node.shutdown().await;
    Ok(())
}
