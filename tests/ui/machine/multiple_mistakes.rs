//! Every mistake of a declaration is reported in one compile, each on its own token.

use orchestrator_examples::calculator::*;

fn sum_ok(_: &()) -> bool {
    true
}

orchestrator::machine! {
    pub machine Average {
        version: "1.2.0",
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: {
                on: {
                    add::Sum => { target: dividing, guard: sum_ok },
                    add::Product => done,
                    mul::Product => done,
                },
                exitt: [],
            },
            busy: { initial: nope, states: { a: {}, b: {} } },
            done: { type: final, states: { x: {} } },
        },
    }
}

fn main() {
    // The fallback expansion still declares the types, so using them adds no error.
    let _ = (Average, AverageState::Adding);
}
