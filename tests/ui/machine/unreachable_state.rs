//! A state no initial state, transition or history default leads to is an error on its key.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            orphan: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
