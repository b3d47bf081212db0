//! `version` must be the version of the self contract.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        version: "2.0.0",
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
