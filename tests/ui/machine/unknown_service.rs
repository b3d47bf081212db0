//! A trigger naming a service the machine does not declare is an error on the service name.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        services: { add: AddV1 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { ad::Sum => done } },
            done: { type: final },
        },
    }
}

fn main() {}
