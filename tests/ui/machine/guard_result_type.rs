//! A fallible guard returns `Result<bool, E>`; `Option<bool>` is an error on the guard.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: {
                on: {
                    add::Sum => { target: done, guard: |_, event| matches!(event, AverageEvent::AddSum(_)).then_some(true) },
                },
            },
            done: { type: final },
        },
    }
}

fn main() {}
