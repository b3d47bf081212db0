//! Calculator contracts: `com.calc.add`, `com.calc.mul` (Arvo's benchmark services),
//! `com.calc.divide` (two versions) and the `arvo.orc.calc.average` workflow.

use orchestrator::prelude::*;

/// Two operands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Operands {
    /// Left operand.
    pub a: f64,
    /// Right operand.
    pub b: f64,
}

/// The result of an addition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sum {
    /// `a + b`.
    pub sum: f64,
}

/// The result of a multiplication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Product {
    /// `a * b`.
    pub product: f64,
}

orchestrator::simple_contract! {
    /// Adds two numbers: accepts `com.calc.add`, emits `evt.calc.add.success`.
    pub contract Add {
        uri: "#/calc/add",
        type: "calc.add",
        versions: {
            AddV1 = "1.0.0" { accepts: Operands, emits: Sum },
        },
    }
}

orchestrator::simple_contract! {
    /// Multiplies two numbers: accepts `com.calc.mul`, emits `evt.calc.mul.success`.
    pub contract Mul {
        uri: "#/calc/mul",
        type: "calc.mul",
        versions: {
            MulV1 = "1.0.0" { accepts: Operands, emits: Product },
        },
    }
}

/// Version 1 of a division request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DivideRequest {
    /// The dividend.
    pub numerator: f64,
    /// The divisor; must not be zero (the schema says so, and the runtime enforces it).
    #[schemars(extend("not" = { "const": 0 }))]
    pub denominator: f64,
}

/// Version 2 adds a rounding precision (0 to 12 decimals).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DivideRequestV2 {
    /// The dividend.
    pub numerator: f64,
    /// The divisor; must not be zero.
    #[schemars(extend("not" = { "const": 0 }))]
    pub denominator: f64,
    /// Decimals to round to.
    #[schemars(range(min = 0, max = 12))]
    pub precision: u8,
}

/// The quotient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Quotient {
    /// `numerator / denominator`.
    pub quotient: f64,
}

orchestrator::contract! {
    /// Divides two numbers. Version 2 rounds the result.
    pub contract Divide {
        uri: "#/calc/divide",
        type: "com.calc.divide",
        domain: "calc",
        metadata: { "owner": "calc-team" },
        versions: {
            DivideV1 = "1.0.0" {
                accepts: DivideRequest,
                emits: { "evt.calc.divide.success" => Quotient },
            },
            DivideV2 = "2.0.0" {
                accepts: DivideRequestV2,
                emits: { "evt.calc.divide.success" => Quotient },
            },
        },
    }
}

/// Starts an averaging workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageInput {
    /// The numbers to average (at least one).
    #[schemars(length(min = 1))]
    pub values: Vec<f64>,
}

/// The workflow's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageOutput {
    /// The mean of the values.
    pub average: f64,
}

orchestrator::orchestrator_contract! {
    /// Averages a list of numbers by calling the add and divide services.
    pub contract Average {
        uri: "#/orc/calc/average",
        name: "calc.average",
        versions: {
            AverageV1 = "1.0.0" { init: AverageInput, complete: AverageOutput },
        },
    }
}

/// The calculator services: [`ServiceHandler`]s serving [`Add`], [`Mul`] and [`Divide`], shared
/// by the examples, the tests and the benchmarks.
pub mod services {
    use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
    use orchestrator::violation::Violation;

    use super::*;

    /// `com.calc.add`: `a + b`.
    pub fn add() -> Result<ServiceHandler<Add>, Violation> {
        ServiceHandler::<Add>::builder()
            .version(|input: ServiceInput<AddV1>| async move {
                let Operands { a, b } = input.payload;
                Ok(Emit::new(Sum { sum: a + b }))
            })
            .build()
    }

    /// `com.calc.mul`: `a * b`.
    pub fn mul() -> Result<ServiceHandler<Mul>, Violation> {
        ServiceHandler::<Mul>::builder()
            .version(|input: ServiceInput<MulV1>| async move {
                let Operands { a, b } = input.payload;
                Ok(Emit::new(Product { product: a * b }))
            })
            .build()
    }

