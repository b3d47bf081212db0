//! A guard is `fn(&Context, &Event) -> bool`; another signature is an error on the guard.

use orchestrator_examples::calculator::*;

fn sum_ok(sum: &Sum) -> bool {
    sum.sum > 0.0
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => { target: done, guard: sum_ok } } },
            done: { type: final },
        },
    }
}

fn main() {}
