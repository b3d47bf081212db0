//! Two sibling states with the same key: the second is an error.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            adding: { on: { "other" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
