//! A transition on a payload the service's contract does not emit is an error on the payload.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Product => done } },
            done: { type: final },
        },
    }
}

fn main() {}
