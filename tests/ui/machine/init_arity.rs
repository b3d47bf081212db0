//! `init` takes the init payload and, optionally, the start's meta: a closure of three parameters
//! is an error on the extra one.

use orchestrator_examples::calculator::*;

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Ctx {
    pub n: u32,
}

orchestrator::machine! {
    pub machine Average {
        contract: AverageV1,
        context: Ctx,
        init: |_, _, extra| Ctx { n: 0 },
        output: |_| AverageOutput { average: 0.0 },
        states: {
            adding: { on: { "next" => done } },
            done: { type: final },
        },
    }
}

fn main() {}
