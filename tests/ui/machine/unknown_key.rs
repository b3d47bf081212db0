//! A misspelled key is an error, with the key it probably stands for.

use orchestrator_examples::calculator::*;

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { onn: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
