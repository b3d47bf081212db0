//! A compound state whose only children are history states has no state to start in.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            busy: {
                states: { back: { type: history } },
                on: { "stop" => done },
            },
            done: { type: final },
        },
    }
}

fn main() {}
