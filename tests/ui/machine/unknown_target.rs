//! A transition target naming no state (targets are absolute paths) is an error on the target.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { add::Sum => dividng } },
            dividing: { type: final },
        },
    }
}

fn main() {}
