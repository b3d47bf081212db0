//! The self contract must be an orchestrator contract (`orchestrator_contract!`).

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AddV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
