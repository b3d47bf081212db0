//! The context is persisted between steps: it must be `Clone` and serde-serializable.

use orchestrator_examples::calculator::*;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Ctx {
    pub n: u32,
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        context: Ctx,
        init: |_| Ctx { n: 0 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