    /// `com.calc.divide`: version 1 divides, version 2 rounds to `precision` decimals.
    pub fn divide() -> Result<ServiceHandler<Divide>, Violation> {
        ServiceHandler::<Divide>::builder()
            .version(|input: ServiceInput<DivideV1>| async move {
                let DivideRequest { numerator, denominator } = input.payload;
                Ok(Emit::new(Quotient { quotient: numerator / denominator }))
            })
            .version(|input: ServiceInput<DivideV2>| async move {
                let DivideRequestV2 { numerator, denominator, precision } = input.payload;
                let scale = 10f64.powi(i32::from(precision));
                Ok(Emit::new(Quotient { quotient: (numerator / denominator * scale).round() / scale }))
            })
            .build()
    }
}

/// A two-step averaging workflow shared by the tests: add the first two values (`add`), divide
/// the sum by the count (`divide`), done; a service error ends in `failed`.
pub mod flows {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    /// Context of the averaging machines.
    pub struct AvgCtx {
        /// The numbers.
        pub values: Vec<f64>,
        /// The result.
        pub average: f64,
    }

    fn request_add(ctx: &mut AvgCtx, _: &AverageFlowEvent, out: &mut AverageFlowOutbox<'_>) {
        out.add(Operands { a: ctx.values[0], b: ctx.values[1] });
    }

    fn request_divide(ctx: &mut AvgCtx, event: &AverageFlowEvent, out: &mut AverageFlowOutbox<'_>) {
        if let AverageFlowEvent::AddSum(s) = event {
            out.divide(DivideRequest { numerator: s.sum, denominator: ctx.values.len() as f64 });
        }
    }

    orchestrator::machine! {
        /// add → divide → done; a service error → failed.
        pub machine AverageFlow {
            contract: AverageV1,
            services: { add: AddV1, divide: DivideV1 },
            context: AvgCtx,
            init: |input| AvgCtx { values: input.values.clone(), average: 0.0 },
            output: |ctx| AverageOutput { average: ctx.average },
            states: {
                adding: {
                    entry: [request_add],
                    on: { add::Sum => { target: dividing, actions: [request_divide] }, add::error => failed },
                },
                dividing: {
                    on: {
                        divide::Quotient => {
                            target: done,
                            actions: [|ctx, event, _| {
                                if let AverageFlowEvent::DivideQuotient(q) = event {
                                    ctx.average = q.quotient;
                                }
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
}

/// A client of the averaging workflows, for tests and benchmarks: listens on its topic (the
/// `source` of the init events it sends), counts each workflow's completions and keeps the
/// first average each reported.
#[derive(Debug, Clone)]
pub struct AverageClient {
    topic: &'static str,
    seen: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, (usize, f64)>>>,
}

impl AverageClient {
    /// A client listening on `topic`.
    pub fn new(topic: &'static str) -> Self {
        Self { topic, seen: std::sync::Arc::default() }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (usize, f64)>> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many workflows completed.
    pub fn completed(&self) -> usize {
        self.seen().len()
    }

    /// Each completed workflow's subject with how many completions it got and its average.
    pub fn counts(&self) -> std::collections::HashMap<String, (usize, f64)> {
        self.seen().clone()
    }

    /// Waits until `n` workflows have completed; panics after `within`.
    pub async fn wait_for(&self, n: usize, within: std::time::Duration) {
        let deadline = std::time::Instant::now() + within;
        while self.completed() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "only {} of {n} workflows completed within {within:?}",
                self.completed()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

impl orchestrator::handler::EventHandler for AverageClient {
    fn source(&self) -> &str {
        self.topic
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let average = event.data()["average"].as_f64().ok_or_else(|| Violation::contract("no average"))?;
        self.seen().entry(event.subject().to_owned()).or_insert((0, average)).0 += 1;
        Ok(Vec::new())
    }
}
