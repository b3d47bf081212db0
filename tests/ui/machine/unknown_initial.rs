//! `initial` naming no child of the state is an error on the name.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            busy: {
                initial: wroking,
                states: { idle: {}, working: {} },
                on: { "stop" => done },
            },
            done: { type: final },
        },
    }
}

fn main() {}
