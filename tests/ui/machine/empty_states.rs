//! An empty `states` block: a compound state needs a child state to start in.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            busy: { states: {}, on: { "stop" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
