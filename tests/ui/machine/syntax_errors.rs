//! Syntax mistakes in several values are all reported; the rest of the declaration is still checked.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => { target: done, reenter: maybe } } },
            waiting: { after: { 5 seconds => done } },
            done: { type: final },
        },
    }
}

fn main() {}
