//! `output` must return the self contract's completion payload.

use orchestrator_examples::calculator::*;

fn make_output(_: &()) -> Sum {
    Sum { sum: 0.0 }
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: make_output,
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
