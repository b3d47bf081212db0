//! A final state cannot have child states.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final, states: { inner: {} } },
        },
    }
}

fn main() {}
