//! A two-parameter `init` gets `&InitMeta` as its second argument: using it as something else is
//! a type error on the closure.

use orchestrator_examples::calculator::*;

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Ctx {
    pub n: u32,
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        context: Ctx,
        init: |_, meta: &u32| Ctx { n: *meta },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
