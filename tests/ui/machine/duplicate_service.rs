//! A service name declared twice is an error on the second.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1, add: MulV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => done } },
            done: { type: final },
        },
    }
}

fn main() {}
