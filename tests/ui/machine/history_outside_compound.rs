//! A history state must be inside a compound or parallel state, not directly in the machine.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done, "back" => back } },
            back: { type: history },
            done: { type: final },
        },
    }
}

fn main() {}
