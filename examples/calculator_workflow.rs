//! Arvo's calculator example (X1): an averaging workflow declared with `machine!` calls the add
//! and divide services; everything runs in-process on one [`Node`] (its in-process transport
//! logs every event it accepts), and the example prints the timeline of events and the
//! workflow's result. A second workflow, with too many numbers, is refused by a fallible
//! action: it fails with the action's error, as a failing service would. The completion sets
//! its execution units (one per service call) and its id.
//!
//! Run with `cargo run --example calculator_workflow`.

use std::sync::Arc;

use orchestrator::emit::NamedError;
use orchestrator::machine::Completion;
use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, WorkflowStatus};
use orchestrator::transport::InProcessConfig;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, DivideRequest, DivideV1, Operands, Quotient, Sum, services,
};

/// The workflow's context: the numbers, their running sum and the errors met.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Averaging {
    /// The numbers to average.
    pub values: Vec<f64>,
    /// How many have been added so far.
    pub added: usize,
    /// Their sum so far.
    pub sum: f64,
    /// The result.
    pub average: f64,
    /// The workflow's subject.
    pub workflow: String,
}

/// The most numbers one workflow averages.
const MAX_VALUES: usize = 10;

/// Checks the input before the first request: too many numbers fail the workflow with an
/// `errorName` of `TooManyValues` (a fallible action: an `Err` stops the step, changes nothing).
fn validate(
    ctx: &mut Averaging,
    _: &AverageFlowEvent,
    _: &mut AverageFlowOutbox<'_>,
) -> Result<(), NamedError> {
    if ctx.values.len() > MAX_VALUES {
        return Err(NamedError::new(
            "TooManyValues",
            format!("{} numbers given, at most {MAX_VALUES} are averaged", ctx.values.len()),
        ));
    }
    Ok(())
}

/// The completion: the average, its event's id made from the workflow's, and one execution unit
/// per service call.
fn summary(ctx: &Averaging) -> Completion<AverageOutput> {
    Completion::new(AverageOutput { average: ctx.average })
        .id(format!("{}.done", ctx.workflow))
        .execution_units((ctx.values.len() + 1) as f64)
}

/// Records the sum a response carries, then asks for the next addition if numbers are left.
fn add_next(ctx: &mut Averaging, event: &AverageFlowEvent, out: &mut AverageFlowOutbox<'_>) {
    if let AverageFlowEvent::AddSum(s) = event {
        ctx.sum = s.sum;
        ctx.added += 1;
    }
    if let Some(next) = ctx.values.get(ctx.added) {
        out.add(Operands { a: ctx.sum, b: *next });
    }
}

/// True when the response being handled is the sum of the last number.
fn is_last(ctx: &Averaging, _: &AverageFlowEvent) -> bool {
    ctx.added + 1 >= ctx.values.len()
}

fn divide(ctx: &mut Averaging, _: &AverageFlowEvent, out: &mut AverageFlowOutbox<'_>) {
    out.divide(DivideRequest { numerator: ctx.sum, denominator: ctx.values.len() as f64 });
}

orchestrator::machine! {
    /// Adds the numbers one by one with the add service, then divides by their count.
    pub machine AverageFlow {
        contract: AverageV1,
        services: { add: AddV1, divide: DivideV1 },
        context: Averaging,
        init: |input, meta| Averaging {
            values: input.values.clone(),
            workflow: meta.subject.clone().unwrap_or_default(),
            ..Averaging::default()
        },
        output: summary,
        states: {
            adding: {
                entry: [validate, add_next],
                on: {
                    add::Sum => [
                        { target: dividing, guard: is_last, actions: [add_next] },
                        { actions: [add_next] },
                    ],
                    add::error => failed,
                },
            },
            dividing: {
                entry: [divide],
                on: {
                    divide::Quotient => {
                        target: done,
                        actions: [|ctx, event, _| if let AverageFlowEvent::DivideQuotient(q) = event {
                            ctx.average = q.quotient
                        }],
                    },
                    divide::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

/// The client starting the workflow: its completion is addressed here.
const CLIENT: &str = "com.example.client";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(InMemory::<WorkflowRecord>::new(InMemoryConfig {
        retention: Retention::Keep,
        ..InMemoryConfig::default()
    }));
    // One node: the two services, the orchestrator (the build fails if a service the machine
    // calls has no handler), and the client topic whose completions `run` waits for. The
    // transport logs every event it accepts, for the timeline.
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .service(services::add()?)
        .service(services::divide()?)
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<AverageFlow>())
        .client(CLIENT)
        .build()
        .await?;

    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![3.0, 5.0, 10.0] }, Event::builder().source(CLIENT))?;
    let done = node.run(init.clone()).await?;
    node.transport().wait_idle().await;

    println!("timeline:");
    for (i, event) in node.transport().take_log().iter().enumerate() {
        println!(
            "  {i:>2}. {:<28} {:<22} -> {:<22} {}",
            event.r#type(),
            event.source(),
            event.to().unwrap_or("-"),
            serde_json::to_string(event.data())?
        );
    }
    println!("result: {}", serde_json::to_string(done.data())?);
    let status = node.status(init.subject()).await?.ok_or("no workflow record")?;
    println!("status: {status}");

    let output: AverageOutput = serde_json::from_value(done.data_value().clone())?;
    if output.average != 6.0 || status != WorkflowStatus::Done {
        return Err(format!("unexpected result {output:?} ({status})").into());
    }
    // The completion options: the id and the execution units the output set.
    println!("completion: id {}, execution units {:?}", done.id(), done.executionunits());
    if done.id() != format!("{}.done", init.subject()) || done.executionunits() != Some(4.0) {
        return Err(format!("unexpected completion options: {done:?}").into());
    }

    // Too many numbers: the `validate` action fails the workflow with its error.
    let too_many = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![1.0; MAX_VALUES + 1] }, Event::builder().source(CLIENT))?;
    let failed = node.run(too_many.clone()).await?;
    println!("refused: {} {}", failed.r#type(), serde_json::to_string(failed.data())?);
    let status = node.status(too_many.subject()).await?.ok_or("no workflow record")?;
    println!("status: {status}");
    match status {
        WorkflowStatus::Failed { error } if error.error_name == "TooManyValues" => {}
        other => return Err(format!("unexpected status of the refused workflow: {other}").into()),
    }
    if !node.take_dead_letters().is_empty() {
        return Err("some events were dead-lettered".into());
    }
    node.shutdown().await;
    Ok(())
}
