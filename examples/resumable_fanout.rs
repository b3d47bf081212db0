//! Arvo's fan-out/fan-in example (X3): a weighted average computed by a resumable orchestrator
//! (`orchestrator::orchestration::resumable::Resumable`, Arvo's `ArvoResumable`). On the init
//! event with N `(value, weight)` pairs, the function fans out N `mul` calls (value × weight) at
//! once; each response resumes it, and it waits until all N products are collected (fan-in), sums
//! them locally and completes with `Σ value·weight / Σ weight`.
//!
//! Prints the timeline of events, the result and how many times the resumable function ran
//! (once for the init event, once per response: N + 1). One [`Node`] runs the resumable and
//! the `mul` service on its in-process transport, which logs every event it accepts.
//!
//! Run with `cargo run --example resumable_fanout`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use orchestrator::memory::{InMemory, InMemoryConfig, Retention};
use orchestrator::orchestration::resumable::{Request, Resumable, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{ResumableBuilder, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, WorkflowStatus};
use orchestrator::transport::InProcessConfig;
use orchestrator_examples::calculator::{MulV1, Operands, Product, services};

/// One value and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Weighted {
    /// The value.
    pub value: f64,
    /// Its weight (not negative).
    #[schemars(range(min = 0))]
    pub weight: f64,
}

/// Starts a weighted average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WeightedInput {
    /// The pairs to average (at least one).
    #[schemars(length(min = 1))]
    pub pairs: Vec<Weighted>,
}

/// The weighted average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WeightedOutput {
    /// `Σ value·weight / Σ weight`.
    pub average: f64,
    /// `Σ value·weight`.
    pub weighted_sum: f64,
    /// `Σ weight`.
    pub total_weight: f64,
    /// How many products were collected.
    pub products: usize,
}

orchestrator::orchestrator_contract! {
    /// Computes a weighted average with one multiplication per pair.
    pub contract WeightedAverage {
        uri: "#/orc/calc/weighted",
        name: "calc.weighted",
        versions: {
            WeightedAverageV1 = "1.0.0" { init: WeightedInput, complete: WeightedOutput },
        },
    }
}

/// Where the workflows are stored.
type Mem = InMemory<WorkflowRecord>;

/// What the workflow remembers between its steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FanIn {
    /// How many products to wait for.
    pub expected: usize,
    /// `Σ weight`.
    pub total_weight: f64,
}

/// The client starting the workflow: its completion is addressed here.
const CLIENT: &str = "com.example.client";

/// The resumable: fan out on init, fan in on the responses (the node builds it, over its store).
fn weighted_average(store: Arc<Mem>, calls: Arc<AtomicUsize>) -> ResumableBuilder<Arc<Mem>> {
    let function = move |input: ResumableInput<WeightedAverageV1, FanIn>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if let Some(init) = input.init {
                let total_weight = init.pairs.iter().map(|p| p.weight).sum();
                let context = FanIn { expected: init.pairs.len(), total_weight };
                let requests =
                    init.pairs.iter().map(|p| Request::new::<MulV1>(Operands { a: p.value, b: p.weight }));
                return Ok(ResumableOutput::wait().context(context).requests(requests));
            }
            let ctx = input.context.clone().ok_or("the workflow has no context")?;
            if let Some(error) = input.collected.errors::<MulV1>()?.first() {
                return Err(format!("a multiplication failed: {}", error.error_message).into());
            }
            let products = input.collected::<MulV1, Product>()?;
            if products.len() < ctx.expected {
                return Ok(ResumableOutput::wait());
            }
            let weighted_sum: f64 = products.iter().map(|p| p.product).sum();
            if ctx.total_weight == 0.0 {
                return Err("the weights sum to zero".into());
            }
            Ok(ResumableOutput::complete(WeightedOutput {
                average: weighted_sum / ctx.total_weight,
                weighted_sum,
                total_weight: ctx.total_weight,
                products: products.len(),
            }))
        }
    };
    Resumable::builder(store).service::<MulV1>().version(function)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store =
        Arc::new(Mem::new(InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() }));
    let calls = Arc::new(AtomicUsize::new(0));
    let node = Node::builder(Arc::clone(&store))
        .in_process(InProcessConfig { log: true, ..InProcessConfig::default() })?
        .service(services::mul()?)
        .resumable(weighted_average(Arc::clone(&store), Arc::clone(&calls)))
        .client(CLIENT)
        .build()
        .await?;

    let pairs = vec![
        Weighted { value: 90.0, weight: 2.0 },
        Weighted { value: 75.0, weight: 1.0 },
        Weighted { value: 60.0, weight: 3.0 },
        Weighted { value: 100.0, weight: 4.0 },
    ];
    let expected =
        pairs.iter().map(|p| p.value * p.weight).sum::<f64>() / pairs.iter().map(|p| p.weight).sum::<f64>();
    let n = pairs.len();
    let init = EventFactory::<WeightedAverageV1>::new()
        .init(WeightedInput { pairs }, Event::builder().source(CLIENT))?;
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
    let invocations = calls.load(Ordering::SeqCst);
    println!("handler invocations: {invocations} (1 init + {n} responses)");

    let result: WeightedOutput = serde_json::from_value(done.data_value().clone())?;
    if (result.average - expected).abs() > 1e-9 || result.products != n {
        return Err(format!("wrong result {result:?}, expected an average of {expected}").into());
    }
    if invocations != n + 1 {
        return Err(format!("the function ran {invocations} times, expected {}", n + 1).into());
    }
    if node.status(init.subject()).await? != Some(WorkflowStatus::Done) {
        return Err("the workflow's record is not done".into());
    }
    if !node.take_dead_letters().is_empty() {
        return Err("some events were dead-lettered".into());
    }
    node.shutdown().await;
    Ok(())
}
