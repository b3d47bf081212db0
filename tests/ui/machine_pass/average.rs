//! The averaging workflow of the brief: services, typed events and states, guards, actions
//! emitting requests, `after`, internal events and final states.

use orchestrator::machine::{Machine, MachineInstance};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AverageContext {
    pub values: Vec<f64>,
    pub sum: f64,
    pub average: f64,
}

fn init_context(input: &AverageInput) -> AverageContext {
    AverageContext { values: input.values.clone(), sum: 0.0, average: 0.0 }
}

fn make_output(ctx: &AverageContext) -> AverageOutput {
    AverageOutput { average: ctx.average }
}

fn request_add(ctx: &mut AverageContext, _: &AverageEvent, out: &mut AverageOutbox<'_>) {
    out.add(Operands { a: ctx.values[0], b: ctx.values[1] });
}

fn sum_ok(_: &AverageContext, event: &AverageEvent) -> bool {
    matches!(event, AverageEvent::AddSum(s) if s.sum.is_finite())
}

fn store_sum(ctx: &mut AverageContext, event: &AverageEvent, out: &mut AverageOutbox<'_>) {
    if let AverageEvent::AddSum(s) = event {
        ctx.sum = s.sum;
        out.request(DivideV1, DivideRequest { numerator: s.sum, denominator: ctx.values.len() as f64 });
    }
}

orchestrator::machine! {
    /// Averages numbers with the add and divide services.
    pub machine Average {
        version: "1.0.0",
        contract: AverageV1,
        services: { add: AddV1, divide: DivideV1 },
        context: AverageContext,
        init: init_context,
        output: make_output,
        initial: adding,
        states: {
            adding: {
                entry: [request_add],
                on: {
                    add::Sum => { target: dividing, guard: sum_ok, actions: [store_sum] },
                    add::Sum => failed,
                    add::error => failed,
                    "retry" => adding,
                },
            },
            dividing: {
                on: {
                    divide::Quotient => {
                        target: done,
                        actions: [|ctx, event, _| {
                            if let AverageEvent::DivideQuotient(q) = event {
                                ctx.average = q.quotient;
                            }
                        }],
                    },
                },
                after: { 5000 => failed },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut m, requests) = MachineInstance::<Average>::start(AverageInput { values: vec![1.0, 3.0] })?;
    assert_eq!(m.state(), AverageState::Adding);
    assert_eq!(requests[0].event_type, "com.calc.add");
    let requests = m.send(AverageEvent::AddSum(Sum { sum: 4.0 }))?;
    assert_eq!(requests[0].service, "divide");
    assert_eq!(m.state(), AverageState::Dividing);
    m.send(AverageEvent::DivideQuotient(Quotient { quotient: 2.0 }))?;
    assert_eq!(m.output(), Some(AverageOutput { average: 2.0 }));
    assert_eq!(Average::chart().len(), 5);
    assert!(Average::contracts_json()["services"]["add"].is_object());
    assert_eq!(<Average as Machine>::NAME, "Average");
    Ok(())
}
